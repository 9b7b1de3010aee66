//! The book: an mdbook preprocessor that replaces directives in the chapters with values, code
//! and charts from a trace, and a function that builds the HTML book in-process.
//!
//! # Directives
//!
//! A directive is `{{KIND ARGS}}` in a chapter's prose (never inside code: a directive in a code
//! block or in backticks is shown as written). `{{#…}}` is left to mdbook's own `links`
//! preprocessor, which runs first.
//!
//! | Directive | Shows |
//! |---|---|
//! | `{{value SECTION.NAME[.PATH] [state=S] [format=F] [unit=U] [trace=SLUG]}}` | one value, formatted by its unit (inline) |
//! | `{{code SECTION [trace=SLUG]}}` | the section's function with each value (each state of a history) beside the line that recorded it |
//! | `{{chart ID [trace=SLUG]}}` | a chart from [`chart::CHARTS`] |
//! | `{{provenance [trace=SLUG]}}` | the device, and the run (commit, date, seed, compiler, build) of every section the page quotes |
//! | `{{compare SECTION.NAME[.PATH] [state=S] [format=F] [unit=U]}}` | the value in every trace of the folder, device by device (CPU traces first) |
//! | `{{table SECTION.NAME[.PATH] [state=S] [format=F] [unit=U] [trace=SLUG]}}` | an object, or a list of objects, as a table (never raw JSON in prose) |
//! | `{{if CLAIM}}` … `{{else if CLAIM}}` … `{{else}}` … `{{end}}` | keeps the text of the branch whose claim holds, inside a sentence or around paragraphs ([`directive::claim`]) |
//! | `{{assert CLAIM}}` | nothing; the build fails, naming the claim and its values, unless it holds |
//! | `{{check SECTION.NAME [trace=SLUG]}}` | a tick for a fact the section's code checked with `check!`, the claim and its line on hover (inline; `checks.rs`) |
//! | `{{cite KEY}}` | a link to a source of [`bibliography`] (`book/references.toml`), title, authors and year on hover (inline) |
//! | `{{references}}` | every source of the bibliography, in the file's order, with the chapters that cite it |
//!
//! `PATH` walks into a recorded object or list: `tensors_memory.fp8_e4m3_info.max`,
//! `tensor_slicing.row_0.1`, `optimizer.grads.layers.0.weight.0.0` (a key with dots, such as a
//! parameter name, is matched whole). Formats (see [`format::Format`]): `auto` (by unit: `2.25 GiB`,
//! `6.3e24 FLOP`, `160 ms`, `50%`, `40 billion`), `plain`, `int`, `sci[N]`, `eng[N]`, `si[N]`,
//! `iec[N]`, `fixed[N]`, `percent[N]`, `json`. A number inside a recorded object has no unit of its
//! own; `unit=FLOP/s` (or `bytes`, `FLOP`, `s`, `ratio`, `count`, `bytes/s`) gives it one. A list or
//! object is shown as compact JSON; with an explicit format every number in it takes that form
//! (`format=fixed1` on a list of losses). All but
//! `value` stand alone on their line.
//!
//! # Histories and states
//!
//! A section may record a value as a history (`record!(cx, history loss, …)`): the trace keeps its
//! earlier states (`history`, at most [`crate::trace::history::MAX_HISTORY`] states, evenly spaced
//! beyond that) besides the final one, and every record call in order (`steps`). Without `state=`
//! a directive quotes the final state; `state=first`, `state=last` or `state=K` (K counted from 0
//! over the history followed by the final state) quotes another. A state that does not exist fails
//! the build, saying how many there are (`{{if has …}}` is false instead). The code view shows each
//! state beside the line that recorded it (a line that recorded several, a loop, shows the last);
//! where the section's code is the code that ran, a value's `token` finds its line even after the
//! file was reformatted.
//!
//! # Provenance
//!
//! A trace says trace-wide what the device decides (device, host, OS) and per section what the run
//! that recorded it decided (time, seed, commit, compiler, build, command line): `lecture --section`
//! re-records some sections and leaves the others' provenance alone. `{{provenance}}` is rendered
//! after the page's other directives and describes the sections they quoted: one run in one line,
//! several runs listed with their sections (a page that quotes nothing describes the whole trace).
//! When the page quotes values a clock decided (kind `measured: clock` in the trace: times, rates, MFU, measured
//! ratios, the throughput sweep) from a run whose binary was built without optimisation, the box
//! says so.
//!
//! # Which trace
//!
//! `trace=SLUG` reads `<trace-dir>/SLUG.json`. Without it a page reads the default trace:
//! the one the `lecture` binary has just written when it builds the book, otherwise
//! `trace` under `[preprocessor.lecture]` in `book.toml`: `newest` (the trace whose newest section
//! was recorded last, [`crate::trace::Trace::created_at`]), a slug (`cpu-intel-r-xeon-r-processor-amx`,
//! `nvidia-h200`), or a file. `trace-dir` defaults to `../trace/lecture_02` (relative
//! to the book). mdbook's environment overrides work too:
//! `MDBOOK_PREPROCESSOR__LECTURE__TRACE=nvidia-h200 mdbook serve book`.
//!
//! # Where section code comes from
//!
//! The book depends on the trace alone. A section's code (for `{{code}}` and for the staleness
//! check) is read from the file the trace names (`source_file`, relative to the crate root), as
//! that file is now. The crate root is `source-root` under `[preprocessor.lecture]` (default `..`,
//! the book's parent folder). A trace is input: a `source_file` that is absolute, has `..` or
//! leads out of the root fails the build.
//!
//! # Strictness
//!
//! The build fails, naming chapter, line, directive, cause and the command to run, when a
//! directive is malformed, names a missing trace, section or value, or reads a section whose code
//! changed after the trace recorded it (the section's `source_hash` differs from the hash of its
//! function in the file now). That holds for one trace: the one `lecture` has just written, else
//! the folder's most complete and newest (a CPU's before a GPU's). Every other trace renders as it is, since only its own
//! device (a GPU lent now and then, another CPU) can record it again: a stale section shows its
//! values with a visible mark "recorded by older code (commit …)", and a value that older run
//! never recorded shows "not recorded by the run of commit …", listed once at the page's end. A
//! claim that needs such a value takes no branch and says so. A malformed trace fails the build
//! whichever it is.

pub mod address;
mod bench_tables;
mod bf16_verdict;
pub mod bibliography;
pub mod chart;
mod checks;
mod citations;
mod claims;
pub mod code_view;
mod device_names;
mod devices;
pub mod directive;
pub mod format;
pub mod html;
pub mod inputs;
pub mod kinds;
pub mod math;
pub mod out_folder;
pub mod preflight;
pub mod preprocessor;
pub mod problem;
pub mod provenance;
pub mod render;
pub mod sections;
mod swap;
mod tables;
mod tensor_grid;
mod times;
pub mod titles;
pub mod traces;
pub mod unrecorded;
pub mod what_if;

use std::path::{Path, PathBuf};

// The trace crate under the names this crate's modules use for it.
use cs336_trace as trace;
use cs336_trace::{atomic_file, console};

pub use preprocessor::LecturePreprocessor;
pub use problem::{BookError, Cause, Problem};

/// Where to build and which trace to use.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// The default trace for every page (else the book's `trace` setting).
    pub trace: Option<PathBuf>,
    /// The trace held to the code (else the folder's most complete, newest trace): `lecture`
    /// passes the one it has just written. Every other trace renders as it is.
    pub strict: Option<PathBuf>,
    /// The folder of traces that `compare` reads (else `trace-dir` of `book.toml`).
    pub trace_dir: Option<PathBuf>,
    /// The HTML's folder (else `build-dir` of `book.toml`, relative to the book).
    pub out_dir: Option<PathBuf>,
    /// The crate root, where the files that traces name as section sources are (else
    /// `source-root` of `book.toml`, by default the book's parent folder).
    pub source_root: Option<PathBuf>,
    /// For a what-if book (`trace` is a what-if's): the device's own trace, whose values every
    /// value the what-if moved is shown beside, and whose givens the banner names as defaults.
    pub baseline: Option<PathBuf>,
}

/// Builds the HTML book at `book_root` in-process and returns the path of its `index.html`.
///
/// The book is built into a fresh folder beside the output folder and swapped in (the old one
/// renamed aside, the new one into place, the old one removed), under a lock on the output
/// folder: concurrent builds take turns and a reader never sees half a book. A failed build
/// leaves the previous book as it was. An output folder that holds the book's or the lecture's
/// sources, or that no build made, is refused before anything is written ([`out_folder`]).
pub fn build(book_root: &Path, options: &BuildOptions) -> Result<PathBuf, BookError> {
    let failed = |e: anyhow::Error| match e.downcast::<BookError>() {
        // mdbook hands errors back as anyhow; ours (the problems found) come back as they went in.
        Ok(ours) => ours,
        Err(other) => BookError::Build {
            root: book_root.to_path_buf(),
            msg: format!("{other:#}"),
        },
    };
    let io_failed = |e: &dyn std::fmt::Display| BookError::Build {
        root: book_root.to_path_buf(),
        msg: e.to_string(),
    };
    let (mut book, out) = load(book_root, options)?;
    // The swap replaces `target` whole: it is checked before anything is written, and again
    // just before the swap, under the lock (a build takes minutes).
    let (setting, protected) = out_folder_rule(&book, options);
    let guard = || out_folder::check(&out, &setting, &protected);
    let target = guard()?;
    // `html/` inside the output folder when the book has several renderers.
    let html_in_out = book
        .build_dir_for("html")
        .strip_prefix(book.root.join(&book.config.build.build_dir))
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let _lock = crate::atomic_file::lock_beside(&target).map_err(|e| io_failed(&e))?;
    let fresh = swap::fresh_folder(&target).map_err(|e| io_failed(&e))?;
    book.config.build.build_dir = fresh.path().to_path_buf();
    // Replaces the `[preprocessor.lecture]` command from book.toml (same name) with this
    // process's own preprocessor: no second process, no second compile.
    book.with_preprocessor(LecturePreprocessor {
        trace: options.trace.clone(),
        strict: options.strict.clone(),
        trace_dir: options.trace_dir.clone(),
        source_root: options.source_root.clone(),
        baseline: options.baseline.clone(),
    });
    book.build().map_err(failed)?;
    // Only a folder holding this mark is ever replaced (see [`out_folder`]).
    let marker = fresh.path().join(out_folder::MARKER);
    std::fs::write(&marker, out_folder::MARKER_TEXT)
        .map_err(|e| io_failed(&format_args!("{}: {e}", marker.display())))?;
    if guard()? != target {
        // A link moved while the book was built: build again rather than swap into either.
        return Err(io_failed(&format_args!(
            "{} now leads elsewhere than when the build began",
            out.display()
        )));
    }
    swap::into_place(fresh, &target).map_err(|e| io_failed(&e))?;
    Ok(out.join(html_in_out).join("index.html"))
}

/// Where the output folder was named, and the folders it must neither be nor hold (see
/// [`out_folder`]).
/// The book's sources, loaded, and the output folder `options` give it (absolute): where a
/// build and its preflight both start.
fn load(book_root: &Path, options: &BuildOptions) -> Result<(mdbook_driver::MDBook, PathBuf), BookError> {
    let failed = |msg: String| BookError::Build {
        root: book_root.to_path_buf(),
        msg,
    };
    // mdbook reads the chapters whole and unchecked: a pipe or a device there is refused first.
    inputs::check(book_root).map_err(|e| failed(e.to_string()))?;
    let mut book = mdbook_driver::MDBook::load(book_root).map_err(|e| failed(format!("{e:#}")))?;
    if let Some(dir) = &options.out_dir {
        book.config.build.build_dir = dir.clone();
    }
    let out = book.root.join(&book.config.build.build_dir);
    let out = std::path::absolute(&out).unwrap_or(out);
    Ok((book, out))
}

fn out_folder_rule(book: &mdbook_driver::MDBook, options: &BuildOptions) -> (String, Vec<out_folder::Protected>) {
    // Named where the user can change it.
    let setting = if options.out_dir.is_some() {
        "the command, as its output folder".to_string()
    } else if std::env::var_os("MDBOOK_BUILD__BUILD_DIR").is_some() {
        "MDBOOK_BUILD__BUILD_DIR in the environment".to_string()
    } else {
        format!("`build-dir` under [build] in {}", book.root.join("book.toml").display())
    };
    // Where the preprocessor will read code and traces: the options, else book.toml, else its
    // defaults.
    let setting_path = |given: &Option<PathBuf>, key: &str, default: &str| {
        given.clone().unwrap_or_else(|| {
            let key = format!("preprocessor.{}.{key}", preprocessor::NAME);
            let value: Option<String> = book.config.get(&key).ok().flatten();
            book.root.join(value.as_deref().unwrap_or(default))
        })
    };
    let protected = [
        ("the book's chapters", book.source_dir()),
        ("the book (its book.toml)", book.root.clone()),
        (
            "the crate root (the lecture's code)",
            setting_path(&options.source_root, "source-root", preprocessor::DEFAULT_SOURCE_ROOT),
        ),
        (
            "the traces",
            setting_path(&options.trace_dir, "trace-dir", preprocessor::DEFAULT_TRACE_DIR),
        ),
    ]
    .map(|(what, path)| out_folder::Protected { what, path });
    (setting, protected.into())
}
