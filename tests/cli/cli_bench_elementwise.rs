//! `bench elementwise` as a person runs it, at a tiny size and without references so it ends in
//! seconds: its options, its table and its JSON's shape. No timing is judged, only the shape and
//! the arithmetic between the numbers it prints.

use crate::common;

use std::time::Duration;

use common::process::{assert_clean_failure, assert_success, text};

const LIMIT: Duration = Duration::from_secs(120);

fn run_bench(args: &[&str]) -> std::process::Output {
    let mut cmd = crate::common::process::at_test_budget(env!("CARGO_BIN_EXE_bench"));
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    common::process::finish(cmd.spawn().expect("spawn bench"), LIMIT, &args.join(" "))
}

#[test]
fn elementwise_prints_its_table_and_writes_its_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("table.json");
    let json_arg = json.to_str().expect("utf-8");
    let args = [
        "elementwise",
        "--op",
        "relu,sum",
        "--bytes",
        "1K",
        "--min-samples",
        "1",
        "--min-time",
        "0",
        "--json",
        json_arg,
    ];
    let out = assert_success(&run_bench(&args));
    assert!(out.contains("references: not run (pass --with-reference"), "{out}");
    let table: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the JSON is written")).expect("JSON");
    // A kilobyte lands in the first level of the memory the run found (or took from the OS).
    // (At the tests' budget each size of the curve is one call: a curve too noisy to show a
    // cache puts the kilobyte in DRAM, and the table must say that.)
    let first = table["levels"]["caches"][0]["name"]
        .as_str()
        .unwrap_or("DRAM")
        .to_string();
    assert_eq!(table["levels"]["measured"], true, "{table}");
    assert!(
        out.contains("levels (where the bandwidth curve falls, on these threads): "),
        "{out}"
    );
    assert!(out.contains("4 cases; about "), "{out}");
    let rows: Vec<&str> = out.lines().filter(|l| l.contains(&format!(" {first} │"))).collect();
    assert_eq!(rows.len(), 4, "relu and sum, float32 and bfloat16: {out}");
    for (row, (op, dtype)) in rows.iter().zip([
        ("relu", "float32"),
        ("relu", "bfloat16"),
        ("sum", "float32"),
        ("sum", "bfloat16"),
    ]) {
        let words: Vec<&str> = row.split_whitespace().collect();
        assert_eq!((words[0], words[1]), (op, dtype), "{row}");
        // Without references, PyTorch's and numpy's columns and ratios are dashes.
        assert_eq!(row.matches('—').count(), 4, "{row}");
    }

    assert_eq!(table["kind"], "elementwise");
    for key in ["cpu_model", "trace_name", "recorded_at"] {
        assert!(table[key].as_str().is_some_and(|s| !s.is_empty()), "{key}: {table}");
    }
    assert_eq!(table["threads"], 2);
    let (l2, llc) = (
        table["caches"]["l2_bytes"].as_u64(),
        table["caches"]["llc_bytes"].as_u64(),
    );
    assert!(l2.is_some_and(|l2| l2 >= 1024) && llc >= l2, "{}", table["caches"]);
    let rows = table["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4);
    for row in rows {
        let (op, n, bytes) = (
            row["op"].as_str().expect("op"),
            row["n"].as_u64().expect("n"),
            row["bytes"].as_u64().expect("bytes"),
        );
        let size = if row["dtype"] == "float32" { 4 } else { 2 };
        // relu reads n and writes n; sum reads n and writes one; both fit in the kilobyte asked.
        let moved = if op == "relu" { 2 * n } else { n + 1 };
        assert_eq!(bytes, moved * size, "{row}");
        assert!(
            bytes <= 1024 && (moved + 2) * size > 1024,
            "the largest size that fits: {row}"
        );
        assert_eq!(row["flops"].as_u64(), Some(n), "one FLOP per element: {row}");
        assert_eq!(row["level"], first.as_str());
        assert_eq!(row["baseline"]["kind"], if op == "relu" { "copy" } else { "read" });
        for column in [&row["ours"], &row["baseline"]] {
            let t = &column["timing"];
            let (q1, median, q3) = (t["q1_s"].as_f64(), t["median_s"].as_f64(), t["q3_s"].as_f64());
            assert!(q1 <= median && median <= q3 && q1.is_some(), "a spread: {t}");
            let bytes = column["bytes"].as_f64().unwrap_or(bytes as f64);
            let rate = column["gb_per_sec"].as_f64().expect("GB/s");
            assert!(
                (rate - bytes / median.expect("median") / 1e9).abs() <= 1e-9 * rate,
                "{column}"
            );
        }
        assert!(row["torch"].is_null() && row["numpy"].is_null() && row["ours_over_torch"].is_null());
        assert!(
            row["ours_over_torch_interval"].is_null(),
            "no reference, no interval: {row}"
        );
    }
}

#[test]
fn elementwise_refuses_what_it_cannot_run() {
    // More bytes than the machine holds: refused before anything is allocated.
    let o = run_bench(&["elementwise", "--bytes", "1000000G"]);
    assert_clean_failure(&o, &["host memory", "smaller --bytes"]);
    // Parsing errors are clap's: exit 2 with what was wrong.
    for (args, expect) in [
        (&["elementwise", "--bytes", "0"][..], "at least 1"),
        (&["elementwise", "--bytes", "12Q"], "K, M or G"),
        (
            &["elementwise", "--op", "fft"],
            "possible values: relu, gelu, add, mul, sum, dot, matvec",
        ),
    ] {
        let o = run_bench(args);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
}
