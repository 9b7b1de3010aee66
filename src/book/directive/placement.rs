//! Where a directive cannot stand. A value becomes HTML (a `<span>` with escaped text), which
//! only works where markdown takes inline HTML. Inside a link's destination or title, or inside
//! an HTML tag, it would break the link or tag without a word; in a heading it would reach
//! mdbook's search, which shows headings as HTML (`html.rs` says why that matters). Such a
//! directive is an error that says where the value can go instead.
//!
//! To see the chapter as the author meant it, each directive is replaced by a marker without
//! spaces or markdown punctuation and the chapter is parsed as mdbook parses it; the markers then
//! show where each directive sits.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// Starts with a digit, so that `<marker>` is neither an HTML tag nor an autolink.
const MARKER: &str = "0lecturedirective";

/// For each span of `markdown` holding a directive: why it cannot stand there, if it cannot.
pub fn misplaced(markdown: &str, spans: &[Range<usize>], options: Options) -> Vec<Option<String>> {
    let mut why = vec![None; spans.len()];
    if spans.is_empty() {
        return why;
    }
    let mut marked = String::with_capacity(markdown.len());
    let mut at = 0;
    for (i, span) in spans.iter().enumerate() {
        marked.push_str(&markdown[at..span.start]);
        marked.push_str(&format!("{MARKER}{i}x"));
        at = span.end;
    }
    marked.push_str(&markdown[at..]);

    let mut mark = |text: &str, reason: &str| {
        for i in markers(text) {
            if let Some(slot) = why.get_mut(i) {
                slot.get_or_insert_with(|| reason.to_string());
            }
        }
    };
    let mut parser = Parser::new_ext(&marked, options);
    let mut headings = 0usize;
    for event in parser.by_ref() {
        match &event {
            Event::Start(Tag::Heading { .. }) => headings += 1,
            Event::End(TagEnd::Heading(_)) => headings = headings.saturating_sub(1),
            Event::Start(Tag::Link { dest_url, title, .. } | Tag::Image { dest_url, title, .. }) => {
                mark(dest_url, IN_LINK);
                mark(title, IN_LINK);
            }
            Event::Html(html) | Event::InlineHtml(html) => mark(&inside_tags(html), IN_TAG),
            _ => {}
        }
        if headings > 0
            && let Event::Text(text) | Event::Code(text) | Event::Html(text) | Event::InlineHtml(text) = &event
        {
            mark(text, IN_HEADING);
        }
    }
    // Reference definitions (`[r]: URL "title"`) produce no event of their own.
    for (_, def) in parser.reference_definitions().iter() {
        mark(&def.dest, IN_LINK);
        mark(def.title.as_deref().unwrap_or(""), IN_LINK);
    }
    why
}

const IN_LINK: &str = "a value cannot stand in a link's destination or title: it becomes HTML, which a URL cannot \
                       hold (put it in the link's text, `[{{value …}}](URL)`, or beside the link)";
const IN_TAG: &str = "a value cannot stand inside an HTML tag (an attribute): it becomes HTML, which an attribute \
                      cannot hold (put it between the tags)";
const IN_HEADING: &str = "a value cannot stand in a heading: mdbook's search shows headings as HTML, and a trace \
                          string must never become HTML (put it in the text under the heading)";

/// The markers in `text`, by index.
fn markers(text: &str) -> Vec<usize> {
    text.match_indices(MARKER)
        .filter_map(|(at, _)| {
            let digits: String = text[at + MARKER.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .collect()
}

/// The parts of `html` inside tags (`<…>`, quoted attribute values included), joined.
fn inside_tags(html: &str) -> String {
    let mut out = String::new();
    let mut quote = None;
    let mut in_tag = false;
    for c in html.chars() {
        match (in_tag, quote, c) {
            (false, _, '<') => in_tag = true,
            (true, None, '"' | '\'') => quote = Some(c),
            (true, Some(q), _) if c == q => quote = None,
            (true, None, '>') => {
                in_tag = false;
                out.push(' ');
            }
            _ => {}
        }
        if in_tag {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(markdown: &str) -> Vec<Option<String>> {
        let spans: Vec<Range<usize>> = markdown
            .match_indices("{{v}}")
            .map(|(at, m)| at..at + m.len())
            .collect();
        misplaced(
            markdown,
            &spans,
            Options::ENABLE_TABLES | Options::ENABLE_HEADING_ATTRIBUTES,
        )
    }

    #[test]
    fn values_in_links_tags_and_headings_are_found() {
        let said = |md: &str| {
            check(md)
                .into_iter()
                .map(|w| w.map(|w| w[..30].to_string()))
                .collect::<Vec<_>>()
        };
        let link = Some(IN_LINK[..30].to_string());
        assert_eq!(said("[a](http://x/{{v}}) and [{{v}}](http://y)"), [link.clone(), None]);
        assert_eq!(
            said("[a][r]\n\n[r]: http://x/{{v}} \"t {{v}}\"\n"),
            [link.clone(), link]
        );
        assert_eq!(
            said("<a title=\"{{v}}\">{{v}}</a>"),
            [Some(IN_TAG[..30].to_string()), None]
        );
        assert_eq!(
            said("# H {{v}}\n\ntext {{v}}"),
            [Some(IN_HEADING[..30].to_string()), None]
        );
        assert_eq!(said("<{{v}}> | `{{v}}`"), [None, None]);
        assert_eq!(markers("x0lecturedirective12x and 0lecturedirective3x"), [12, 3]);
    }
}
