//! The trace file: round trip, atomic replacement, and clear refusals of bad files.

mod common;

use std::path::Path;

use cs336::Error;
use cs336::trace::{self, Trace};

fn sample() -> Trace {
    common::fresh_trace().clone()
}

fn load_err(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write test file");
    match trace::load(&path) {
        Ok(_) => panic!("{name} should be refused"),
        Err(e @ Error::Trace { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(name), "message names the file: {msg}");
            msg
        }
        Err(other) => panic!("expected a trace error, got {other:?}"),
    }
}

#[test]
fn round_trip_is_lossless() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("lecture_02").join("cpu.json");
    let t = sample();
    trace::save(&path, &t).expect("save");
    let back = trace::load(&path).expect("load");
    // Compare section by section so a failure names the place rather than dumping two traces.
    assert_eq!(back.provenance, t.provenance);
    for (a, b) in back.sections.iter().zip(&t.sections) {
        for (name, v) in &b.values {
            assert_eq!(a.values.get(name), Some(v), "{}.{name} changed in the round trip", b.id);
        }
    }
    assert!(back == t, "round trip changed the trace");
    // Values survive exactly, including awkward floats.
    assert_eq!(
        back.value("tensors_memory", "bf16_1e_8").map(|v| &v.value),
        t.value("tensors_memory", "bf16_1e_8").map(|v| &v.value)
    );
}

#[test]
fn non_finite_numbers_are_recorded_as_strings_and_read_back() {
    for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.5] {
        let j = trace::json_number(x);
        let back = trace::number_from_json(&j).expect("a number");
        assert!(back == x || (x.is_nan() && back.is_nan()), "{x} -> {j} -> {back}");
    }
    assert_eq!(trace::json_number(f64::NAN), serde_json::json!("NaN"));
}

#[test]
fn atomic_write_replaces_whole_files_and_leaves_no_temporaries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cpu.json");
    let mut t = sample();
    trace::save(&path, &t).expect("first save");
    t.sections[0].run.seed = 1234;
    trace::save(&path, &t).expect("second save");
    assert_eq!(trace::load(&path).expect("load").sections[0].run.seed, 1234);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["cpu.json".to_string()], "no temporary files left behind");
}

#[test]
fn a_failed_write_leaves_the_previous_file_intact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cpu.json");
    let t = sample();
    trace::save(&path, &t).expect("save");
    let before = std::fs::read(&path).expect("read");
    // Renaming a file over a non-empty directory fails: the target here is a directory.
    let blocked = dir.path().join("blocked.json");
    std::fs::create_dir_all(blocked.join("inside")).expect("mkdir");
    assert!(trace::save(&blocked, &t).is_err());
    assert_eq!(std::fs::read(&path).expect("read"), before);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "temporary file removed after the failure");
}

#[test]
fn malformed_json_is_refused_with_the_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    let msg = load_err(dir.path(), "broken.json", "{\"schema_version\": 1, \"lecture\": ");
    assert!(msg.contains("not valid JSON"), "{msg}");
    assert!(msg.contains("line 1"), "{msg}");
}

#[test]
fn unknown_or_missing_schema_version_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut v = serde_json::to_value(sample()).expect("to json");
    v["schema_version"] = serde_json::json!(99);
    let msg = load_err(dir.path(), "future.json", &v.to_string());
    assert!(
        msg.contains("schema version 99") && msg.contains("cargo run --release --bin lecture"),
        "{msg}"
    );
    let msg = load_err(dir.path(), "other.json", "{\"hello\": 1}");
    assert!(msg.contains("schema_version"), "{msg}");
}

#[test]
fn a_trace_of_the_previous_schema_is_refused_with_the_command_that_rewrites_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut v = serde_json::to_value(sample()).expect("to json");
    v["schema_version"] = serde_json::json!(1);
    let msg = load_err(dir.path(), "old-cpu.json", &v.to_string());
    assert!(
        msg.contains("schema version 1 is an older format (this build reads version 2)")
            && msg.contains("regenerate it with `cargo run --release --bin lecture`")
            && msg.contains("GPU"),
        "{msg}"
    );
    v["provenance"]["device"]["kind"] = serde_json::json!("cuda");
    v["provenance"]["device"]["name"] = serde_json::json!("NVIDIA H200");
    let msg = load_err(dir.path(), "old-gpu.json", &v.to_string());
    assert!(
        msg.contains("a GPU trace (NVIDIA H200): regenerate it on a machine with that GPU")
            && msg.contains("--device cuda"),
        "{msg}"
    );
}

#[test]
fn steps_must_list_every_state_once_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = serde_json::to_value(sample()).expect("to json");
    let at = base["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .position(|s| s["id"] == "gradients_flops")
        .expect("gradients_flops");
    let steps = |v: &mut serde_json::Value| -> Vec<serde_json::Value> {
        v["sections"][at]["steps"].as_array().expect("steps").clone()
    };
    let with_steps = |edit: &dyn Fn(&mut Vec<serde_json::Value>)| {
        let mut v = base.clone();
        let mut s = steps(&mut v);
        edit(&mut s);
        v["sections"][at]["steps"] = serde_json::Value::Array(s);
        v.to_string()
    };
    let first = |s: &Vec<serde_json::Value>| s.iter().position(|x| x[0] == "num_backward_flops").expect("a step");
    let msg = load_err(
        dir.path(),
        "dropped.json",
        &with_steps(&|s| {
            let i = first(s);
            s.remove(i);
        }),
    );
    assert!(
        msg.contains("sections[") && msg.contains("gradients_flops") && msg.contains("num_backward_flops"),
        "{msg}"
    );
    let msg = load_err(
        dir.path(),
        "swapped.json",
        &with_steps(&|s| {
            let i = first(s);
            s.swap(i, i + 1);
        }),
    );
    assert!(
        msg.contains("state 1 of `num_backward_flops`, expected state 0"),
        "{msg}"
    );
    let msg = load_err(
        dir.path(),
        "unknown.json",
        &with_steps(&|s| s.push(serde_json::json!(["nope", 0]))),
    );
    assert!(msg.contains("names `nope`, which the section does not record"), "{msg}");
    let msg = load_err(
        dir.path(),
        "beyond.json",
        &with_steps(&|s| s.push(serde_json::json!(["num_backward_flops", 5]))),
    );
    assert!(msg.contains("state 5 of `num_backward_flops`"), "{msg}");
}

#[test]
fn missing_and_unknown_fields_are_named_with_their_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut v = serde_json::to_value(sample()).expect("to json");
    v["sections"][2].as_object_mut().expect("object").remove("source_hash");
    let msg = load_err(dir.path(), "missing.json", &v.to_string());
    assert!(msg.contains("sections[2]") && msg.contains("source_hash"), "{msg}");

    let mut v = serde_json::to_value(sample()).expect("to json");
    v["sections"][0]["values"]["total_flops"]["unit"] = serde_json::json!("furlongs");
    let msg = load_err(dir.path(), "unit.json", &v.to_string());
    assert!(msg.contains("total_flops") && msg.contains("furlongs"), "{msg}");

    let mut v = serde_json::to_value(sample()).expect("to json");
    v["provenance"]["surprise"] = serde_json::json!(1);
    let msg = load_err(dir.path(), "extra.json", &v.to_string());
    assert!(msg.contains("surprise"), "{msg}");
}

#[test]
fn a_missing_file_names_the_path() {
    let err = trace::load(Path::new("/nonexistent/cpu.json")).expect_err("missing");
    assert!(err.to_string().contains("/nonexistent/cpu.json"), "{err}");
}

fn failing_section(_cx: &mut cs336::lecture::SectionCtx) -> cs336::Result<()> {
    cs336::Tensor::ones(&[2, 3], cs336::DType::F32)?.matmul(&cs336::Tensor::ones(&[2, 3], cs336::DType::F32)?)?;
    Ok(())
}

static FAILING: cs336::lecture::SectionDef = cs336::lecture::SectionDef {
    id: "failing_section",
    title: "A section that fails",
    file: "tests/trace_io.rs",
    source: include_str!("trace_io.rs"),
    run: failing_section,
};

#[test]
fn a_failing_section_is_named_with_its_cause() {
    let choice = cs336::device::choose(cs336::device::DeviceRequest::Cpu).expect("cpu");
    let before = common::fresh_trace().clone();
    let err = cs336::lecture::run::run_lecture(&[&FAILING], &choice, 0, Path::new("."), Some(before), |_| {})
        .expect_err("fails");
    let msg = err.to_string();
    assert!(
        msg.contains("section `failing_section` failed") && msg.contains("matmul") && msg.contains("[2, 3]"),
        "{msg}"
    );
}
