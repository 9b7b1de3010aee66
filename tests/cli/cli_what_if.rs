//! `lecture --set …` as a reader uses it: the givens are listed; each kind of bad value is
//! refused before anything runs, with a message naming the given and its range, and nothing is
//! written; a what-if writes its own trace and leaves the device's own byte for byte as it was.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::process::{assert_clean_failure, run_lecture, text};

const LIMIT: Duration = Duration::from_secs(300);

/// A trace folder holding this device's own trace of the napkin-math section.
pub(crate) fn folder_with_own_trace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    let o = run_lecture(
        &[
            "--trace-dir",
            d,
            "--no-book",
            "--device",
            "cpu",
            "--section",
            "motivating_questions",
        ],
        None,
        LIMIT,
    );
    assert!(o.status.success(), "{:?}", text(&o));
    let slug = cs336::device::cpu::trace_name().expect("a CPU trace name");
    let own = dir.path().join("lecture_02").join(format!("{slug}.json"));
    assert!(own.is_file());
    (dir, own)
}

/// Every file under `dir`, with its bytes.
pub(crate) fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).expect("read")));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn givens_are_listed_with_their_defaults_ranges_and_help() {
    let o = run_lecture(&["--device", "cpu", "givens"], None, LIMIT);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    for (section, given) in cs336::lecture::givens::all() {
        assert!(out.contains(section.id), "{out}");
        assert!(
            out.contains(given.name) && out.contains(given.help),
            "{} listed: {out}",
            given.name
        );
    }
    assert!(
        out.contains("a whole number ≥ 1") && out.contains("a fraction from 0.001 to 1"),
        "{out}"
    );
    assert!(out.contains("default 7e10"), "a default as typed: {out}");
}

#[test]
fn bad_what_ifs_are_refused_before_anything_runs() {
    let (dir, _) = folder_with_own_trace();
    let d = dir.path().to_str().expect("utf-8");
    let before = snapshot(dir.path());
    let cases: [(&[&str], &[&str]); 7] = [
        (
            &["--set", "nosuch.B=1"],
            &["no section `nosuch` has givens", "tensor_operations_flops"],
        ),
        (
            &["--set", "tensor_operations_flops.Q=1"],
            &["has no given `Q`", "B, D, K"],
        ),
        (
            &["--set", "tensor_operations_flops.B=12.5"],
            &["`12.5` is not a whole number ≥ 1"],
        ),
        (
            &["--set", "motivating_questions.mfu=1.5"],
            &["`1.5` is not a fraction from 0.001 to 1"],
        ),
        (
            &["--set", "tensor_operations_flops.B"],
            &["expected SECTION.NAME=VALUE"],
        ),
        (
            &["--set", "tensor_operations_flops.B=1e12"],
            &["would need about", "of memory", "nothing was run"],
        ),
        (
            &[
                "--set",
                "tensor_operations_flops.B=20000",
                "--set",
                "tensor_operations_flops.D=20000",
                "--set",
                "tensor_operations_flops.K=20000",
            ],
            &["would take about", "add `--yes`"],
        ),
    ];
    for (args, expect) in cases {
        let mut all = vec!["--trace-dir", d, "--no-book", "--device", "cpu"];
        all.extend_from_slice(args);
        let o = run_lecture(&all, None, LIMIT);
        assert_clean_failure(&o, expect);
        assert_eq!(snapshot(dir.path()), before, "{args:?} wrote nothing");
    }
    // Twice the same given, and `--yes` without a what-if.
    let o = run_lecture(
        &[
            "--trace-dir",
            d,
            "--set",
            "motivating_questions.mfu=0.4",
            "--set",
            "motivating_questions.mfu=0.3",
        ],
        None,
        LIMIT,
    );
    assert_clean_failure(&o, &["`motivating_questions.mfu` is set twice"]);
    let o = run_lecture(&["--trace-dir", d, "--yes"], None, LIMIT);
    assert_clean_failure(&o, &["`--yes`", "needs `--set`"]);
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn a_what_if_writes_its_own_trace_and_leaves_the_devices_untouched() {
    let (dir, own) = folder_with_own_trace();
    let d = dir.path().to_str().expect("utf-8");
    let bytes = std::fs::read(&own).expect("own trace");
    let o = run_lecture(
        &[
            "--trace-dir",
            d,
            "--no-book",
            "--device",
            "cpu",
            "--set",
            "motivating_questions.model_parameters=405e9",
            "--set",
            "motivating_questions.num_tokens=15.6e12",
        ],
        None,
        LIMIT,
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert_eq!(
        std::fs::read(&own).expect("own trace"),
        bytes,
        "the device's own trace is byte-identical"
    );
    let slug = cs336::device::cpu::trace_name().expect("a CPU trace name");
    let changes = cs336::lecture::what_if::parse(&[
        "motivating_questions.num_tokens=15.6e12".to_string(),
        "motivating_questions.model_parameters=405e9".to_string(),
    ])
    .expect("valid");
    let written = cs336::lecture::what_if::trace_path(&dir.path().join("lecture_02"), &slug, &changes);
    let folder = written.parent().and_then(|p| p.file_name()).expect("a folder");
    assert!(
        folder.to_string_lossy().starts_with(&format!(
            "{slug}-motivating_questions.model_parameters4.05e11-motivating_questions.num_tokens1.56e13-"
        )),
        "named after the section and the changes, in lecture order: {folder:?}"
    );
    assert!(out.contains(&written.display().to_string()), "says where: {out}");
    let t = cs336::trace::load_named(&written).expect("the what-if trace loads");
    let s = t.section("motivating_questions").expect("section");
    assert_eq!(s.values["total_flops"].value.as_f64(), Some(6.0 * 405e9 * 15.6e12));
    assert_eq!(
        s.values["model_parameters"].given.as_ref().map(|g| g.default.clone()),
        Some(70e9.into())
    );

    let o = run_lecture(&["--trace-dir", d, "what-if", "--list"], None, LIMIT);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(
        out.contains("motivating_questions.model_parameters = 4.05e11 (default 7e10)"),
        "{out}"
    );
}
