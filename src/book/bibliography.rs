//! The book's bibliography: every source the original lecture links, in `book/references.toml`.
//! Chapters cite an entry with `{{cite KEY}}` (a plain external link whose hover shows title,
//! authors and year) and the References chapter lists them all with `{{references}}`. The file
//! is input like a trace: a malformed file or entry fails the build naming the file, the line or
//! the key, and the field.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Deserialize;

use super::html::escape;

/// The file's name under the book's root, unless `bibliography` under `[preprocessor.lecture]`
/// names another.
pub const DEFAULT_FILE: &str = "references.toml";

/// What kind of source an entry is (the References chapter says it beside the title).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Paper,
    Datasheet,
    Documentation,
    Blog,
    Tutorial,
    Encyclopedia,
    Handout,
    Figure,
    #[serde(rename = "q&a")]
    QAndA,
}

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::Paper => "paper",
            Kind::Datasheet => "datasheet",
            Kind::Documentation => "documentation",
            Kind::Blog => "blog post",
            Kind::Tutorial => "tutorial",
            Kind::Encyclopedia => "encyclopedia article",
            Kind::Handout => "handout",
            Kind::Figure => "figure",
            Kind::QAndA => "question and answers",
        }
    }
}

/// One source.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub title: String,
    pub authors: Vec<String>,
    pub year: u16,
    /// `year` is the year the page was read, not a publication year (a living page).
    #[serde(default)]
    pub accessed: bool,
    pub url: String,
    pub kind: Kind,
    /// The functions of the original `lecture_02.py` that link the source.
    #[serde(default)]
    pub lecture_sections: Vec<String>,
}

/// Authors shown by name before "et al.".
const AUTHORS_SHOWN: usize = 3;

impl Entry {
    /// "A", "A and B", "A, B and C", or "A et al." beyond three.
    pub fn authors_text(&self) -> String {
        match self.authors.as_slice() {
            [] => String::new(),
            [one] => one.clone(),
            many if many.len() <= AUTHORS_SHOWN => {
                let (last, rest) = many.split_last().unwrap_or((&many[0], &[]));
                format!("{} and {last}", rest.join(", "))
            }
            [first, ..] => format!("{first} et al."),
        }
    }

    /// "2017", or "accessed 2025" for a living page.
    pub fn year_text(&self) -> String {
        if self.accessed {
            format!("accessed {}", self.year)
        } else {
            self.year.to_string()
        }
    }

    /// The hover text of a citation: title, authors, year.
    pub fn hover(&self) -> String {
        format!("{} — {} ({})", self.title, self.authors_text(), self.year_text())
    }
}

/// The entries, in the file's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Bibliography {
    pub path: PathBuf,
    pub entries: IndexMap<String, Entry>,
}

#[derive(Debug, thiserror::Error)]
pub enum BibliographyError {
    #[error("cannot read the bibliography {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },

    #[error("the bibliography {} is refused: {msg}", path.display())]
    Refused { path: PathBuf, msg: String },

    #[error("the bibliography {} is not valid: line {line}: {msg}", path.display())]
    Parse { path: PathBuf, line: usize, msg: String },

    #[error("the bibliography {}, entry `{key}`: {msg}", path.display())]
    Entry { path: PathBuf, key: String, msg: String },

    #[error("the bibliography {} has no entries", path.display())]
    Empty { path: PathBuf },
}

/// The most a bibliography may hold: ours is a few kilobytes; `/dev/zero` named there is refused.
pub const MAX_BYTES: u64 = 4 << 20;

impl Bibliography {
    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<Bibliography, BibliographyError> {
        let text = crate::trace::io::read_limited(path, MAX_BYTES, "a bibliography").map_err(|e| match e {
            crate::trace::io::Limited::Io(source) => BibliographyError::Read {
                path: path.to_path_buf(),
                source,
            },
            crate::trace::io::Limited::Refused(msg) => BibliographyError::Refused {
                path: path.to_path_buf(),
                msg,
            },
        })?;
        Bibliography::parse(path, &text)
    }

    /// Parses `text` (the contents of `path`, which messages name).
    pub fn parse(path: &Path, text: &str) -> Result<Bibliography, BibliographyError> {
        // Each source is a table: serde would also take one written as an array of its fields.
        if let Ok(table) = toml::from_str::<toml::Table>(text)
            && let Some((key, other)) = table.iter().find(|(_, v)| !v.is_table())
        {
            return Err(BibliographyError::Entry {
                path: path.to_path_buf(),
                key: key.clone(),
                msg: format!(
                    "is {} `{}`, where a source is a table (`[{key}]` with its title, authors, year, url and kind)",
                    match other.type_str() {
                        "array" => "an array",
                        "integer" => "an integer",
                        kind => kind,
                    },
                    crate::console::shorten(&other.to_string(), 80)
                ),
            });
        }
        let entries: IndexMap<String, Entry> = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map_or(0, |span| text[..span.start.min(text.len())].matches('\n').count() + 1);
            BibliographyError::Parse {
                path: path.to_path_buf(),
                line,
                // serde's words for a mismatch name Rust types; TOML's names tables and arrays.
                msg: crate::trace::strict::plain(e.message())
                    .replace("an object", "a table")
                    .replace("a list", "an array"),
            }
        })?;
        if entries.is_empty() {
            return Err(BibliographyError::Empty {
                path: path.to_path_buf(),
            });
        }
        for (key, entry) in &entries {
            check(key, entry).map_err(|msg| BibliographyError::Entry {
                path: path.to_path_buf(),
                key: key.clone(),
                msg,
            })?;
        }
        Ok(Bibliography {
            path: path.to_path_buf(),
            entries,
        })
    }

    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// The keys, comma-separated, for messages.
    pub fn keys(&self) -> String {
        self.entries.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
    }
}

/// What the book needs of an entry: a key a directive can name, text to show, and a link that
/// leaves the book for the web (never `javascript:` or a path into the book).
fn check(key: &str, entry: &Entry) -> Result<(), String> {
    if !key
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        return Err("a key is lowercase letters, digits and `_` (it is written in `{{cite KEY}}`)".into());
    }
    if entry.title.trim().is_empty() {
        return Err("`title` is empty".into());
    }
    if entry.authors.is_empty() || entry.authors.iter().any(|a| a.trim().is_empty()) {
        return Err("`authors` needs at least one name, and no empty one".into());
    }
    if !(1900..=2100).contains(&entry.year) {
        return Err(format!("`year` {} is not a year from 1900 to 2100", entry.year));
    }
    let rest = entry
        .url
        .strip_prefix("https://")
        .or_else(|| entry.url.strip_prefix("http://"));
    if rest.is_none_or(|r| r.is_empty() || r.starts_with('/') || r.contains(char::is_whitespace)) {
        return Err(format!(
            "`url` `{}` is not an http(s) address with a host and no spaces",
            entry.url
        ));
    }
    Ok(())
}

/// A citation: a plain link to the source, its title as text, title, authors and year on hover.
/// The text is escaped for markdown too: it stands inline in prose.
pub fn cite_html(key: &str, entry: &Entry) -> String {
    use super::html::escape_inline;
    format!(
        "<a class=\"lecture-cite\" href=\"{}\" title=\"{}\" data-key=\"{}\">{}</a>",
        escape_inline(&entry.url),
        escape_inline(&entry.hover()),
        escape_inline(key),
        escape_inline(&entry.title)
    )
}

/// A chapter that cites entries, for the References chapter's links back.
#[derive(Debug, Clone, PartialEq)]
pub struct Citing {
    pub title: String,
    /// The chapter's page, relative to the book's root (`tensors_memory.html`).
    pub page: String,
}

/// The References chapter's list: every entry in the file's order, each with its kind, authors,
/// year, address, and the chapters that cite it. One line (see `html.rs`).
pub fn references_html(bib: &Bibliography, cited_in: &IndexMap<String, Vec<Citing>>) -> String {
    let mut items = String::new();
    for (key, entry) in &bib.entries {
        let back = cited_in.get(key).map_or(String::new(), |chapters| {
            let links: Vec<String> = chapters
                .iter()
                .map(|c| format!("<a href=\"{}\">{}</a>", escape(&c.page), escape(&c.title)))
                .collect();
            format!(
                " <span class=\"lecture-cited-in\">Cited in {}.</span>",
                links.join(", ")
            )
        });
        // "Title. Authors", but "Title? Authors" when the title ends a sentence itself.
        let stop = if entry.title.ends_with(['.', '?', '!']) {
            ""
        } else {
            "."
        };
        items.push_str(&format!(
            "<li id=\"ref-{k}\" data-key=\"{k}\"><a class=\"lecture-cite\" href=\"{url}\">{title}</a>{stop} {authors} ({year}), {kind}. \
             <span class=\"lecture-url\">{url}</span>{back}</li>",
            k = escape(key),
            url = escape(&entry.url),
            title = escape(&entry.title),
            authors = escape(&entry.authors.join(", ")),
            year = escape(&entry.year_text()),
            kind = escape(entry.kind.label()),
        ));
    }
    format!("<ol class=\"lecture-references\">{items}</ol>")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(authors: &[&str], accessed: bool) -> Entry {
        Entry {
            title: "T".into(),
            authors: authors.iter().map(|a| a.to_string()).collect(),
            year: 2017,
            accessed,
            url: "https://example.org/x".into(),
            kind: Kind::Paper,
            lecture_sections: Vec::new(),
        }
    }

    #[test]
    fn mismatches_are_said_in_toml_words() {
        let path = Path::new("references.toml");
        let err = Bibliography::parse(path, "a = [1]\n").unwrap_err().to_string();
        assert!(
            err.contains("entry `a`: is an array `[1]`, where a source is a table"),
            "{err}"
        );
        let err = Bibliography::parse(path, "[a]\ntitle = 3\n").unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("the number `3`"), "{err}");
    }

    #[test]
    fn authors_are_listed_up_to_three_then_et_al() {
        assert_eq!(entry(&["A"], false).authors_text(), "A");
        assert_eq!(entry(&["A", "B"], false).authors_text(), "A and B");
        assert_eq!(entry(&["A", "B", "C"], false).authors_text(), "A, B and C");
        assert_eq!(entry(&["A", "B", "C", "D"], false).authors_text(), "A et al.");
        assert_eq!(entry(&["A"], true).hover(), "T — A (accessed 2017)");
    }

    #[test]
    fn urls_must_leave_the_book_for_the_web() {
        for url in [
            "javascript:alert(1)",
            "chapter.html",
            "https://",
            "https:///x",
            "https://a b",
        ] {
            let mut e = entry(&["A"], false);
            e.url = url.into();
            assert!(check("k", &e).is_err(), "{url}");
        }
        assert!(check("Bad-Key", &entry(&["A"], false)).is_err());
        assert!(check("good_key_2", &entry(&["A"], false)).is_ok());
    }
}
