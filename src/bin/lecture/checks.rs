//! What `lecture` checks before a section runs, so that a run never writes its trace and only then
//! fails for a reason it could have found first: the traces the book will read, and the book it
//! would build (its sources, its folder, the sections its chapters quote).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use cs336::console::{self, terminal_safe};
use cs336::trace;

use crate::root;

/// The book a run builds from the trace it has just written at `path`.
pub fn book_options(path: &Path) -> cs336::book::BuildOptions {
    cs336::book::BuildOptions {
        trace: Some(path.to_path_buf()),
        strict: Some(path.to_path_buf()),
        trace_dir: path.parent().map(Path::to_path_buf),
        out_dir: None,
        source_root: Some(root()),
        baseline: None,
    }
}

/// Before any section runs, the book a run would build after writing its trace: its sources
/// load, its folder can be written, and the trace will hold every section its chapters quote.
/// A run that found out after writing would leave a trace and no book.
pub fn check_book(options: &cs336::book::BuildOptions, will_hold: &BTreeSet<String>) -> Result<()> {
    let book_root = options.source_root.clone().unwrap_or_else(root).join("book");
    let found = cs336::book::preflight::check(&book_root, options)
        .context("the book could not be built after the run, so nothing was run")?;
    let missing: Vec<&str> = found
        .quoted_sections
        .difference(will_hold)
        .map(String::as_str)
        .collect();
    if let Some(first) = missing.first() {
        bail!(
            "the book quotes {} section(s) that the trace would not hold: {}; record the whole lecture first \
             (`cargo run --release --bin lecture`, or `--section {first}` and the others), or run with `--no-book`. \
             Nothing was run.",
            missing.len(),
            console::shorten(&missing.join(", "), 200)
        );
    }
    Ok(())
}

/// Every other trace in `path`'s folder loads: the book shows them all (`{{compare}}`), so when
/// it will be built an unreadable one stops the run before it starts; otherwise it is a warning.
pub fn check_neighbours(path: &Path, book: bool) -> Result<()> {
    let Some(dir) = path.parent() else { return Ok(()) };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut others: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file() && p.file_name() != path.file_name())
        // The book passes over JSON that is no trace at all, and so does this check.
        .filter(|p| !trace::io::is_foreign_json(p))
        .collect();
    others.sort();
    for other in others {
        let Err(e) = trace::load_named(&other) else { continue };
        if book {
            bail!(
                "{e}\nThe book shows every trace in {} (`{{{{compare}}}}`), so it would not build: fix or move that \
                 file, or run with `--no-book`. Nothing was run.",
                dir.display()
            );
        }
        console::warn(format_args!(
            "warning: {}\n  (the book shows every trace in that folder and will not build until it is fixed or moved)",
            terminal_safe(&e.to_string())
        ));
    }
    Ok(())
}
