//! The `lecture` binary as a separate process: runs with a time limit (a hang is a failure, not a
//! stuck test), and its output as text.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `lecture` with `args`; the book, when built, goes to `html` (mdbook's own override of
/// `build-dir`), never into the repository.
pub fn lecture_cmd(args: &[&str], html: Option<&Path>) -> Command {
    let mut cmd = at_test_budget(env!("CARGO_BIN_EXE_lecture"));
    cmd.args(args).env("NO_COLOR", "1");
    // The tests run lectures side by side, so each would find the machine busy and measure its
    // sections again (`lecture` retries a disturbed section): no retries unless a test asks.
    if std::env::var_os("CS336_DISTURBANCE_RETRIES").is_none() {
        cmd.env("CS336_DISTURBANCE_RETRIES", "0");
    }
    if let Some(dir) = html {
        cmd.env("MDBOOK_BUILD__BUILD_DIR", dir);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// One of our binaries at the tests' budget (`CS336_BUDGET=test`: one timed call each, no
/// warm-up): a test asserts what a run records, never how fast it was. A test that sets the
/// variable itself keeps its own value.
pub fn at_test_budget(exe: &str) -> Command {
    let mut cmd = Command::new(exe);
    with_test_budget(&mut cmd);
    cmd
}

/// `cmd` (a binary of ours, or a shell that execs one) at the tests' budget.
pub fn with_test_budget(cmd: &mut Command) {
    if std::env::var_os(cs336::timing::budget::BUDGET_VAR).is_none() {
        cmd.env(cs336::timing::budget::BUDGET_VAR, "test");
    }
}

/// The sections that take seconds even at the tests' budget: their sweeps, networks and
/// schedules compute what the trace records, which no budget shortens.
pub const SLOW_SECTIONS: &[&str] = &[
    "tensor_operations_flops",
    "arithmetic_intensity",
    "gradients_flops",
    "gradient_accumulation",
    "checkpoint_schedule",
];

/// `--section ID` for every section but the slow ones: a run of most of the lecture, with a
/// trace as large, in a fraction of a second. For the tests of what a run does (kills, races),
/// not of what one section records.
pub fn quick_section_args() -> Vec<&'static str> {
    cs336::lecture::SECTIONS
        .iter()
        .filter(|s| !SLOW_SECTIONS.contains(&s.id))
        .flat_map(|s| ["--section", s.id])
        .collect()
}

/// Waits for `child` at most `limit`; kills it and panics when it takes longer.
pub fn finish(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    loop {
        match child.try_wait().expect("wait") {
            Some(_) => return child.wait_with_output().expect("output"),
            None if start.elapsed() > limit => {
                child.kill().ok();
                let out = child.wait_with_output().expect("output");
                panic!(
                    "`{what}` still ran after {limit:?} (killed): {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Runs `lecture` to the end, at most `limit`.
pub fn run_lecture(args: &[&str], html: Option<&Path>, limit: Duration) -> Output {
    let child = lecture_cmd(args, html).spawn().expect("spawn lecture");
    finish(child, limit, &args.join(" "))
}

pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A failure with a message (never a panic or an abort) whose stderr holds every `expect`.
pub fn assert_clean_failure(o: &Output, expect: &[&str]) -> String {
    let (out, err) = text(o);
    assert!(!o.status.success(), "should fail: {out}{err}");
    assert_eq!(o.status.code(), Some(1), "an error exit, not a crash: {out}{err}");
    assert!(!err.contains("panicked"), "a panic instead of an error: {err}");
    for e in expect {
        assert!(err.contains(e), "stderr lacks `{e}`: {err}");
    }
    err
}

pub fn assert_success(o: &Output) -> String {
    let (out, err) = text(o);
    assert!(o.status.success(), "should succeed: {out}{err}");
    out
}
