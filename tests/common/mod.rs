//! Shared by the integration tests: a fresh in-process CPU run of the lecture (made once per test
//! binary), every trace committed under `trace/`, and books built into temporary folders.

#![allow(dead_code)]

pub mod process;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cs336::book::traces::{TraceChoice, Traces};
use cs336::book::{BookError, BuildOptions, Problem};
use cs336::device::{self, DeviceRequest};
use cs336::lecture::run;
use cs336::trace::{self, SectionRecord, Trace};

pub const SEED: u64 = 0;

pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Every timing in this test process from now on at the tests' budget (one call each, no
/// warm-up: `cs336::timing::budget`). The in-process runs call it first.
pub fn test_budget() {
    cs336::timing::budget::use_test_budget().unwrap_or_else(|e| panic!("{e}"));
}

/// All sections run once on the CPU, in this process, at the tests' budget.
pub fn fresh_trace() -> &'static Trace {
    static FRESH: OnceLock<Trace> = OnceLock::new();
    FRESH.get_or_init(|| {
        test_budget();
        let choice = device::choose(DeviceRequest::Cpu).expect("the CPU is always available");
        let mut trace = run::run_lecture(&[], &choice, SEED, Path::new(env!("CARGO_MANIFEST_DIR")), None, |_| {})
            .unwrap_or_else(|e| panic!("a fresh run of the lecture failed: {e}"));
        // Whether a section was measured on a busy machine depends on what else ran meanwhile;
        // the tests that need the mark set it themselves.
        for section in &mut trace.sections {
            section.disturbed = None;
        }
        trace
    })
}

/// The fresh run's trace written where `lecture --trace-dir DIR` writes this CPU's
/// (`DIR/lecture_02/<slug>.json`), for a test that needs a complete trace before it starts: the
/// one run of the test binary, not one more. Returns its path.
pub fn put_fresh_trace(trace_dir: &Path) -> PathBuf {
    let slug = cs336::device::cpu::trace_name().expect("this CPU has a trace name");
    let path = trace_dir.join(cs336::lecture::LECTURE).join(format!("{slug}.json"));
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
    trace::save(&path, fresh_trace()).unwrap_or_else(|e| panic!("the fresh trace is written: {e}"));
    path
}

/// `trace/`, or `CS336_TRACE_ROOT` where set (see [`committed_traces`]).
fn trace_root() -> PathBuf {
    match std::env::var_os("CS336_TRACE_ROOT") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(ROOT).join("trace"),
    }
}

/// Every `trace/**/*.json` in the repository, parsed (a file that does not parse fails the test).
/// `CS336_TRACE_ROOT=DIR` checks the traces under DIR instead: the GPU check runs these tests,
/// built here, on the trace it has just written on the GPU machine.
pub fn committed_traces() -> Vec<(PathBuf, Trace)> {
    traces_under(&trace_root())
}

/// Every `**/*.json` under `root`, parsed (a file that does not parse fails the test), leaving out
/// the readers' own what-ifs (`what-if/`, never committed: `lecture --set` writes them) and the
/// benchmark tables (`bench/`, which are not traces).
pub fn traces_under(root: &Path) -> Vec<(PathBuf, Trace)> {
    let root = root.to_path_buf();
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path
                    .file_name()
                    .is_some_and(|n| n == cs336::lecture::what_if::WHAT_IF_DIR || n == "bench")
                {
                    continue;
                }
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let t = trace::load(&path).unwrap_or_else(|e| panic!("committed trace does not load: {e}"));
                out.push((path, t));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The Python to use (`CS336_PYTHON`, else `python3`) if it can import `modules`, else None
/// after saying why `what` skipped; with `CS336_REQUIRE_PYTHON=1` (CI) a skip is a failure.
pub fn python_with(modules: &str, what: &str) -> Option<PathBuf> {
    let python = std::env::var_os("CS336_PYTHON").map_or_else(|| PathBuf::from("python3"), PathBuf::from);
    let probe = std::process::Command::new(&python)
        .args(["-c", &format!("import {modules}")])
        .output();
    let why = match probe {
        Ok(out) if out.status.success() => return Some(python),
        Ok(out) => String::from_utf8_lossy(&out.stderr)
            .trim()
            .lines()
            .last()
            .unwrap_or("")
            .to_string(),
        Err(e) => format!("{} cannot be started: {e}", python.display()),
    };
    let msg = format!("{what} skipped: {} cannot import {modules} ({why})", python.display());
    if std::env::var("CS336_REQUIRE_PYTHON").is_ok_and(|v| v == "1") {
        panic!("{msg}; CS336_REQUIRE_PYTHON=1 makes that a failure");
    }
    terminal_note(&msg);
    None
}

/// Writes `msg` (one line) to the terminal past the test harness's capture: libtest captures
/// `print!` and `eprint!`, not writes to the process's stderr, so a passing run shows it too.
pub fn terminal_note(msg: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), format!("{msg}\n").as_bytes());
}

/// [`terminal_note`], once per test binary for each distinct message (the tests of a binary
/// share the conditions a note reports, such as a missing GPU).
pub fn note_once(msg: &str) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if !said.iter().any(|m| m == msg) {
        said.push(msg.to_string());
        terminal_note(msg);
    }
}

/// A committed trace as the invariants see it.
pub struct Checkable {
    pub path: PathBuf,
    pub trace: Trace,
    /// Sections that older code recorded in a trace other than the default (set aside, unchecked).
    pub set_aside: Vec<String>,
}

/// The trace the book shows by default (`trace = "newest"` in `book/book.toml`): of the committed
/// traces, the one whose newest section was recorded last. It must be current in every section
/// (`tests/trace/committed_trace/`); the others need not be.
pub fn default_trace_path() -> PathBuf {
    default_trace_under(&trace_root())
}

/// [`default_trace_path`] for the traces under `root`.
pub fn default_trace_under(root: &Path) -> PathBuf {
    // The book's own choice, so the tests hold to it exactly the trace a reader is shown.
    let dir = root.join("lecture_02");
    let mut traces = Traces::new(&dir, TraceChoice::Newest, Path::new(ROOT));
    traces
        .path(None)
        .unwrap_or_else(|e| panic!("no default trace in {}: {e}", dir.display()))
}

/// The committed traces, with the sections that older code recorded set aside in every trace but
/// the book's default ([`default_trace_path`]): only the trace's own device can record them again
/// (a GPU, or another CPU model than this machine's), the book marks such sections instead of
/// failing, and no current invariant speaks for them. Says on the terminal which were set aside.
/// The default trace is never filtered: `tests/trace/committed_trace/` fails when it is stale.
pub fn checkable_traces() -> Vec<Checkable> {
    checkable_traces_under(&trace_root(), note_once)
}

/// [`checkable_traces`] for the traces under `root`, saying through `say` what it set aside. A
/// trace other than the default may also lack a section newer than itself: only its device can
/// record it, so it is set aside as well, and said to be not recorded on that device.
pub fn checkable_traces_under(root: &Path, say: impl Fn(&str)) -> Vec<Checkable> {
    let default = default_trace_under(root);
    let mut out = Vec::new();
    for (path, mut t) in traces_under(root) {
        let mut set_aside = Vec::new();
        if path != default {
            let (current, stale): (Vec<_>, Vec<_>) = t.sections.drain(..).partition(section_is_current);
            t.sections = current;
            set_aside = stale.into_iter().map(|s| s.id).collect();
            if !set_aside.is_empty() {
                say(&format!(
                    "note: {}: {} section(s) recorded by older code, not checked: {}",
                    path.display(),
                    set_aside.len(),
                    set_aside.join(", ")
                ));
            }
            let missing: Vec<String> = cs336::lecture::SECTIONS
                .iter()
                .map(|d| d.id.to_string())
                .filter(|id| !set_aside.contains(id) && t.section(id).is_none())
                .collect();
            if !missing.is_empty() {
                say(&format!(
                    "note: {}: {} section(s) not recorded on this device (newer than the trace), not checked: {}",
                    path.display(),
                    missing.len(),
                    missing.join(", ")
                ));
                set_aside.extend(missing);
            }
        }
        out.push(Checkable {
            path,
            trace: t,
            set_aside,
        });
    }
    out
}

/// Whether this build's code for the section is the code that recorded it.
pub fn section_is_current(s: &SectionRecord) -> bool {
    cs336::lecture::find(&s.id)
        .and_then(|def| trace::source::function_source(def.source, def.id).ok())
        .is_some_and(|code| code.hash() == s.source_hash)
}

/// The section `id` of a committed trace, or `None` when it was set aside (older code's, or not
/// recorded on that device). The default trace that lacks a section fails the test: it records
/// every section (`cargo run --release --bin lecture` records it again).
pub fn section_to_check<'t>(c: &'t Checkable, id: &str) -> Option<&'t SectionRecord> {
    match c.trace.section(id) {
        Some(s) => Some(s),
        None if c.set_aside.iter().any(|s| s == id) => None,
        None => panic!(
            "{} has no section `{id}`: it is missing, not set aside; record the trace again \
             (`cargo run --release --bin lecture` on its device)",
            c.path.display()
        ),
    }
}

/// Applies `check` to the section `id` of the fresh trace and of every committed trace that has
/// it (see [`checkable_traces`]; a trace missing it fails, see [`section_to_check`]). Fails unless
/// at least one committed trace was checked besides the fresh run; returns how many traces were.
pub fn for_each_trace(id: &str, check: impl Fn(&str, &Trace, &SectionRecord)) -> usize {
    let fresh = fresh_trace();
    let section = fresh
        .section(id)
        .unwrap_or_else(|| panic!("fresh run has no section `{id}`"));
    check("fresh CPU run", fresh, section);
    let mut n = 1;
    let traces = checkable_traces();
    for c in &traces {
        if let Some(s) = section_to_check(c, id) {
            check(&c.path.display().to_string(), &c.trace, s);
            n += 1;
        }
    }
    let paths: Vec<String> = traces.iter().map(|c| c.path.display().to_string()).collect();
    assert!(
        n > 1,
        "no committed trace holds a current section `{id}` to check (traces: {})",
        if paths.is_empty() {
            "none".to_string()
        } else {
            paths.join(", ")
        }
    );
    n
}

pub fn num(s: &SectionRecord, name: &str) -> f64 {
    let v = &s
        .values
        .get(name)
        .unwrap_or_else(|| panic!("section `{}` has no value `{name}`", s.id))
        .value;
    trace::number_from_json(v).unwrap_or_else(|| panic!("`{}.{name}` is not a number: {v}", s.id))
}

pub fn val<'a>(s: &'a SectionRecord, name: &str) -> &'a serde_json::Value {
    &s.values
        .get(name)
        .unwrap_or_else(|| panic!("section `{}` has no value `{name}`", s.id))
        .value
}

/// Flattens nested JSON arrays of numbers.
pub fn flat(v: &serde_json::Value) -> Vec<f64> {
    match v {
        serde_json::Value::Array(items) => items.iter().flat_map(flat).collect(),
        other => vec![trace::number_from_json(other).unwrap_or_else(|| panic!("not a number: {other}"))],
    }
}

pub fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(a.abs()).max(f64::MIN_POSITIVE)
}

/// A temporary folder holding `trace/lecture_02/<slug>.json` files.
pub struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    pub fn new() -> Workspace {
        Workspace {
            dir: tempfile::tempdir().expect("temporary folder"),
        }
    }

    pub fn trace_dir(&self) -> PathBuf {
        self.dir.path().join("trace").join("lecture_02")
    }

    /// The trace as its text, written as is: tests write hostile traces too (a stride of -1), which
    /// `trace::save` refuses to write, and the book must refuse them on reading.
    pub fn write_trace(&self, slug: &str, trace: &Trace) -> PathBuf {
        let path = self.trace_dir().join(format!("{slug}.json"));
        std::fs::create_dir_all(self.trace_dir()).expect("trace folder");
        let text = serde_json::to_string_pretty(trace).expect("a trace serialises");
        std::fs::write(&path, text + "\n").expect("trace written");
        path
    }

    pub fn out_dir(&self) -> PathBuf {
        self.dir.path().join("html")
    }

    /// Builds the repository's book from `trace` (the default for every page).
    /// Section code comes from the crate root by the book's default (its parent folder).
    pub fn build_real_book(&self, trace: &Path) -> Result<PathBuf, BookError> {
        let options = BuildOptions {
            trace: Some(trace.to_path_buf()),
            // Held to the code as `lecture` holds the trace it has just written.
            strict: Some(trace.to_path_buf()),
            trace_dir: Some(self.trace_dir()),
            out_dir: Some(self.out_dir()),
            source_root: None,
            baseline: None,
        };
        cs336::book::build(&Path::new(ROOT).join("book"), &options)
    }

    /// Builds the repository's book from the what-if trace `what_if`, each moved value beside its
    /// value in `baseline` (the device's own trace), as `lecture book --what-if` does.
    pub fn build_what_if_book(&self, what_if: &Path, baseline: &Path) -> Result<PathBuf, BookError> {
        let options = BuildOptions {
            trace: Some(what_if.to_path_buf()),
            strict: Some(what_if.to_path_buf()),
            trace_dir: Some(self.trace_dir()),
            out_dir: Some(self.out_dir()),
            source_root: None,
            baseline: Some(baseline.to_path_buf()),
        };
        cs336::book::build(&Path::new(ROOT).join("book"), &options)
    }

    /// Builds a one-chapter book whose chapter is `chapter`, reading `trace` by default and
    /// section code from this crate; returns the chapter's HTML.
    pub fn build_chapter(&self, trace: &Path, chapter: &str) -> Result<String, Vec<Problem>> {
        self.build_chapter_from(trace, chapter, Path::new(ROOT))
    }

    /// `build_chapter`, reading section code from the crate at `source_root`.
    pub fn build_chapter_from(&self, trace: &Path, chapter: &str, source_root: &Path) -> Result<String, Vec<Problem>> {
        self.build_mini(trace, "chapter", chapter, source_root)
    }

    /// `build_chapter` with the chapter's file named `NAME.md` (a section's id makes it that
    /// section's chapter).
    pub fn build_chapter_named(&self, trace: &Path, name: &str, chapter: &str) -> Result<String, Vec<Problem>> {
        self.build_mini(trace, name, chapter, Path::new(ROOT))
    }

    fn build_mini(&self, trace: &Path, name: &str, chapter: &str, source_root: &Path) -> Result<String, Vec<Problem>> {
        let book = self.dir.path().join("mini");
        std::fs::create_dir_all(book.join("src")).expect("book folder");
        std::fs::write(
            book.join("book.toml"),
            "[book]\ntitle = \"mini\"\n\n[build]\ncreate-missing = false\n",
        )
        .expect("book.toml");
        let summary = format!("# Summary\n\n- [Chapter]({name}.md)\n");
        std::fs::write(book.join("src/SUMMARY.md"), summary).expect("SUMMARY.md");
        std::fs::write(book.join(format!("src/{name}.md")), chapter).expect("chapter");
        let out = self.dir.path().join("mini-html");
        let options = BuildOptions {
            trace: Some(trace.to_path_buf()),
            // Held to the code as `lecture` holds the trace it has just written.
            strict: Some(trace.to_path_buf()),
            trace_dir: Some(self.trace_dir()),
            out_dir: Some(out.clone()),
            source_root: Some(source_root.to_path_buf()),
            baseline: None,
        };
        match cs336::book::build(&book, &options) {
            Ok(_) => Ok(std::fs::read_to_string(out.join(format!("{name}.html"))).expect("chapter page")),
            Err(BookError::Problems(problems)) => Err(problems),
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

/// The section `id` of `trace`, to edit.
pub fn section_mut<'t>(trace: &'t mut Trace, id: &str) -> &'t mut SectionRecord {
    trace
        .sections
        .iter_mut()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("no section `{id}`"))
}

/// The provenance box of a page.
pub fn provenance_box(html: &str) -> &str {
    let start = html
        .find("<div class=\"lecture-provenance\">")
        .expect("a provenance box");
    let end = html[start..].find("</div>").expect("the box ends") + start;
    &html[start..end]
}
