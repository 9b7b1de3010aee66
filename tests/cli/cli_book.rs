//! `lecture book`: the HTML book from traces already recorded, without running a section or
//! touching a trace, with the search index that `mdbook serve` also gives.

use crate::common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use common::process::{assert_clean_failure, assert_success, run_lecture, text};
use common::{Workspace, fresh_trace};

const LIMIT: Duration = Duration::from_secs(120);

/// Every trace file under `dir` with its bytes and modification time.
fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>, SystemTime)> {
    let mut all: Vec<_> = std::fs::read_dir(dir)
        .expect("trace folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .map(|p| {
            let modified = std::fs::metadata(&p).and_then(|m| m.modified()).expect("mtime");
            let bytes = std::fs::read(&p).expect("read");
            (p, bytes, modified)
        })
        .collect();
    all.sort();
    all
}

fn search_index(html: &Path) -> String {
    std::fs::read_dir(html)
        .expect("output folder")
        .flatten()
        .find(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("searchindex") && name.ends_with(".js")
        })
        .map(|e| std::fs::read_to_string(e.path()).expect("search index"))
        .unwrap_or_else(|| panic!("no search index in {}", html.display()))
}

#[test]
fn book_builds_from_the_committed_traces_without_running_anything() {
    let root = Path::new(common::ROOT);
    let traces = root.join("trace").join("lecture_02");
    let before = snapshot(&traces);
    let out = tempfile::tempdir().expect("tempdir");
    let html = out.path().join("html");
    let o = run_lecture(&["book"], Some(&html), LIMIT);
    let stdout = assert_success(&o);
    let index = html.join("index.html");
    assert_eq!(
        stdout.trim_end().lines().last(),
        Some(index.display().to_string().as_str()),
        "{stdout}"
    );
    assert!(index.is_file());
    assert!(
        !stdout.contains("Running") && !stdout.contains("Wrote"),
        "nothing ran: {stdout}"
    );
    assert_eq!(snapshot(&traces), before, "the traces are untouched");
    let search = search_index(&html);
    assert!(
        search.contains("tensors_memory") || search.contains("memory"),
        "the index holds the chapters"
    );
}

/// `lecture book --trace F` for every committed trace `F`, as a reader asks for another machine's
/// pages: older traces lack what newer chapters quote, and each still builds, with placeholders
/// (a value inside a formula included).
#[test]
fn every_committed_trace_builds_its_book() {
    let out = tempfile::tempdir().expect("tempdir");
    let traces = common::committed_traces();
    assert!(traces.len() > 1, "the repository holds several traces");
    let mut without_roofline = 0;
    for (i, (path, trace)) in traces.iter().enumerate() {
        let html = out.path().join(format!("html{i}"));
        let p = path.to_str().expect("utf-8");
        let o = run_lecture(&["book", "--trace", p], Some(&html), LIMIT);
        let (stdout, stderr) = text(&o);
        assert!(o.status.success(), "{}: {stdout}{stderr}", path.display());
        // The roofline chapter quotes the MFU inside a formula: a trace older than the section
        // shows the placeholder there.
        if trace.section("arithmetic_intensity").is_none() {
            without_roofline += 1;
            let page = std::fs::read_to_string(html.join("arithmetic_intensity.html")).expect("the page");
            assert!(
                page.contains("<mtext class=\"lecture-unrecorded\""),
                "{}: no placeholder in the formula",
                path.display()
            );
        }
    }
    if without_roofline == 0 {
        common::note_once("every committed trace has arithmetic_intensity: the formula's placeholder is not tried");
    }
}

#[test]
fn book_reads_the_trace_it_is_given() {
    let ws = Workspace::new();
    let mut trace = fresh_trace().clone();
    let bytes = trace
        .sections
        .iter_mut()
        .find(|s| s.id == "tensors_memory")
        .and_then(|s| s.values.get_mut("gpt3_ffn_bytes"))
        .expect("value");
    bytes.value = serde_json::json!(123456789012u64);
    let path = ws.write_trace("cpu", &trace);
    let written = std::fs::read(&path).expect("read");
    let html = ws.out_dir();
    let p = path.to_str().expect("utf-8");
    let o = run_lecture(&["book", "--trace", p], Some(&html), LIMIT);
    assert_success(&o);
    let page = std::fs::read_to_string(html.join("tensors_memory.html")).expect("page");
    assert!(
        page.contains("123,456,789,012 bytes"),
        "the page quotes the given trace"
    );
    assert_eq!(std::fs::read(&path).expect("read"), written, "the trace is untouched");
    // Built again over the first: the new book replaces the old one whole.
    assert_success(&run_lecture(&["book", "--trace", p], Some(&html), LIMIT));
    assert!(html.join("index.html").is_file());

    // A trace that is not there is named.
    let o = run_lecture(&["book", "--trace", "/nonexistent/cpu.json"], Some(&html), LIMIT);
    assert_clean_failure(&o, &["/nonexistent/cpu.json"]);
    assert!(
        html.join("index.html").is_file(),
        "a failed build leaves the last book: {:?}",
        text(&o)
    );
}

/// The `<main>` of every chapter page in `html`, by file name.
fn pages(html: &Path) -> std::collections::BTreeMap<String, String> {
    std::fs::read_dir(html)
        .expect("output folder")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "html"))
        .map(|e| {
            let page = std::fs::read_to_string(e.path()).expect("page");
            let main = match (page.find("<main>"), page.find("</main>")) {
                (Some(a), Some(b)) if a < b => page[a..b].to_string(),
                _ => String::new(),
            };
            (e.file_name().to_string_lossy().into_owned(), main)
        })
        .collect()
}

/// `mdbook build` (what `mdbook serve` does on every change, here with the preprocessor binary
/// this test was built with) and `lecture book` give the same pages, search included.
#[test]
fn mdbook_and_lecture_book_give_the_same_book() {
    let mdbook = std::process::Command::new("mdbook").arg("--version").output();
    if !mdbook.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: no `mdbook` on PATH (`cargo install mdbook --locked`)");
        return;
    }
    // The preprocessor is the book crate's binary, built beside `lecture` by `cargo build`.
    let preprocessor = Path::new(env!("CARGO_BIN_EXE_lecture")).with_file_name("mdbook-lecture");
    if !preprocessor.is_file() {
        eprintln!(
            "skipped: no {} (`cargo build --release -p cs336-book` builds it)",
            preprocessor.display()
        );
        return;
    }
    let out = tempfile::tempdir().expect("tempdir");
    let ours = out.path().join("ours");
    assert_success(&run_lecture(&["book"], Some(&ours), LIMIT));
    let theirs = out.path().join("theirs");
    let o = std::process::Command::new("mdbook")
        .args(["build", "--dest-dir"])
        .arg(&theirs)
        .arg(Path::new(common::ROOT).join("book"))
        .env("MDBOOK_PREPROCESSOR__LECTURE__COMMAND", &preprocessor)
        .output()
        .expect("mdbook runs");
    assert!(
        o.status.success(),
        "mdbook build: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (a, b) = (pages(&ours), pages(&theirs));
    assert!(a.len() > 10, "{} pages", a.len());
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (name, page) in &a {
        assert!(
            page == &b[name],
            "{name} differs between `lecture book` and `mdbook build`"
        );
    }
    assert!(!search_index(&ours).is_empty() && !search_index(&theirs).is_empty());
}
