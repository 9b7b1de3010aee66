//! Escaping. Every string that comes from a trace goes through here before it reaches a page:
//! `escape` for text inside HTML we build, `escape_inline` for text spliced into markdown prose,
//! where markdown's own punctuation must not turn a value into emphasis, a link or a list item.
//!
//! The HTML that block directives emit sits in the chapter's markdown as an HTML block, which a
//! blank line ends: the rest would be read as markdown again (a `[link](javascript:…)`, a
//! `# heading`). So `escape` also encodes line breaks, and every block we emit is one line.
//! `tests/book/book_markup.rs` proves it for arbitrary strings in every trace field the book shows.
//!
//! # What JavaScript on the book's pages must respect
//!
//! mdbook's scripts are safe with the book as it is (its search shows result bodies escaped, but a
//! page's headings as HTML: so no directive may sit in a heading, see `directive::placement`).
//! The book's own script, `book/theme/lecture-steps.js` (stepping through a code view), and any
//! script of ours after it must keep trace strings as text in the browser too:
//! - read them with `textContent` or `getAttribute` (which give the decoded text) and write them
//!   back with `textContent`, `setAttribute` on a non-URL attribute, or `createTextNode`; never
//!   with `innerHTML`, `outerHTML`, `insertAdjacentHTML`, `document.write` or a template string
//!   turned into HTML;
//! - never put one into `href`, `src`, `style`, an `on…` attribute, `eval`, `Function` or
//!   `setTimeout` with a string;
//! - carry data to the script as JSON inside `<script type="application/json">` escaped with
//!   `escape_script_json` (a string holding `</script>` must not end the element), read with
//!   `JSON.parse(element.textContent)`.

/// Escapes text for HTML element content and attribute values, line breaks included (see the
/// module's notes).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            _ => out.push(c),
        }
    }
    out
}

/// JSON for a `<script type="application/json">` element: `<`, `>` and `&` as `\u` escapes,
/// so no string in it can close the element or open a comment, and line separators escaped.
pub fn escape_script_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            _ => out.push(c),
        }
    }
    out
}

/// Escapes text that is spliced into markdown prose: HTML's special characters, markdown's
/// punctuation (as numeric character references, which markdown never reads as syntax) and
/// newlines (which could end a paragraph).
pub fn escape_inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' | '<' | '>' | '"' | '\'' => out.push_str(&escape(c.encode_utf8(&mut [0; 4]))),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '#' | '+' | '-' | '=' | '|' | '~' | '!' | '{' | '}'
            | '$' | '\n' | '\r' => out.push_str(&format!("&#{};", c as u32)),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_specials_are_escaped() {
        assert_eq!(
            escape(r#"<script>alert("x") & 'y'</script>"#),
            "&lt;script&gt;alert(&quot;x&quot;) &amp; &#39;y&#39;&lt;/script&gt;"
        );
    }

    #[test]
    fn line_breaks_cannot_end_an_html_block() {
        assert_eq!(escape("ok\n\n[x](y)\r\r"), "ok&#10;&#10;[x](y)&#13;&#13;");
        assert!(!escape("a\r\nb").contains(['\n', '\r']));
    }

    #[test]
    fn script_json_cannot_close_its_element() {
        let json = serde_json::json!({"v": "</script><!-- & \u{2028}"}).to_string();
        let escaped = escape_script_json(&json);
        assert!(!escaped.contains(['<', '>', '&', '\u{2028}']), "{escaped}");
        let back: serde_json::Value = serde_json::from_str(&escaped).expect("still JSON");
        assert_eq!(back["v"], "</script><!-- & \u{2028}");
    }

    #[test]
    fn markdown_punctuation_becomes_references() {
        assert_eq!(
            escape_inline("*a* _b_ `c` [d](e)"),
            "&#42;a&#42; &#95;b&#95; &#96;c&#96; &#91;d&#93;&#40;e&#41;"
        );
        assert_eq!(escape_inline("-inf\n\n# x"), "&#45;inf&#10;&#10;&#35; x");
        assert_eq!(escape_inline("2.25 GiB"), "2.25 GiB");
        assert_eq!(escape_inline("{{value x}}"), "&#123;&#123;value x&#125;&#125;");
    }
}
