//! The PyTorch panels (`src/lecture/pytorch/<section>.py`): every section has one (it is compiled
//! in, so a missing one fails the build), every value the section records is named on a line of
//! it, and, where PyTorch is installed, running the panels reproduces the run's deterministic
//! values. The Python comes from `CS336_PYTHON` (CI's `.ci/python-interop-env` installs torch,
//! einops and jaxtyping there), else `python3`; without torch the comparison says it skipped, and
//! with `CS336_REQUIRE_PYTHON=1` (CI) a skip is a failure.

use std::process::Command;

use cs336::lecture::SECTIONS;
use cs336_book::code_view::{PANEL_PRELUDE, panel_names, panel_names_on};

use crate::common;

const RUNNER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/lecture/pytorch/run_panels.py");

#[test]
fn every_recorded_value_is_named_in_its_sections_pytorch_panel() {
    let trace = common::fresh_trace();
    let mut missing = Vec::new();
    for def in SECTIONS {
        // The fresh run is a CPU's: a name marked `(on a GPU)` does not count for it.
        let named: Vec<&str> = def.pytorch.lines().flat_map(|l| panel_names_on(l, false)).collect();
        assert!(
            def.pytorch.lines().count() > 3,
            "{}'s PyTorch panel is next to empty",
            def.id
        );
        let section = trace.section(def.id).expect("a fresh run records every section");
        for (name, value) in &section.values {
            // A check is the Rust code's claim about values the panel already names. The panel
            // states it as an `assert` where PyTorch holds the same fact, and cannot where it
            // does not (the Rust's `empty` zeroes its memory; PyTorch's checkpointing recomputes
            // less; its FLOP counter sees no elementwise FLOPs), so a check need not be named.
            if value.kind() == Some(cs336::trace::Kind::Checked) {
                continue;
            }
            if !named.contains(&name.as_str()) {
                missing.push(format!("{}.{name}", def.id));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "these values are named on no line of their section's PyTorch panel (add `record(\"NAME\", …)` or a `# -> NAME` comment): {}",
        missing.join(", ")
    );
}

#[test]
fn a_panel_line_names_what_it_records_and_its_comment_lists() {
    assert_eq!(panel_names("x = record(\"x\", torch.ones(2))"), ["x"]);
    assert_eq!(
        panel_names("a, b = record(\"a\", 1), record(\"b\", 2)  # -> c (random), d"),
        ["a", "b", "c", "d"]
    );
    assert_eq!(panel_names("y = x @ w  # -> y (random weights)"), ["y"]);
    assert!(panel_names("# a comment with an arrow -> but no names").is_empty());
}

#[test]
fn a_name_marked_for_one_kind_of_device_is_shown_only_on_that_kind() {
    let line = "mfu = a / b  # -> mfu (on a GPU), mfu_n, peak (on a CPU), spread (random)";
    assert_eq!(panel_names(line), ["mfu", "mfu_n", "peak", "spread"]);
    assert_eq!(panel_names_on(line, true), ["mfu", "mfu_n", "spread"]);
    assert_eq!(panel_names_on(line, false), ["mfu_n", "peak", "spread"]);
    // A record() call is what the line makes everywhere.
    assert_eq!(panel_names_on("record(\"x\", 1)  # -> y (on a GPU)", false), ["x"]);
}

/// A panel's Python that gives nothing (or something else) on a CPU must not stand beside a CPU
/// run's value: the FLOPs section's datasheet lines are marked for a GPU.
#[test]
fn a_cpu_run_shows_no_measured_peak_beside_a_datasheet_line() {
    let def = SECTIONS
        .iter()
        .find(|d| d.id == "tensor_operations_flops")
        .expect("the FLOPs section");
    let datasheet: Vec<&str> = def
        .pytorch
        .lines()
        .filter(|l| l.contains("datasheet[") || l.contains("datasheet.get("))
        .collect();
    assert!(!datasheet.is_empty(), "the panel reads the datasheet's figures");
    let cpu = common::fresh_trace()
        .section(def.id)
        .expect("a fresh run records every section");
    for line in datasheet {
        let shown: Vec<&str> = panel_names_on(line, false)
            .into_iter()
            .filter(|n| cpu.values.contains_key(*n))
            .collect();
        assert!(shown.is_empty(), "a CPU run's {shown:?} would stand beside `{line}`");
    }
    assert!(PANEL_PRELUDE.starts_with("def record(name, value): return value"));
}

#[test]
fn the_pytorch_panels_reproduce_the_runs_deterministic_values() {
    let Some(python) = common::python_with("torch, einops, jaxtyping", "PyTorch panel comparison") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("fresh.json");
    let text = serde_json::to_string(common::fresh_trace()).expect("a trace serializes");
    std::fs::write(&path, text).expect("write the fresh trace");
    let out = Command::new(&python)
        .arg(RUNNER)
        .arg("--trace")
        .arg(&path)
        // No GPU is used here even where torch finds one: the run compared is the CPU's.
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the panels differ from the run:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or("");
    let counts: Vec<usize> = last.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    let [compared, panels] = counts[..] else {
        panic!("the runner's last line is not `compared N values in M panels`: {last}")
    };
    assert_eq!(panels, SECTIONS.len(), "every section's panel runs");
    // Each panel compares what it can; a panel that compared nothing has lost its checks.
    for line in stdout.lines().filter(|l| l.contains("values compared")) {
        assert!(!line.contains(": 0 values"), "a panel compares nothing: {line}");
    }
    common::terminal_note(&format!(
        "PyTorch panels: {compared} values compared with this run in {panels} panels"
    ));
}
