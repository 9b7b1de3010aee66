//! Finding directives in a chapter's markdown. Markdown is parsed with pulldown-cmark only to
//! learn where code is (fenced and indented blocks, inline code) and where HTML comments are: a
//! directive written there is text, not a directive, and is left exactly as it is.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag};

use super::{Directive, parse, placement};

/// A directive found in a chapter.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Byte range of `{{…}}` in the chapter.
    pub span: Range<usize>,
    /// 1-based line of the chapter.
    pub line: usize,
    /// Byte range of the whole line (without its newline).
    pub line_span: Range<usize>,
    /// Whether nothing but whitespace shares its line.
    pub standalone: bool,
    /// The text as written, `{{…}}` included.
    pub text: String,
    pub parsed: Result<Directive, String>,
}

/// Markdown options as mdbook uses them, so code spans are found where mdbook will find them.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_DEFINITION_LIST
        | Options::ENABLE_GFM
}

/// Byte ranges where `{{` is not a directive: code blocks, inline code and HTML comments.
fn literal_ranges(markdown: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut html_block: Option<Range<usize>> = None;
    for (event, range) in Parser::new_ext(markdown, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) | Event::Code(_) => ranges.push(range),
            Event::Start(Tag::HtmlBlock) => html_block = Some(range),
            // The first line of an HTML block says whether the block is a comment.
            Event::Html(text) => {
                if let Some(block) = html_block.take()
                    && text.trim_start().starts_with("<!--")
                {
                    ranges.push(block);
                }
            }
            Event::InlineHtml(text) if text.starts_with("<!--") => ranges.push(range),
            _ => {}
        }
    }
    ranges
}

/// Every directive outside code, in order. `{{#…}}` belongs to mdbook's `links` preprocessor and
/// `\{{` is an escaped brace pair; both are skipped.
pub fn find(markdown: &str) -> Vec<Found> {
    let literal = literal_ranges(markdown);
    let in_literal = |at: usize| literal.iter().any(|r| r.contains(&at));
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = markdown[from..].find("{{") {
        let start = from + offset;
        from = start + 2;
        let escaped = markdown[..start].ends_with('\\');
        if escaped || in_literal(start) || markdown[start + 2..].starts_with('#') {
            continue;
        }
        let line_start = markdown[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = markdown[start..].find('\n').map_or(markdown.len(), |i| start + i);
        let (end, parsed) = match markdown[start..line_end].find("}}") {
            Some(close) => {
                let end = start + close + 2;
                (end, parse(&markdown[start + 2..end - 2]))
            }
            None => (line_end, Err("not closed by `}}` on the same line".to_string())),
        };
        from = end;
        let standalone = markdown[line_start..start].trim().is_empty() && markdown[end..line_end].trim().is_empty();
        let parsed = parsed.and_then(|d| {
            if d.is_block() && !standalone {
                Err("this directive must stand alone on its line".to_string())
            } else {
                Ok(d)
            }
        });
        found.push(Found {
            span: start..end,
            line: markdown[..start].matches('\n').count() + 1,
            line_span: line_start..line_end,
            standalone,
            text: markdown[start..end].to_string(),
            parsed,
        });
    }
    let spans: Vec<Range<usize>> = found.iter().map(|f| f.span.clone()).collect();
    for (f, why) in found.iter_mut().zip(placement::misplaced(markdown, &spans, options())) {
        if let (Ok(_), Some(why)) = (&f.parsed, why) {
            f.parsed = Err(why);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_directives_outside_code_only() {
        let md = "Prose {{value a.b}} and `{{value c.d}}` inline.\n\n```text\n{{value e.f}}\n```\n\n    {{value g.h}}\n\n\
                  <!-- {{value i.j}} -->\n\n{{code a}}\n\\{{value k.l}} and {{#include x.md}}\n";
        let found = find(md);
        let texts: Vec<&str> = found.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts, ["{{value a.b}}", "{{code a}}"]);
        assert_eq!(found[0].line, 1);
        assert!(!found[0].standalone);
        assert_eq!(&md[found[0].span.clone()], "{{value a.b}}");
        assert_eq!(found[1].line, 11);
        assert!(found[1].standalone);
        assert!(found[1].parsed.is_ok());
    }

    #[test]
    fn block_directives_must_stand_alone_and_close() {
        let found = find("See {{code a}} here.\n{{value a.b\n");
        assert_eq!(found.len(), 2);
        assert!(found[0].parsed.as_ref().unwrap_err().contains("stand alone"));
        assert!(found[1].parsed.as_ref().unwrap_err().contains("not closed"));
        assert_eq!(found[1].text, "{{value a.b");
    }
}
