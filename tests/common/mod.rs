//! Shared by the book tests: a fresh trace from running the lecture in-process, and small books
//! built into temporary folders.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use cs336::book::{BuildOptions, Problem};
use cs336::device::{self, DeviceRequest};
use cs336::lecture::run;
use cs336::trace::{self, Trace};

pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Every section, run now on the CPU.
pub fn fresh_trace() -> Trace {
    let choice = device::choose(DeviceRequest::Cpu).expect("the CPU is always available");
    run::run_lecture(&[], &choice, 0, Path::new(ROOT), None, |_| {}).expect("every section runs")
}

/// A temporary folder holding `trace/lecture_02/<slug>.json` files.
pub struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    pub fn new() -> Workspace {
        Workspace { dir: tempfile::tempdir().expect("temporary folder") }
    }

    pub fn trace_dir(&self) -> PathBuf {
        self.dir.path().join("trace").join("lecture_02")
    }

    pub fn write_trace(&self, slug: &str, trace: &Trace) -> PathBuf {
        let path = self.trace_dir().join(format!("{slug}.json"));
        trace::save(&path, trace).expect("trace written");
        path
    }

    pub fn out_dir(&self) -> PathBuf {
        self.dir.path().join("html")
    }

    /// Builds the repository's book from `trace` (the default for every page).
    pub fn build_real_book(&self, trace: &Path) -> cs336::Result<PathBuf> {
        let options = BuildOptions { trace: Some(trace.to_path_buf()), trace_dir: Some(self.trace_dir()), out_dir: Some(self.out_dir()) };
        cs336::book::build(&Path::new(ROOT).join("book"), &options)
    }

    /// Builds a one-chapter book whose chapter is `chapter`, reading `trace` by default; returns
    /// the chapter's HTML.
    pub fn build_chapter(&self, trace: &Path, chapter: &str) -> Result<String, Vec<Problem>> {
        let book = self.dir.path().join("mini");
        std::fs::create_dir_all(book.join("src")).expect("book folder");
        std::fs::write(book.join("book.toml"), "[book]\ntitle = \"mini\"\n\n[build]\ncreate-missing = false\n").expect("book.toml");
        std::fs::write(book.join("src/SUMMARY.md"), "# Summary\n\n- [Chapter](chapter.md)\n").expect("SUMMARY.md");
        std::fs::write(book.join("src/chapter.md"), chapter).expect("chapter");
        let out = self.dir.path().join("mini-html");
        let options = BuildOptions { trace: Some(trace.to_path_buf()), trace_dir: Some(self.trace_dir()), out_dir: Some(out.clone()) };
        match cs336::book::build(&book, &options) {
            Ok(_) => Ok(std::fs::read_to_string(out.join("chapter.html")).expect("chapter page")),
            Err(cs336::Error::Book(problems)) => Err(problems),
            Err(other) => panic!("the build failed for another reason: {other}"),
        }
    }
}

/// The single problem a build reported.
pub fn only_problem(result: Result<String, Vec<Problem>>) -> Problem {
    let mut problems = result.expect_err("the build must fail");
    assert_eq!(problems.len(), 1, "{problems:#?}");
    problems.remove(0)
}
