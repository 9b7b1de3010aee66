//! Check, then run, then write: a run whose book would fail after its trace is written is refused
//! before any section runs, and leaves every file (and folder) as it was. Each case here used to
//! run, write its trace, and only then fail for a reason it could have checked first.

use std::path::Path;
use std::time::Duration;

use crate::cli_what_if::{folder_with_own_trace, snapshot};
use crate::common::process::{assert_clean_failure, assert_success, finish, run_lecture, with_test_budget};

const LIMIT: Duration = Duration::from_secs(300);

/// What a refusal for sections the book quotes and the trace would lack says: the count, the
/// first missing section in order, the way out, and that nothing ran.
const MISSING_SECTIONS: &[&str] = &[
    "the book quotes",
    "arithmetic_intensity",
    "--no-book",
    "Nothing was run",
];

fn what_if(dir: &Path, extra: &[&str]) -> std::process::Output {
    let d = dir.to_str().expect("utf-8");
    let mut args = vec!["--trace-dir", d, "--device", "cpu", "--set", "activation_memory.d=8"];
    args.extend(extra);
    run_lecture(&args, None, LIMIT)
}

/// The device's own trace holds one section; a what-if's book quotes the own run wherever the
/// what-if ran nothing, so it could not be built. Refused up front, naming what is missing and
/// `--no-book`, which then runs.
#[test]
fn a_what_if_beside_a_trace_of_one_section_is_refused_before_it_runs() {
    let (dir, _own) = folder_with_own_trace();
    let before = snapshot(dir.path());
    let o = what_if(dir.path(), &[]);
    assert_clean_failure(&o, MISSING_SECTIONS);
    assert_eq!(snapshot(dir.path()), before, "nothing was written");
    assert_success(&what_if(dir.path(), &["--no-book"]));
}

/// A trace beside the own one that does not load: the what-if's book reads every trace in that
/// folder, so the what-if is refused before it runs, naming the file.
#[test]
fn a_what_if_beside_an_unreadable_trace_is_refused_before_it_runs() {
    let (dir, own) = folder_with_own_trace();
    std::fs::write(own.with_file_name("zz-other-device.json"), "{ not json").expect("write");
    let before = snapshot(dir.path());
    let o = what_if(dir.path(), &[]);
    assert_clean_failure(
        &o,
        &["zz-other-device.json", "not valid JSON", "--no-book", "Nothing was run"],
    );
    assert_eq!(snapshot(dir.path()), before, "nothing was written");
}

/// Run from a working folder that was deleted, outside `cargo run`: the book's sources are looked
/// for under the current folder, and are not there. Refused before the what-if runs.
#[cfg(unix)]
#[test]
fn a_what_if_from_a_deleted_working_folder_is_refused_before_it_runs() {
    let (dir, _own) = folder_with_own_trace();
    let gone = dir.path().join("gone");
    std::fs::create_dir(&gone).expect("mkdir");
    let before = snapshot(dir.path());
    let mut sh = std::process::Command::new("sh");
    with_test_budget(&mut sh);
    sh.args([
        "-c",
        r#"cd "$1" && rmdir "$1" && exec "$2" --trace-dir "$3" --device cpu --set activation_memory.d=8"#,
        "sh",
    ])
    .arg(&gone)
    .arg(env!("CARGO_BIN_EXE_lecture"))
    .arg(dir.path())
    // Outside `cargo run`, as a reader runs the binary: the crate root is the current folder.
    .env_remove("CARGO_MANIFEST_DIR")
    .env("NO_COLOR", "1")
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let o = finish(sh.spawn().expect("spawn sh"), LIMIT, "what-if from a deleted folder");
    assert_clean_failure(&o, &["no book.toml", "--no-book", "nothing was run"]);
    let mut after = snapshot(dir.path());
    after.retain(|(p, _)| !p.starts_with(&gone));
    assert_eq!(after, before, "nothing was written");
}

/// A partial run into an empty trace folder would write a trace of one section, which the book
/// (it quotes every section) could not be built from: refused, and not even the folder is made.
#[test]
fn a_partial_run_the_book_could_not_be_built_from_makes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let traces = dir.path().join("traces");
    let t = traces.to_str().expect("utf-8");
    let o = run_lecture(&["--trace-dir", t, "--section", "tensors_basics"], None, LIMIT);
    assert_clean_failure(&o, MISSING_SECTIONS);
    assert!(!traces.exists(), "no folder is left behind");
}

/// The book's folder cannot be written (under a file; in `/proc`, which refuses even root, as a
/// folder of another user's refuses this one): refused before the section runs, with the folder
/// named, and the trace untouched.
#[test]
fn a_run_whose_book_folder_cannot_be_written_is_refused_before_it_runs() {
    let (dir, own) = folder_with_own_trace();
    let d = dir.path().to_str().expect("utf-8");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a folder").expect("write");
    let before = std::fs::read(&own).expect("read");
    for (html, expect) in [
        (file.join("html"), "Not a directory"),
        (Path::new("/proc/cs336-book").to_path_buf(), "cannot be written"),
    ] {
        let o = run_lecture(
            &["--trace-dir", d, "--section", "motivating_questions"],
            Some(&html),
            LIMIT,
        );
        assert_clean_failure(&o, &[expect, "nothing was run"]);
        assert_eq!(
            std::fs::read(&own).expect("read"),
            before,
            "{}: the trace is untouched",
            html.display()
        );
    }
}
