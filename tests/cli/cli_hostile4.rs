//! Hostile input, round 4: a benchmark that would run for many minutes says so and asks for
//! `--yes`, as a what-if does; givens whose products a section cannot record are refused before
//! anything runs, naming the given and the limit.

use std::time::Duration;

use crate::cli_hostile3::bench;
use crate::common::process::{assert_clean_failure, run_lecture, text};
use cs336::lecture::what_if;

const QUICK: Duration = Duration::from_secs(30);

/// Twenty million layers of width one: a few FLOPs, but about ten thousand million tensor ops,
/// many minutes on any machine; refused at once, with the estimate and how to insist. `--yes` is
/// the what-ifs' flag, and is taken (shown here on sizes refused for another reason, so that
/// nothing runs).
#[test]
fn a_train_step_estimated_past_the_limit_needs_yes() {
    let o = bench(
        &["train-step", "--dim", "1", "--layers", "20000000", "--batch", "1"],
        None,
    );
    let err = assert_clean_failure(&o, &["would take about", "tensor ops", "past the 180 s", "--yes"]);
    let (out, _) = text(&o);
    assert!(out.is_empty(), "nothing ran: {out}{err}");
    let o = bench(&["train-step", "--layers", "0", "--yes"], None);
    assert_clean_failure(&o, &["--layers must be at least 1"]);
}

/// Givens whose products the section cannot record (`h100_bytes=1` made 0.5 parameters,
/// `mfu=1e-20` a fractional FLOP count) were refused only when the finished trace was checked
/// before it was written. They are outside the given's range now, and refused before anything
/// runs, with the given and its range named.
#[test]
fn a_given_its_section_cannot_compute_with_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    for (set, range) in [
        ("motivating_questions.h100_bytes=1", "a multiple of 16"),
        ("motivating_questions.h100_bytes=24", "a multiple of 16"),
        ("motivating_questions.mfu=1e-20", "a fraction from 0.001 to 1"),
        ("motivating_questions.mfu=0.0009", "a fraction from 0.001 to 1"),
        // Bytes of a parameter that no float format has.
        (
            "motivating_questions.param_grad_bytes=3",
            "the bytes of a float format: 1, 2, 4 or 8",
        ),
    ] {
        let o = run_lecture(&["--trace-dir", d, "--device", "cpu", "--set", set], None, QUICK);
        let err = assert_clean_failure(&o, &[set, "is not", range, "takes"]);
        assert!(!err.contains("was not written"), "refused before a run: {err}");
        let (out, _) = text(&o);
        assert!(out.is_empty(), "nothing estimated or run: {out}");
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("list").count(),
        0,
        "nothing written"
    );
    // The ends of the ranges are taken.
    for set in ["motivating_questions.h100_bytes=16", "motivating_questions.mfu=0.001"] {
        what_if::parse(&[set.to_string()]).unwrap_or_else(|e| panic!("{set}: {e}"));
    }
}

/// A range narrowed to what its section can compute with still holds the lecture's own value
/// (the narrowed givens' defaults do not depend on the device).
#[test]
fn every_default_lies_in_its_given_s_range() {
    for (section, given) in cs336::lecture::givens::all() {
        let typed = what_if::typed(&(given.default)(&cs336::device::Device::Cpu));
        assert!(
            given.read(&typed).is_ok(),
            "{}.{} = {typed} is not {}",
            section.id,
            given.name,
            given.range_words()
        );
    }
}

/// What a reader typed is echoed cut short, with its length: a 100 KB name, step or path in
/// `lecture get` gave a message as long.
#[test]
fn get_echoes_a_long_name_or_path_cut_short() {
    let trace = std::path::Path::new(crate::common::ROOT).join("trace/lecture_02/nvidia-h200.json");
    let t = trace.to_str().expect("utf-8");
    let long = "x".repeat(100_000);
    for key in [
        format!("tensors_memory.{long}"),
        format!("{long}.bytes"),
        long.clone(),
        format!("tensors_memory.gpt3_ffn_bytes.{long}"),
    ] {
        let o = run_lecture(&["get", "--trace", t, &key], None, QUICK);
        let err = assert_clean_failure(&o, &["(100"]);
        assert!(err.len() < 2_000, "{} characters: {}…", err.len(), &err[..300]);
    }
    // A path of 50,000 characters: its start and its end (the file's name) are kept.
    let path = format!("/nonexistent/{}/cpu-end.json", "d/".repeat(25_000));
    let o = run_lecture(&["get", "--trace", &path, "tensors_memory.bytes"], None, QUICK);
    let err = assert_clean_failure(&o, &["/nonexistent/", "cpu-end.json", "characters)"]);
    assert!(err.len() < 2_000, "{} characters", err.len());
}
