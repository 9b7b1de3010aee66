//! What mdbook reads beyond the book's `src` folder, checked before it reads it: the chapters
//! `SUMMARY.md` names (a link may be absolute, or climb out with `..`), and the files a chapter
//! pulls in with mdbook's `links` preprocessor (`{{#include PATH}}`, `{{#rustdoc_include PATH}}`,
//! `{{#playground PATH}}`), which runs before ours and reads any path it is given, `/etc/passwd`
//! included, following links, nesting up to ten deep. Every such file must resolve inside the
//! book's folder, be a regular file of bounded size, and the includes must not multiply without
//! end (a file that includes itself ten times is expanded 10¹⁰ times).

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

use super::{BadInput, MAX_BOOK_FILE_BYTES, bad, inside};
use crate::trace::console::shorten;
use crate::trace::io::read_limited;

/// mdbook's own pattern for its links (`mdbook-driver`'s `links.rs`), so that this check sees
/// exactly the links mdbook expands: an escaped `\{{#…}}` is text, not a link.
static LINK: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?x)
        \\\{\{\#.*\}\}
        |
        \{\{\s*
        \#([a-zA-Z0-9_]+)
        \s+
        ([^}]+)
        \}\}",
    )
    .ok()
});

/// mdbook expands links this many levels deep (its `MAX_LINK_NESTED_DEPTH`); the links of the
/// deepest level are still read.
const MAX_DEPTH: usize = 10;

/// At most this many includes are read in all, counted as mdbook expands them (a file included
/// twice counts twice): a book has none, or a few dozen.
pub const MAX_INCLUDES: usize = 1000;

/// At most this many bytes of included text in all, as mdbook expands them.
pub const MAX_INCLUDED_BYTES: u64 = 64 << 20;

/// Checks the chapters `SUMMARY.md` in `src` names, and everything they include, against the
/// book's folder `home` (resolved).
pub fn check(src: &Path, home: &Path) -> Result<(), BadInput> {
    let summary_path = src.join("SUMMARY.md");
    if !summary_path.exists() {
        // mdbook says what is missing.
        return Ok(());
    }
    let summary =
        read_limited(&summary_path, MAX_BOOK_FILE_BYTES, "a chapter").map_err(|e| bad(&summary_path, e.to_string()))?;
    // A summary mdbook cannot parse is mdbook's to report, before it reads any chapter.
    let Ok(summary) = mdbook_summary::parse_summary(&summary) else {
        return Ok(());
    };
    let mut chapters = Vec::new();
    let items = summary
        .prefix_chapters
        .iter()
        .chain(&summary.numbered_chapters)
        .chain(&summary.suffix_chapters);
    collect(items, &mut chapters);
    let mut reads = Reads {
        home,
        texts: HashMap::new(),
        includes: 0,
        bytes: 0,
    };
    for location in chapters {
        // As mdbook loads a chapter: an absolute location as it is, else under `src`.
        let path = src.join(&location);
        if !path.exists() {
            within_when_made(&path, home)?;
            continue;
        }
        inside(&path, home)?;
        let text = reads.text(&path)?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        reads.links(&text, &base, &path, &path, 0)?;
    }
    Ok(())
}

fn collect<'a>(items: impl Iterator<Item = &'a mdbook_summary::SummaryItem>, out: &mut Vec<PathBuf>) {
    for item in items {
        if let mdbook_summary::SummaryItem::Link(link) = item {
            out.extend(link.location.clone());
            collect(link.nested_items.iter(), out);
        }
    }
}

/// A chapter not there yet (mdbook makes it when `create-missing` is on) would be made inside the
/// book: below its nearest folder that exists, which lies inside, with no `..` to climb out.
fn within_when_made(path: &Path, home: &Path) -> Result<(), BadInput> {
    let mut existing = path;
    while !existing.exists() {
        match existing.parent() {
            Some(parent) => existing = parent,
            None => return Ok(()),
        }
    }
    let rest = path.strip_prefix(existing).unwrap_or(path);
    let there = existing
        .canonicalize()
        .map_err(|e| bad(path, format!("cannot be resolved: {e}")))?;
    let climbs = rest.components().any(|c| matches!(c, Component::ParentDir));
    if there.starts_with(home) && !climbs {
        return Ok(());
    }
    Err(bad(
        path,
        format!(
            "is a chapter SUMMARY.md names that does not exist, and would be made outside the book's folder {} \
             (at {}): a chapter lies inside it. Name a file inside the book.",
            home.display(),
            there.join(rest).display()
        ),
    ))
}

/// The files read so far (each once) and what the expansion has cost.
struct Reads<'a> {
    home: &'a Path,
    texts: HashMap<PathBuf, std::rc::Rc<str>>,
    includes: usize,
    bytes: u64,
}

impl Reads<'_> {
    fn text(&mut self, path: &Path) -> Result<std::rc::Rc<str>, BadInput> {
        let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if let Some(text) = self.texts.get(&key) {
            return Ok(text.clone());
        }
        let text: std::rc::Rc<str> = read_limited(path, MAX_BOOK_FILE_BYTES, "a file of the book")
            .map_err(|e| bad(path, e.to_string()))?
            .into();
        self.texts.insert(key, text.clone());
        Ok(text)
    }

    /// Checks every link in `text` (read from `file`, its links relative to `base`) that mdbook
    /// reads, and, as mdbook does, the links in what each includes.
    fn links(&mut self, text: &str, base: &Path, file: &Path, chapter: &Path, depth: usize) -> Result<(), BadInput> {
        let Some(pattern) = LINK.as_ref() else {
            return Ok(());
        };
        for cap in pattern.captures_iter(text) {
            let (Some(kind), Some(rest)) = (cap.get(1), cap.get(2)) else {
                continue; // escaped: shown as text
            };
            let Some(arg) = rest.as_str().split_whitespace().next() else {
                continue;
            };
            let target = match kind.as_str() {
                // `PATH:LINES` or `PATH:ANCHOR`.
                "include" | "rustdoc_include" => arg.split(':').next().unwrap_or(arg),
                "playground" | "playpen" => arg,
                _ => continue, // `title`, and names mdbook does not know: nothing is read
            };
            let link = cap.get(0).map_or("", |m| m.as_str());
            let joined = base.join(target);
            self.check_target(&joined, link, file, chapter)?;
            self.includes += 1;
            if self.includes > MAX_INCLUDES {
                return Err(bad(
                    chapter,
                    format!(
                        "its includes ({{{{#include …}}}} and the like, counted as mdbook expands them, nested ones \
                         again each time) come to more than {MAX_INCLUDES}, the most a book may have (a file that \
                         includes itself?)"
                    ),
                ));
            }
            let included = self.text(&joined)?;
            self.bytes += included.len() as u64;
            if self.bytes > MAX_INCLUDED_BYTES {
                return Err(bad(
                    chapter,
                    format!(
                        "the files its includes read come to more than {} MiB as mdbook expands them, the most a \
                         book may have",
                        MAX_INCLUDED_BYTES >> 20
                    ),
                ));
            }
            if depth < MAX_DEPTH {
                let nested_base = joined.parent().map(Path::to_path_buf).unwrap_or_default();
                self.links(&included, &nested_base, &joined, chapter, depth + 1)?;
            }
        }
        Ok(())
    }

    /// The file a link reads lies inside the book and is a regular file of bounded size.
    fn check_target(&self, target: &Path, link: &str, file: &Path, chapter: &Path) -> Result<(), BadInput> {
        let from = if file == chapter {
            String::new()
        } else {
            format!(" (in {}, which the chapter includes)", file.display())
        };
        let link = shorten(link, 200);
        let refuse = |why: String| Err(bad(chapter, format!("`{link}`{from} {why}")));
        let resolved = match target.canonicalize() {
            Ok(resolved) => resolved,
            Err(e) => return refuse(format!("reads {}, which cannot be resolved: {e}", target.display())),
        };
        if !resolved.starts_with(self.home) {
            return refuse(format!(
                "reads {}, outside the book's folder {}: the book publishes only what lies inside it. Copy the file \
                 into the book, or remove the include.",
                resolved.display(),
                self.home.display()
            ));
        }
        let meta = std::fs::metadata(&resolved)
            .map_err(|e| bad(chapter, format!("`{link}`{from} reads {}: {e}", resolved.display())))?;
        if !meta.is_file() {
            return refuse(format!(
                "reads {}, which is not a regular file (a folder, a pipe or a device?)",
                resolved.display()
            ));
        }
        Ok(())
    }
}
