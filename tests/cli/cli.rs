//! The `lecture` binary as a user meets it: listing, running one section into a trace folder,
//! `get`, and clear non-zero exits (never a panic) on bad input.

use std::path::{Path, PathBuf};
use std::process::Output;

fn lecture(args: &[&str]) -> Output {
    crate::common::process::at_test_budget(env!("CARGO_BIN_EXE_lecture"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run lecture")
}

/// The trace file this machine's CPU writes under `dir`.
fn cpu_trace(dir: &Path) -> PathBuf {
    dir.join("lecture_02").join(format!(
        "{}.json",
        cs336::device::cpu::trace_name().expect("this CPU has a trace name")
    ))
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn assert_clean_failure(o: &Output, expect: &[&str]) {
    let (out, err) = text(o);
    assert!(!o.status.success(), "should fail: {out}{err}");
    assert!(!err.contains("panicked"), "a panic instead of an error: {err}");
    for e in expect {
        assert!(err.contains(e), "stderr lacks `{e}`: {err}");
    }
}

#[test]
fn list_shows_sections_in_lecture_order() {
    let o = lecture(&["--list"]);
    assert!(o.status.success());
    let (out, _) = text(&o);
    let ids: Vec<&str> = out.lines().filter_map(|l| l.split_whitespace().nth(1)).collect();
    let expected: Vec<&str> = cs336::lecture::SECTIONS.iter().map(|s| s.id).collect();
    assert_eq!(ids, expected);
}

#[test]
fn one_section_merges_into_the_trace_and_get_reads_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8 path");
    let o = lecture(&["--trace-dir", d, "--no-book", "--section", "tensors_memory"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let path = cpu_trace(dir.path());
    assert!(out.contains(&path.display().to_string()), "says where it wrote: {out}");

    let o = lecture(&["--trace-dir", d, "--no-book", "--section", "tensor_storage"]);
    assert!(o.status.success());
    let t = cs336::trace::load(&path).expect("load");
    let ids: Vec<&str> = t.sections.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        vec!["tensors_memory", "tensor_storage"],
        "merged, in lecture order"
    );

    let o = lecture(&["--trace-dir", d, "get", "tensors_memory.gpt3_ffn_bytes"]);
    assert_eq!(text(&o).0.trim(), "2415919104");
    let o = lecture(&["--trace-dir", d, "get", "tensors_memory.fp8_e5m2_info.max"]);
    assert_eq!(text(&o).0.trim(), "57344.0");
    let o = lecture(&["--trace-dir", d, "get", "tensor_storage.index", "--record"]);
    let rec: serde_json::Value = serde_json::from_str(&text(&o).0).expect("JSON");
    assert_eq!((rec["value"].as_u64(), rec["unit"].as_str()), (Some(6), Some("count")));

    assert_clean_failure(
        &lecture(&["--trace-dir", d, "get", "tensors_memory.nope"]),
        &["no value `nope`", "gpt3_ffn_bytes"],
    );
    assert_clean_failure(&lecture(&["--trace-dir", d, "get", "nope.x"]), &["no section `nope`"]);
    assert_clean_failure(&lecture(&["--trace-dir", d, "get", "justone"]), &["SECTION.NAME"]);
}

#[test]
fn a_partial_run_rewrites_only_its_own_sections_provenance() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8 path");
    let first = lecture(&[
        "--trace-dir",
        d,
        "--no-book",
        "--section",
        "tensors_memory",
        "--section",
        "tensor_storage",
    ]);
    assert!(first.status.success(), "{:?}", text(&first));
    let path = cpu_trace(dir.path());
    let before = cs336::trace::load(&path).expect("load");
    // Times are kept to the second: make the second run's time differ.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let second = lecture(&[
        "--trace-dir",
        d,
        "--no-book",
        "--section",
        "tensor_storage",
        "--seed",
        "7",
    ]);
    assert!(second.status.success(), "{:?}", text(&second));
    let after = cs336::trace::load(&path).expect("load");
    let run = |t: &cs336::trace::Trace, id: &str| t.section(id).expect("section").run.clone();
    // The section that was not re-run keeps its seed, commit, time and command line.
    assert_eq!(run(&after, "tensors_memory"), run(&before, "tensors_memory"));
    assert_eq!(run(&after, "tensors_memory").seed, 0);
    let rerun = run(&after, "tensor_storage");
    assert_eq!(rerun.seed, 7);
    assert!(rerun.command_line.iter().any(|a| a == "7"), "{:?}", rerun.command_line);
    assert_ne!(rerun.recorded_at, run(&before, "tensor_storage").recorded_at);
    // The trace's time is its newest section's.
    assert_eq!(after.created_at(), Some(rerun.recorded_at.as_str()));
    assert_eq!(
        before.created_at(),
        Some(run(&before, "tensors_memory").recorded_at.as_str())
    );
}

#[test]
fn an_older_trace_stops_a_partial_run_before_it_starts_and_a_full_run_replaces_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8 path");
    let path = cpu_trace(dir.path());
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let v1 =
        r#"{"schema_version": 1, "lecture": "lecture_02", "provenance": {"device": {"kind": "cpu"}}, "sections": []}"#;
    std::fs::write(&path, v1).expect("write");
    let o = lecture(&["--trace-dir", d, "--no-book", "--section", "tensor_storage"]);
    let name = path.file_name().expect("a file").to_string_lossy().into_owned();
    assert_clean_failure(
        &o,
        &[
            &name,
            "schema version 1 is an older format",
            "version 2",
            "cargo run --release --bin lecture",
            "GPU",
        ],
    );
    assert!(!text(&o).0.contains("Running"), "no section ran: {}", text(&o).0);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), v1, "untouched");
    // `get` refuses it the same way.
    assert_clean_failure(
        &lecture(&["--trace-dir", d, "get", "tensor_storage.index"]),
        &["schema version 1"],
    );

    let o = lecture(&["--trace-dir", d, "--no-book"]);
    assert!(o.status.success(), "a full run replaces it: {:?}", text(&o));
    let t = cs336::trace::load(&path).expect("a current trace");
    assert_eq!(t.schema_version, cs336::trace::SCHEMA_VERSION);
    assert_eq!(t.sections.len(), cs336::lecture::SECTIONS.len());
}

#[test]
fn get_without_this_devices_trace_names_the_traces_there_are() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8 path");
    std::fs::create_dir_all(dir.path().join("lecture_02")).expect("mkdir");
    std::fs::write(dir.path().join("lecture_02/nvidia-h200.json"), "{}").expect("write");
    assert_clean_failure(
        &lecture(&["--trace-dir", d, "get", "tensors_memory.bytes"]),
        &[
            "this device has no trace",
            &cs336::device::cpu::trace_name().expect("this CPU has a trace name"),
            "nvidia-h200.json",
            "--trace FILE",
        ],
    );
}

#[test]
fn unknown_section_fails_without_touching_the_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8 path");
    assert_clean_failure(
        &lecture(&["--trace-dir", d, "--no-book", "--section", "no_such_section"]),
        &["unknown section `no_such_section`", "--list"],
    );
    assert!(!dir.path().join("lecture_02").exists(), "nothing written");
}

#[test]
fn corrupt_trace_gives_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("bad.json");
    std::fs::write(
        &file,
        "{\"schema_version\": 1, \"lecture\": \"lecture_02\", \"provenance\": ",
    )
    .expect("write");
    let f = file.to_str().expect("utf-8 path");
    assert_clean_failure(
        &lecture(&["get", "tensors_memory.bytes", "--trace", f]),
        &["bad.json", "not valid JSON"],
    );
    // A partial run must merge into a valid trace: a corrupt one stops it, untouched.
    let trace_dir = dir.path().join("t");
    let target = cpu_trace(&trace_dir);
    std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
    std::fs::write(&target, "not json").expect("write");
    let o = lecture(&[
        "--trace-dir",
        trace_dir.to_str().expect("utf-8"),
        "--no-book",
        "--section",
        "tensor_storage",
    ]);
    let name = target.file_name().expect("a file").to_string_lossy().into_owned();
    assert_clean_failure(&o, &[&name, "not valid JSON"]);
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "not json");
}

#[test]
fn forcing_cuda_without_a_gpu_is_a_clear_error() {
    if cs336::device::probe::probe_libraries() == cs336::device::probe::CudaStatus::LibrariesPresent {
        eprintln!("skipped: CUDA libraries are present on this machine");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let o = lecture(&[
        "--trace-dir",
        dir.path().to_str().expect("utf-8"),
        "--no-book",
        "--device",
        "cuda",
    ]);
    assert_clean_failure(&o, &["--device cuda", "not found"]);
}

/// Kills `lecture` at many points during a run and checks the trace file is always a complete
/// trace: the old one or the new one, never a mix or a fragment. The run is of every section but
/// the slow ones (`quick_section_args`): as large a trace to write, in a fraction of the time.
#[test]
fn killing_a_run_never_damages_the_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8 path");
    let path = cpu_trace(dir.path());
    fn args<'a>(d: &'a str, seed: &'a str) -> Vec<&'a str> {
        let mut a = vec!["--trace-dir", d, "--no-book", "--seed", seed];
        a.extend(crate::common::process::quick_section_args());
        a
    }
    let run = |seed: &str| lecture(&args(d, seed));
    let first = run("1");
    assert!(first.status.success(), "{:?}", text(&first));
    let original = std::fs::read(&path).expect("read");
    let before = cs336::trace::load(&path).expect("the first run's trace");

    // Time a run, then kill runs at points spread across that time.
    let start = std::time::Instant::now();
    assert!(run("1").status.success());
    let full = start.elapsed();
    std::fs::write(&path, &original).expect("restore");
    let mut killed_mid_run = 0;
    for i in 0..12u32 {
        let seed = (100 + i).to_string();
        let mut child = crate::common::process::at_test_budget(env!("CARGO_BIN_EXE_lecture"))
            .args(args(d, &seed))
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(full.mul_f64(i as f64 / 12.0));
        let finished = child.try_wait().expect("wait").is_some();
        child.kill().ok();
        child.wait().expect("reap");
        killed_mid_run += usize::from(!finished);
        let t = cs336::trace::load(&path).unwrap_or_else(|e| panic!("damaged after kill {i}: {e}"));
        let bytes = std::fs::read(&path).expect("read");
        // The new trace is the old one with every section this run took measured again.
        let all_new =
            t.sections.len() == before.sections.len() && t.sections.iter().all(|s| s.run.seed == 100 + u64::from(i));
        assert!(bytes == original || all_new, "a mix of runs after kill {i}");
        std::fs::write(&path, &original).expect("restore");
    }
    assert!(
        killed_mid_run > 0,
        "no kill landed during a run; the test proved nothing"
    );
    let partials = || {
        std::fs::read_dir(path.parent().expect("parent"))
            .expect("list")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".partial"))
            .count()
    };
    // A kill between creating and renaming the temporary file can leave it behind; it is never
    // mistaken for the trace (a different name), and the next write removes it.
    eprintln!("temporary files left by kills: {}", partials());
    assert!(Path::new(&path).exists());
    assert!(
        lecture(&["--trace-dir", d, "--no-book", "--section", "tensors_memory"])
            .status
            .success()
    );
    assert_eq!(partials(), 0, "the next write removed what the kills left");
}

/// Runs `lecture` with its stdout a pipe whose reader is gone before it writes a line (what
/// `lecture … | head -1` does to it after the first line).
fn with_closed_stdout(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    crate::common::process::at_test_budget(env!("CARGO_BIN_EXE_lecture"))
        .args(args)
        .stdout(writer)
        .output()
        .expect("run lecture")
}

#[test]
fn a_closed_stdout_ends_quietly_and_the_trace_is_written_all_the_same() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8 path");
    let o = with_closed_stdout(&["--trace-dir", d, "--no-book", "--section", "motivating_questions"]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "a reader that stopped reading is no failure: {err}");
    assert!(err.is_empty(), "nothing to say: {err}");
    let trace = cs336::trace::load(&cpu_trace(dir.path())).expect("the trace was written");
    assert!(trace.section("motivating_questions").is_some());
    for args in [
        vec!["--list"],
        vec!["--trace-dir", d, "get", "motivating_questions.mfu"],
        vec!["trace-name"],
    ] {
        let o = with_closed_stdout(&args);
        let (_, err) = text(&o);
        assert!(o.status.success() && err.is_empty(), "{args:?}: {err}");
    }
}

#[test]
fn a_full_stdout_is_reported_after_the_work_is_done() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipped: no /dev/full here");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8 path");
    let o = crate::common::process::at_test_budget(env!("CARGO_BIN_EXE_lecture"))
        .args(["--trace-dir", d, "--no-book", "--section", "motivating_questions"])
        .stdout(full)
        .output()
        .expect("run lecture");
    assert_clean_failure(
        &o,
        &["could not write to standard output", "trace it writes is written"],
    );
    let trace = cs336::trace::load(&cpu_trace(dir.path())).expect("the trace was written");
    assert!(trace.section("motivating_questions").is_some());
}

#[test]
fn escape_sequences_in_what_is_echoed_are_shown_not_obeyed() {
    let o = lecture(&["--section", "x\u{1b}[2Jy\u{1b}]0;title\u{7}\u{202e}"]);
    assert_clean_failure(&o, &["unknown section", "x\\u{1b}[2Jy\\u{1b}]0;title\\u{7}\\u{202e}"]);
    let (_, err) = text(&o);
    assert!(
        !err.contains('\u{1b}') && !err.contains('\u{7}') && !err.contains('\u{202e}'),
        "{err:?}"
    );
}

#[test]
fn a_newer_trace_stops_a_full_run_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8 path");
    let path = cpu_trace(dir.path());
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let newer = format!(
        r#"{{"schema_version": {}, "lecture": "lecture_02", "sections": []}}"#,
        cs336::trace::SCHEMA_VERSION + 1
    );
    std::fs::write(&path, &newer).expect("write");
    for args in [
        vec!["--trace-dir", d, "--no-book"],
        vec!["--trace-dir", d, "--no-book", "--section", "tensor_storage"],
    ] {
        let o = lecture(&args);
        assert_clean_failure(&o, &["newer than this build knows"]);
        assert!(!text(&o).0.contains("Running"), "no section ran: {}", text(&o).0);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), newer, "untouched");
    }
}

#[test]
fn flags_a_command_would_ignore_are_refused() {
    for (args, expect) in [
        (vec!["--list", "get", "a.b"], "`--list` lists the sections"),
        (
            vec!["--list", "--section", "tensors_memory"],
            "`--list` lists the sections",
        ),
        (
            vec!["--section", "tensors_memory", "--section", "tensors_memory"],
            "`--section tensors_memory` is given twice",
        ),
        (
            vec!["--device", "cuda", "book"],
            "`book` runs no section, so --device would do nothing",
        ),
        (
            vec!["--seed", "3", "get", "a.b"],
            "`get` runs no section, so --seed would do nothing",
        ),
        (
            vec!["--no-book", "trace-name"],
            "`trace-name` runs no section, so --no-book",
        ),
    ] {
        assert_clean_failure(&lecture(&args), &[expect]);
    }
}

#[cfg(unix)]
#[test]
fn a_trace_dir_that_is_not_utf8_is_written_to() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let odd = dir.path().join(std::ffi::OsStr::from_bytes(b"odd\xffname"));
    let o = crate::common::process::at_test_budget(env!("CARGO_BIN_EXE_lecture"))
        .arg("--trace-dir")
        .arg(&odd)
        .args(["--no-book", "--section", "motivating_questions"])
        .output()
        .expect("run lecture");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let trace = cs336::trace::load(&cpu_trace(&odd)).expect("the trace was written");
    assert!(trace.section("motivating_questions").is_some());
}
