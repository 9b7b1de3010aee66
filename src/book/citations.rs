//! The citation pass: before the other directives are rendered, every `{{cite KEY}}` becomes a
//! link and `{{references}}` becomes the list of every entry with the chapters that cite it. It
//! runs over the whole book first because the References chapter needs to know who cites what.
//! A replacement never adds a line, so later problems keep their line numbers.

use std::ops::Range;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use mdbook_preprocessor::book::{Book, BookItem};

use super::bibliography::{Bibliography, Citing, cite_html, references_html};
use super::directive::{self, Directive};
use super::problem::{Cause, Problem};

/// Replaces the citation directives of every chapter; problems (an unknown key, no bibliography)
/// are added to `problems`, located by chapter and line. `src` is the book's source folder as
/// `book.toml` names it (for messages).
pub fn render_book(
    book: &mut Book,
    bib: Option<&Bibliography>,
    bib_path: &Path,
    src: &Path,
    mut title_of: impl FnMut(&Path) -> Option<String>,
    problems: &mut Vec<Problem>,
) {
    // Who cites what, in reading order.
    let mut cited_in: IndexMap<String, Vec<Citing>> = IndexMap::new();
    for item in book.iter() {
        let BookItem::Chapter(chapter) = item else { continue };
        let Some(path) = &chapter.path else { continue };
        let page = path.with_extension("html").to_string_lossy().replace('\\', "/");
        for found in directive::find(&chapter.content) {
            if let Ok(Directive::Cite { key }) = found.parsed {
                let list = cited_in.entry(key).or_default();
                if !list.iter().any(|c| c.page == page) {
                    // A chapter of one section is named by the section's title, as its heading
                    // will be; `SUMMARY.md` lists it by its id.
                    list.push(Citing {
                        title: title_of(path).unwrap_or_else(|| chapter.name.clone()),
                        page: page.clone(),
                    });
                }
            }
        }
    }
    book.for_each_mut(|item| {
        let BookItem::Chapter(chapter) = item else { return };
        let Some(path) = chapter.path.clone() else { return };
        let mut edits: Vec<(Range<usize>, String)> = Vec::new();
        for found in directive::find(&chapter.content) {
            let rendered = match &found.parsed {
                Ok(Directive::Cite { key }) => cite(bib, bib_path, key).map(|html| (found.span.clone(), html)),
                Ok(Directive::References) => match bib {
                    Some(bib) => Ok((found.line_span.clone(), references_html(bib, &cited_in))),
                    None => Err(no_bibliography(bib_path)),
                },
                _ => continue,
            };
            match rendered {
                Ok(edit) => edits.push(edit),
                Err(cause) => {
                    problems.push(Problem {
                        chapter: src.join(&path),
                        line: found.line,
                        directive: found.text.clone(),
                        cause,
                    });
                    // Reported once, here: the chapter's own rendering must not see it again.
                    edits.push((found.span.clone(), String::new()));
                }
            }
        }
        // Back to front, so earlier ranges stay valid.
        for (range, html) in edits.into_iter().rev() {
            chapter.content.replace_range(range, &html);
        }
    });
}

fn cite(bib: Option<&Bibliography>, bib_path: &Path, key: &str) -> Result<String, Cause> {
    let bib = bib.ok_or_else(|| no_bibliography(bib_path))?;
    let entry = bib.get(key).ok_or_else(|| Cause::UnknownReference {
        key: key.to_string(),
        bibliography: bib.path.clone(),
        known: bib.keys(),
    })?;
    Ok(cite_html(key, entry))
}

fn no_bibliography(path: &Path) -> Cause {
    Cause::NoBibliography {
        path: PathBuf::from(path),
    }
}
