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
pub fn literal_ranges(markdown: &str) -> Vec<Range<usize>> {
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

/// `ranges` sorted and with overlapping ones joined, so one pointer moving forward finds the one
/// that holds a position.
fn merged(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// Every directive outside code, in order. `{{#…}}` belongs to mdbook's `links` preprocessor and
/// `\{{` is an escaped brace pair; both are skipped.
///
/// One pass over the chapter: the line number, the line's bounds and the code ranges are carried
/// forward from one directive to the next, never searched for again from the start (counting
/// lines from the top at every directive took minutes for a chapter of 100,000 of them).
pub fn find(markdown: &str) -> Vec<Found> {
    let literal = merged(literal_ranges(markdown));
    let mut next_literal = 0;
    let mut found = Vec::new();
    let mut from = 0;
    // Newlines are counted up to `counted_to`; `line_start` is where the line holding it starts.
    let (mut line, mut counted_to, mut line_start) = (1, 0, 0);
    // The end of the line that holds `line_start`, once looked for.
    let mut line_end_seen: Option<usize> = None;
    while let Some(offset) = markdown[from..].find("{{") {
        let start = from + offset;
        from = start + 2;
        let skipped = &markdown[counted_to..start];
        line += skipped.matches('\n').count();
        if let Some(last) = skipped.rfind('\n') {
            line_start = counted_to + last + 1;
            line_end_seen = None;
        }
        counted_to = start;
        while literal.get(next_literal).is_some_and(|r| r.end <= start) {
            next_literal += 1;
        }
        let in_literal = literal.get(next_literal).is_some_and(|r| r.contains(&start));
        let escaped = markdown[..start].ends_with('\\');
        if escaped || in_literal || markdown[start + 2..].starts_with('#') {
            continue;
        }
        let line_end =
            *line_end_seen.get_or_insert_with(|| markdown[start..].find('\n').map_or(markdown.len(), |i| start + i));
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
            line,
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
