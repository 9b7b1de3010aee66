//! The trace file: round trip, atomic replacement, and clear refusals of bad files.

use crate::common;

use std::path::Path;

use cs336::trace::{self, Error, Trace};

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
    // A byte order mark (what some editors put first) is named, not "expected value at column 1".
    let msg = load_err(dir.path(), "bom.json", &format!("\u{feff}{}", edited(|_| {})));
    assert!(msg.contains("byte order mark"), "{msg}");
}

#[test]
fn unknown_or_missing_schema_version_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut v = serde_json::to_value(sample()).expect("to json");
    v["schema_version"] = serde_json::json!(99);
    let msg = load_err(dir.path(), "future.json", &v.to_string());
    // Newer than this build: updating the checkout reads it; regenerating would throw it away.
    assert!(
        msg.contains("schema version 99") && msg.contains("newer than this build knows") && !msg.contains("regenerate"),
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
        // Replaced, not added: one call more than the states is refused first, by its count.
        &with_steps(&|s| {
            let last = s.len() - 1;
            s[last] = serde_json::json!(["nope", 0]);
        }),
    );
    assert!(msg.contains("names `nope`, which the section does not record"), "{msg}");
    let msg = load_err(
        dir.path(),
        "beyond.json",
        &with_steps(&|s| {
            let last = s.len() - 1;
            s[last] = serde_json::json!(["num_backward_flops", 5]);
        }),
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
    cs336::Tensor::ones(&[2, 3], cs336::tensor::DType::F32)?
        .matmul(&cs336::Tensor::ones(&[2, 3], cs336::tensor::DType::F32)?)?;
    Ok(())
}

static FAILING: cs336::lecture::SectionDef = cs336::lecture::SectionDef {
    id: "failing_section",
    title: "A section that fails",
    file: "tests/trace/trace_io.rs",
    source: include_str!("trace_io.rs"),
    run: failing_section,
    pytorch: "",
    cost: None,
    overhead: None,
    charts: &[],
    devices: &[],
    narrowers: &[],
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

/// A trace as JSON text, changed by `edit`.
fn edited(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut v = serde_json::to_value(sample()).expect("to json");
    edit(&mut v);
    v.to_string()
}

/// Index of section `id` in the sample trace.
fn section_index(id: &str) -> usize {
    sample().sections.iter().position(|s| s.id == id).expect("section")
}

#[test]
fn values_with_a_numeric_unit_must_be_numbers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let i = section_index("tensors_memory");
    for (name, unit) in [("gpt3_ffn_bytes", "bytes"), ("bytes", "bytes")] {
        for bad in [
            serde_json::json!("nan"),
            serde_json::json!(true),
            serde_json::Value::Null,
            serde_json::json!("12"),
        ] {
            let text = edited(|v| {
                v["sections"][i]["values"][name]["value"] = bad.clone();
                v["sections"][i]["values"][name]["unit"] = serde_json::json!(unit);
            });
            let msg = load_err(dir.path(), "unit_value.json", &text);
            assert!(
                msg.contains(&format!("tensors_memory.{name}")) && msg.contains(unit) && msg.contains(&bad.to_string()),
                "{bad}: {msg}"
            );
        }
    }
    // FLOP and count too, inside lists as well.
    let j = section_index("tensor_operations_flops");
    let flop_name = sample().sections[j]
        .values
        .iter()
        .find(|(_, r)| r.unit == cs336::trace::Unit::Flop)
        .map(|(n, _)| n.clone())
        .expect("a FLOP value");
    let text = edited(|v| v["sections"][j]["values"][&flop_name]["value"] = serde_json::json!(null));
    assert!(load_err(dir.path(), "flop.json", &text).contains(&flop_name));
    let text = edited(|v| {
        v["sections"][i]["values"]["bytes"]["value"] = serde_json::json!([1, 2, "x"]);
        v["sections"][i]["values"]["bytes"]["unit"] = serde_json::json!("count");
    });
    assert!(load_err(dir.path(), "count_list.json", &text).contains("tensors_memory.bytes"));

    // Still accepted: non-finite rates and times as `json_number` writes them, strings and
    // booleans without a unit, and optional fields left null.
    let text = edited(|v| {
        v["sections"][i]["values"]["bytes"]["value"] = serde_json::json!("inf");
        v["sections"][i]["values"]["bytes"]["unit"] = serde_json::json!("FLOP/s");
        v["provenance"]["device"]["memory_bytes"] = serde_json::Value::Null;
    });
    let path = dir.path().join("fine.json");
    std::fs::write(&path, text).expect("write");
    trace::load(&path).expect("a non-finite rate and a null memory size are fine");
}

#[test]
fn duplicate_sections_and_keys_are_refused_with_their_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = edited(|v| {
        let first = v["sections"][0].clone();
        v["sections"].as_array_mut().expect("list").push(first);
    });
    let first = sample().sections[0].id.clone();
    let msg = load_err(dir.path(), "dup_section.json", &text);
    assert!(msg.contains("duplicate section") && msg.contains(&first), "{msg}");

    // Duplicate keys never survive a parse into a map, so they are written by hand.
    let i = section_index("tensors_memory");
    let text = serde_json::to_string_pretty(&sample()).expect("json");
    let unit_line = "\"unit\": \"bytes\",";
    let at = text.find("\"id\": \"tensors_memory\"").expect("section in the text");
    let at = at + text[at..].find(unit_line).expect("a bytes value in tensors_memory");
    let twice = format!("{}{unit_line} {}", &text[..at], &text[at..]);
    let msg = load_err(dir.path(), "dup_key.json", &twice);
    assert!(
        msg.contains("duplicate key `unit`") && msg.contains(&format!("sections[{i}]")),
        "{msg}"
    );
    let top = text.replacen("\"lecture\":", "\"lecture\": \"x\", \"lecture\":", 1);
    let msg = load_err(dir.path(), "dup_top.json", &top);
    assert!(msg.contains("duplicate key `lecture`"), "{msg}");
}

#[test]
fn huge_files_are_refused_before_reading() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("huge.json");
    std::fs::File::create(&path)
        .and_then(|f| f.set_len(300 << 20))
        .expect("sparse file");
    let msg = trace::load(&path).expect_err("refused").to_string();
    assert!(msg.contains("huge.json") && msg.contains("larger than"), "{msg}");
    let msg = trace::load(dir.path()).expect_err("a folder").to_string();
    assert!(msg.contains("not a regular file"), "{msg}");
}

#[cfg(unix)]
mod file_identity {
    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).expect("metadata").permissions().mode() & 0o7777
    }

    #[test]
    fn saving_keeps_the_mode_of_the_file_it_replaces() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cpu.json");
        // A new file gets what any new file gets here (0666 less the umask).
        let plain = dir.path().join("plain");
        std::fs::File::create(&plain).expect("create");
        trace::save(&path, &sample()).expect("save");
        assert_eq!(mode(&path), mode(&plain), "a new trace has the usual mode");
        for m in [0o644, 0o640, 0o600, 0o664] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(m)).expect("chmod");
            trace::save(&path, &sample()).expect("save");
            assert_eq!(mode(&path), m, "mode {m:o} kept");
        }
    }

    #[test]
    fn saving_through_a_symlink_writes_its_target() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real_dir = dir.path().join("real");
        std::fs::create_dir_all(&real_dir).expect("mkdir");
        let real = real_dir.join("cpu.json");
        trace::save(&real, &sample()).expect("save");
        let link = dir.path().join("link.json");
        symlink("real/cpu.json", &link).expect("symlink");
        let mut t = sample();
        t.lecture = "through the link".into();
        trace::save(&link, &t).expect("save through the link");
        assert!(
            std::fs::symlink_metadata(&link).expect("meta").file_type().is_symlink(),
            "still a link"
        );
        assert_eq!(trace::load(&real).expect("load").lecture, "through the link");

        // A link to a file not yet written: the file is created where the link points.
        let dangling = dir.path().join("dangling.json");
        symlink("real/new.json", &dangling).expect("symlink");
        trace::save(&dangling, &t).expect("save through a dangling link");
        assert!(real_dir.join("new.json").is_file());

        // A link to a device is refused: the device stays a device.
        let device = dir.path().join("null.json");
        symlink("/dev/null", &device).expect("symlink");
        let msg = trace::save(&device, &t).expect_err("a device").to_string();
        assert!(msg.contains("/dev/null") && msg.contains("not a regular file"), "{msg}");
        assert!(
            !std::fs::metadata("/dev/null").expect("meta").is_file(),
            "/dev/null is still a device"
        );

        // A loop is refused with a message, not followed forever.
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
        symlink(&b, &a).expect("symlink");
        symlink(&a, &b).expect("symlink");
        let msg = trace::save(&a, &t).expect_err("a loop").to_string();
        assert!(msg.contains("a.json") && msg.contains("symbolic link"), "{msg}");
    }

    #[test]
    fn stale_partial_files_are_removed_by_the_next_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cpu.json");
        trace::save(&path, &sample()).expect("save");
        // What a killed writer leaves: its process is gone.
        let mut gone = std::process::Command::new("true").spawn().expect("spawn");
        let dead = gone.id();
        gone.wait().expect("reap");
        let stale = dir.path().join(format!(".tmp-{dead}-AbC123.partial"));
        std::fs::write(&stale, "half a trace").expect("write");
        // One from a writer that is still running (this test) stays.
        let live = dir.path().join(format!(".tmp-{}-XyZ789.partial", std::process::id()));
        std::fs::write(&live, "being written").expect("write");
        // An older program's name without a process id, an hour old.
        let legacy = dir.path().join(".tmp-Qw3rty.partial");
        let old = std::fs::File::create(&legacy).expect("create");
        old.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
            .expect("set mtime");
        drop(old);
        // Not ours: left alone.
        let other = dir.path().join("notes.partial");
        std::fs::write(&other, "x").expect("write");

        trace::save(&path, &sample()).expect("save");
        assert!(!stale.exists() && !legacy.exists(), "stale partial files removed");
        assert!(live.exists() && other.exists(), "live or foreign files kept");
    }
}

#[test]
fn git_ignores_partial_files_in_the_trace_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let check = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["check-ignore", "-q", "trace/lecture_02/.tmp-1234-AbC123.partial"])
        .status();
    match check {
        Ok(s) if s.code() == Some(128) => eprintln!("skipped: not a git checkout"),
        Ok(s) => assert!(s.success(), "`.tmp-*.partial` is not git-ignored"),
        Err(e) => eprintln!("skipped: no git ({e})"),
    }
}

#[test]
fn bytes_flop_and_counts_are_whole_and_not_negative_in_every_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let i = section_index("tensors_memory");
    for bad in [
        serde_json::json!(-1),
        serde_json::json!(1.5),
        serde_json::json!([4, -2]),
    ] {
        let text = edited(|v| v["sections"][i]["values"]["bytes"]["value"] = bad.clone());
        let msg = load_err(dir.path(), "whole.json", &text);
        assert!(
            msg.contains("tensors_memory.bytes") && msg.contains("whole numbers, zero or more"),
            "{bad}: {msg}"
        );
    }
    // An earlier state is checked as the final one is: a merge would write it back.
    let (j, name) = sample()
        .sections
        .iter()
        .enumerate()
        .find_map(|(j, s)| {
            s.values
                .iter()
                .find(|(_, r)| r.unit != cs336::trace::Unit::None && !r.history.is_empty())
                .map(|(n, _)| (j, n.clone()))
        })
        .expect("a value with a unit and a history");
    let text = edited(|v| v["sections"][j]["values"][&name]["history"][0]["value"] = serde_json::json!("x"));
    let msg = load_err(dir.path(), "history.json", &text);
    assert!(msg.contains("history[0].value") && msg.contains(&name), "{msg}");
}

#[test]
fn a_trace_in_another_lectures_folder_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = dir.path().join("lecture_02");
    std::fs::create_dir_all(&folder).expect("folder");
    let path = folder.join("scratch.json");
    let text = edited(|v| v["lecture"] = serde_json::json!("lecture_03"));
    std::fs::write(&path, text).expect("write");
    let msg = trace::load_named(&path).expect_err("another lecture's").to_string();
    assert!(msg.contains("lecture_03") && msg.contains("lecture_02"), "{msg}");
}

/// Every file a user or a trace names is read through `read_limited`: a device, a pipe or a huge
/// file is refused at once, never read without end or waited on.
#[cfg(unix)]
#[test]
fn devices_pipes_and_huge_files_are_refused_before_reading() {
    use cs336::trace::io::{Limited, read_limited};
    let dir = tempfile::tempdir().expect("tempdir");
    let huge = dir.path().join("huge.rs");
    let file = std::fs::File::create(&huge).expect("create");
    file.set_len(1 << 30).expect("a sparse GiB");
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    let refused = |p: &Path| match read_limited(p, 4 << 20, "a source file") {
        Err(Limited::Refused(msg)) => msg,
        other => panic!("{}: {other:?}", p.display()),
    };
    assert!(refused(Path::new("/dev/zero")).contains("not a regular file"));
    assert!(refused(&huge).contains("larger than the 4 MiB a source file may have"));
    if made.is_ok_and(|s| s.success()) {
        assert!(refused(&fifo).contains("not a regular file"));
    }
    let small = dir.path().join("small.rs");
    std::fs::write(&small, "fn f() {}").expect("write");
    assert_eq!(
        read_limited(&small, 4 << 20, "a source file").expect("read"),
        "fn f() {}"
    );
}

/// What the schema does not allow is refused, in the words of the JSON file: a struct written as
/// the list of its fields (serde's derive alone would take it), and no Rust type name in messages.
#[test]
fn what_the_schema_does_not_allow_is_refused_in_json_words() {
    let dir = tempfile::tempdir().expect("tempdir");
    let as_list = edited(|v| {
        let fields: Vec<serde_json::Value> = v["sections"][0]["run"]
            .as_object()
            .expect("run is an object")
            .values()
            .cloned()
            .collect();
        v["sections"][0]["run"] = serde_json::json!(fields);
    });
    let msg = load_err(dir.path(), "list.json", &as_list);
    assert!(
        msg.contains("at `sections[0].run`: invalid type: a list, expected an object of named fields"),
        "{msg}"
    );
    let cases = [
        (
            "missing.json",
            edited(|v| {
                v.as_object_mut().expect("object").remove("provenance");
            }),
            "at the top level: missing field `provenance`",
        ),
        (
            "string.json",
            edited(|v| v["sections"][0]["run"] = serde_json::json!("x")),
            "invalid type: the string \"x\", expected an object",
        ),
        (
            "negative.json",
            edited(|v| v["sections"][0]["source_line"] = serde_json::json!(-1)),
            "expected a whole number from 0 to 4294967295",
        ),
        (
            "object.json",
            edited(|v| v["sections"] = serde_json::json!({"a": 1})),
            "invalid type: an object, expected a list",
        ),
    ];
    for (name, text, expect) in cases {
        let msg = load_err(dir.path(), name, &text);
        assert!(msg.contains(expect), "{name}: {msg}");
        for rust in [
            "struct ",
            "u64",
            "u32",
            "usize",
            "RunInfo",
            "Provenance",
            "sequence",
            "a map",
            " at `.`",
        ] {
            assert!(!msg.contains(rust), "{name}: `{rust}` in {msg}");
        }
    }
}

/// A whole number beyond 64 bits would be read as the nearest float and written back rounded by
/// the next merge; it is refused, naming its line. One within 64 bits survives exactly.
#[test]
fn whole_numbers_are_kept_exactly_or_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = edited(|_| {});
    let at = text.find("\"wall_time_s\":").expect("a wall time") + "\"wall_time_s\":".len();
    let end = at + text[at..].find(',').expect("more fields");
    let huge = format!("{}123456789012345678901234567890{}", &text[..at], &text[end..]);
    let msg = load_err(dir.path(), "huge.json", &huge);
    assert!(
        msg.contains("line 1: the whole number 123456789012345678901234567890 is larger than a trace keeps exactly"),
        "{msg}"
    );

    let first = sample().sections[0].values.keys().next().expect("a value").clone();
    let text = edited(|v| {
        let record = &mut v["sections"][0]["values"][first.as_str()];
        record["unit"] = serde_json::json!("count");
        record["value"] = serde_json::json!(u64::MAX);
        let history = record.get_mut("history").and_then(serde_json::Value::as_array_mut);
        for state in history.into_iter().flatten() {
            state["value"] = serde_json::json!(u64::MAX);
        }
    });
    let path = dir.path().join("max.json");
    std::fs::write(&path, text).expect("write");
    let trace = trace::load(&path).expect("u64::MAX is a whole number a trace keeps");
    trace::save(&path, &trace).expect("save");
    let back = std::fs::read_to_string(&path).expect("read");
    assert!(back.contains("18446744073709551615"), "written back exactly");
}

/// JSON nested past serde_json's limit is an error that names the file, never a stack overflow.
#[test]
fn deeply_nested_values_are_refused_not_overflowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = sample().sections[0].values.keys().next().expect("a value").clone();
    let text = edited(|v| v["sections"][0]["values"][first.as_str()]["value"] = serde_json::json!("DEEP"));
    let deep = text.replacen(
        "\"DEEP\"",
        &format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000)),
        1,
    );
    let msg = load_err(dir.path(), "deep.json", &deep);
    assert!(msg.contains("recursion limit"), "{msg}");
}
