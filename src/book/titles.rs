//! A chapter that is one section of the lecture (`book/src/ID.md`) takes its title from that
//! section. The title is declared once, in the section's `sections!` line in the code, and every
//! trace records it; the preprocessor names the chapter with it (the table of contents, the page's
//! title) and writes it as the page's heading. So neither the chapter nor `SUMMARY.md` repeats it:
//! the chapter starts with its first paragraph, and its `SUMMARY.md` entry reads `[ID](ID.md)`.

use std::path::Path;

use super::html::escape;
use super::traces::Traces;

/// The title of the section a chapter is, from the book's default trace; `None` for a chapter that
/// is not one section (the introduction, a chapter of several sections) or when there is no trace
/// (the build then fails on the chapter's directives, saying why).
pub fn section_title(traces: &mut Traces, chapter: &Path) -> Option<String> {
    let id = chapter.file_stem()?.to_str()?;
    let path = traces.path(None).ok()?;
    let trace = traces.load(&path).ok()?;
    trace.section(id).map(|s| s.title.clone())
}

/// `content` under the heading `title` (escaped: a trace's strings never become markup).
pub fn with_heading(title: &str, content: &str) -> String {
    format!("# {}\n\n{content}", escape(title))
}

/// Whether the chapter starts with a heading of its own: a chapter of one section must not, so
/// its title is declared once.
pub fn has_own_heading(content: &str) -> bool {
    content
        .lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.trim_start().starts_with("# "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heading_is_escaped_and_an_own_heading_is_seen() {
        assert_eq!(with_heading("A <b> & c", "text\n"), "# A &lt;b&gt; &amp; c\n\ntext\n");
        assert!(has_own_heading("\n# Title\n\ntext"));
        assert!(!has_own_heading("text\n\n# Later\n"));
        assert!(!has_own_heading("## A section heading first\n"));
    }
}
