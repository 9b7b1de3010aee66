//! What a build will need, checked before `lecture` runs a section: the book's sources load, its
//! output folder is one a build may replace and can be written, and which sections its chapters
//! quote from the page default's trace. A run that would write its trace and only then find the
//! book could not be built (no book where it looked, a folder it may not write, a baseline
//! missing a quoted section) is refused before it starts, with nothing written.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use mdbook_preprocessor::book::BookItem;

use super::directive::{self, Directive};
use super::{BookError, BuildOptions, out_folder, out_folder_rule, swap};

/// What [`check`] found.
#[derive(Debug)]
pub struct Preflight {
    /// The output folder the build would replace.
    pub out: PathBuf,
    /// The sections the chapters quote from the page default's trace (directives that name no
    /// other trace): a trace held to the code must hold each of them.
    pub quoted_sections: BTreeSet<String>,
}

/// Everything [`super::build`] would refuse before it renders a chapter, checked without
/// writing anything (a folder made to prove the output's parent writable is removed at once).
pub fn check(book_root: &Path, options: &BuildOptions) -> Result<Preflight, BookError> {
    let failed = |msg: String| BookError::Build {
        root: book_root.to_path_buf(),
        msg,
    };
    if !book_root.join("book.toml").is_file() {
        return Err(failed(format!(
            "no book.toml there (the book's sources are looked for in `book/` under {}, the crate root: run \
             from the crate's folder, with `cargo run`, or with `--no-book`)",
            match options.source_root.as_deref().map(std::path::absolute) {
                Some(Ok(root)) => root.display().to_string(),
                // `absolute` reads the current folder: it fails when that folder was deleted.
                Some(Err(_)) => "the current folder, which no longer exists,".into(),
                None => "the folder book.toml names".into(),
            }
        )));
    }
    let (book, out) = super::load(book_root, options)?;
    let (setting, protected) = out_folder_rule(&book, options);
    let target = out_folder::check(&out, &setting, &protected)?;
    swap::check_writable_beside(&target).map_err(failed)?;
    let mut quoted_sections = BTreeSet::new();
    for item in book.book.iter() {
        let BookItem::Chapter(chapter) = item else { continue };
        for found in directive::find(&chapter.content) {
            if let Ok(d) = found.parsed
                && let Some(section) = quoted_section(&d)
            {
                quoted_sections.insert(section.to_string());
            }
        }
    }
    Ok(Preflight { out, quoted_sections })
}

/// The section a directive reads from the page default's trace, if it reads one there whole
/// (claims may ask whether a value exists, and a chart's sections are its own business).
fn quoted_section(d: &Directive) -> Option<&str> {
    match d {
        Directive::Value {
            address, trace: None, ..
        }
        | Directive::Table {
            address, trace: None, ..
        }
        | Directive::Check { address, trace: None } => Some(&address.section),
        Directive::Times { top, trace: None, .. } => Some(&top.section),
        Directive::Code { section, trace: None } | Directive::Device { section, trace: None } => Some(section),
        _ => None,
    }
}
