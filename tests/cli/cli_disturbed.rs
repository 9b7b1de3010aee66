//! A run beside busy loops knows it was disturbed: the section's timings are marked in the trace,
//! `lecture` ends with the warning and the command to run again, and a page quoting them says so.
//! No timing threshold is asserted: busy loops on every core take about half of the CPU time from
//! the run, far above the rule's quarter.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::Workspace;
use crate::common::process::{finish, lecture_cmd, text};

/// Child processes spinning for as long as this lives: stopped when it drops, on a failed
/// assertion too.
struct BusyLoops(Vec<Child>);

impl BusyLoops {
    fn start(n: usize) -> BusyLoops {
        BusyLoops(
            (0..n)
                .map(|_| {
                    Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .expect("a busy loop starts")
                })
                .collect(),
        )
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for child in &mut self.0 {
            child.kill().ok();
            child.wait().ok();
        }
    }
}

#[test]
fn a_section_timed_beside_busy_loops_is_marked_and_its_page_says_so() {
    let ws = Workspace::new();
    let dir = ws.dir.path().join("trace");
    let d = dir.to_str().expect("utf-8 path");
    // One loop per core, at least two: on the two-vCPU machine of the issue, two.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2);
    let o = {
        let _busy = BusyLoops::start(cores);
        let mut cmd = lecture_cmd(
            &[
                "--device",
                "cpu",
                "--trace-dir",
                d,
                "--no-book",
                "--section",
                "tensor_operations_flops",
            ],
            None,
        );
        // No retries: the loops would still be running, and the test would only take longer.
        cmd.env("CS336_DISTURBANCE_RETRIES", "0");
        finish(
            cmd.spawn().expect("spawn lecture"),
            Duration::from_secs(600),
            "lecture beside busy loops",
        )
    };
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");

    let path = ws.trace_dir().join(format!(
        "{}.json",
        cs336::device::cpu::trace_name().expect("this CPU has a trace name")
    ));
    let trace = cs336::trace::load(&path).expect("the trace was written");
    let section = trace.section("tensor_operations_flops").expect("the section");
    let mark = section.disturbed.as_ref().expect("the section is marked disturbed");
    assert!(mark.why.contains("other processes used"), "{mark:?}");
    assert_eq!(mark.tries, 1, "measured once, as CS336_DISTURBANCE_RETRIES=0 says");
    assert!(mark.others.is_some_and(|x| (0.0..=1.0).contains(&x)), "{mark:?}");

    assert!(
        err.contains("1 section(s) were measured while the machine was busy")
            && err.contains("cargo run --release --bin lecture -- --section tensor_operations_flops"),
        "lecture ends with the warning: {err}"
    );

    // The page quoting the section's speed, built from that trace, says so at the top.
    let html = ws
        .build_chapter(
            &path,
            "Float32 ran at {{value tensor_operations_flops.actual_flop_per_sec}}.\n\n{{provenance}}\n",
        )
        .expect("the page builds");
    let line = html
        .find(
            "Measured while the machine was busy</strong> (<code>tensor_operations_flops</code>: other processes used",
        )
        .expect("the page says its timings were measured on a busy machine");
    assert!(line < html.find("Float32 ran at").expect("the page's text"), "{html}");
    assert!(html.contains("timings may be low"), "{html}");
}
