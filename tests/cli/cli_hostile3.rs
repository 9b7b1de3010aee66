//! Hostile input, round 3: flags the Reference promises to refuse, traces of another lecture,
//! values too large or too long to echo, products too large for memory or the address-space
//! limit, and a model deeper than the stack. Each ends at once with a message that names what is
//! wrong, and writes nothing.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common::process::{assert_clean_failure, finish, run_lecture};

const QUICK: Duration = Duration::from_secs(30);

#[test]
fn flags_a_command_would_ignore_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    let what_if = dir.path().join("x.json");
    let w = what_if.to_str().expect("utf-8");
    for (args, flag) in [
        (vec!["--list", "--seed", "1"], "--seed"),
        (vec!["--list", "--no-book"], "--no-book"),
        (vec!["--list", "--device", "cpu"], "--device"),
        (vec!["--list", "--trace-dir", d], "--trace-dir"),
        (vec!["givens", "--trace-dir", d], "--trace-dir"),
        (vec!["trace-name", "--trace-dir", d], "--trace-dir"),
        (vec!["book", "--what-if", w, "--trace-dir", d], "--trace-dir"),
        (vec!["what-if", "--list", "--device", "cuda"], "--device"),
    ] {
        let err = assert_clean_failure(&run_lecture(&args, None, QUICK), &[flag, "would do nothing"]);
        assert!(err.contains("drop it"), "{args:?}: {err}");
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("list").count(),
        0,
        "nothing written"
    );
}

#[test]
fn traces_of_different_lectures_are_not_compared() {
    let (_, committed) = crate::common::committed_traces()
        .into_iter()
        .next()
        .expect("a committed trace");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut other = committed.clone();
    other.lecture = "lecture_03".into();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    cs336::trace::save(&a, &committed).expect("write");
    std::fs::write(&b, serde_json::to_string(&other).expect("json")).expect("write");
    let args = ["compare", a.to_str().expect("utf-8"), b.to_str().expect("utf-8")];
    assert_clean_failure(
        &run_lecture(&args, None, QUICK),
        &["`lecture_02`", "`lecture_03`", "same lecture"],
    );
}

#[test]
fn a_count_too_large_says_the_largest_and_a_long_value_is_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    for big in ["1e20", "18446744073709551616"] {
        let set = format!("tensor_operations_flops.B={big}");
        let err = assert_clean_failure(
            &run_lecture(&["--trace-dir", d, "--set", &set], None, QUICK),
            &["too large", "9007199254740992"],
        );
        assert!(!err.contains("not a whole number"), "{err}");
    }
    let set = format!("tensor_operations_flops.B={}", "9".repeat(100_000));
    let err = assert_clean_failure(
        &run_lecture(&["--trace-dir", d, "--set", &set], None, QUICK),
        &["100026 characters long", "…"],
    );
    assert!(err.len() < 500, "the value is not echoed in full: {} bytes", err.len());
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("list").count(),
        0,
        "nothing written"
    );
}

pub(crate) fn bench(args: &[&str], address_space_kib: Option<u64>) -> Output {
    let mut cmd = match address_space_kib {
        // `ulimit -v` as a person sets it, in a shell that then runs the bench.
        Some(kib) => {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
                .arg(env!("CARGO_BIN_EXE_bench"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_bench")),
    };
    crate::common::process::with_test_budget(&mut cmd);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    finish(cmd.spawn().expect("spawn bench"), QUICK, &args.join(" "))
}

#[test]
fn a_bad_matmul_shape_names_its_size() {
    for (shape, size) in [
        ("-1x1x1", "M (the first size) is \"-1\""),
        ("1x0x1", "K (the second size) is \"0\""),
        ("1x1xten", "N (the third size) is \"ten\""),
    ] {
        let o = bench(&["cpu-matmul", "--shape", shape], None);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "a usage error: {err}");
        assert!(err.contains(size), "{shape}: {err}");
    }
}

#[test]
fn a_product_too_large_is_refused_before_anything_is_made() {
    // 262144³ in float32 and bfloat16: over a TiB of operands and products, refused as a whole
    // (checked one operand at a time, 65536³ filled 16 GiB before its refusal).
    let o = bench(&["cpu-matmul", "--shape", "262144x262144x262144"], None);
    let err = assert_clean_failure(&o, &["262144³", "1236950581248 bytes"]);
    assert!(!err.contains("timing"), "nothing was timed: {err}");
    // Under an address-space limit below what the product needs (8192³: 1.1 GiB), the limit
    // refuses it, where the machine's free memory would not.
    let o = bench(&["cpu-matmul", "--shape", "8192x8192x8192"], Some(1 << 20));
    assert_clean_failure(&o, &["8192³", "address-space limit", "ulimit -v"]);
}

/// A what-if of 150,000 layers of width one ran its section and then overflowed the stack when
/// the graph was dropped. Run beside a copy of this device's committed trace (skipped where this
/// device has none: a what-if needs the device's own run).
#[test]
fn a_model_deeper_than_the_stack_runs() {
    let Ok(choice) = cs336::device::choose(cs336::device::DeviceRequest::Cpu) else {
        return;
    };
    let Ok(slug) = choice.device.slug() else { return };
    let committed = Path::new(crate::common::ROOT)
        .join("trace/lecture_02")
        .join(format!("{slug}.json"));
    if !committed.is_file() {
        crate::common::note_once(&format!("no committed trace for {slug}: the deep what-if is not run"));
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let own = dir.path().join("lecture_02").join(format!("{slug}.json"));
    std::fs::create_dir_all(own.parent().expect("folder")).expect("mkdir");
    std::fs::copy(&committed, &own).expect("copy");
    let d = dir.path().to_str().expect("utf-8");
    let args = [
        "--trace-dir",
        d,
        "--device",
        "cpu",
        "--no-book",
        "--set",
        "custom_model.num_layers=150000",
        "--set",
        "custom_model.d=1",
    ];
    let o = run_lecture(&args, None, Duration::from_secs(300));
    let (out, err) = crate::common::process::text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("tensor ops"), "the estimate counts ops: {out}");
}
