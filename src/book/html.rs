//! Escaping. Every string that comes from a trace goes through here before it reaches a page:
//! `escape` for text inside HTML we build, `escape_inline` for text spliced into markdown prose,
//! where markdown's own punctuation must not turn a value into emphasis, a link or a list item.

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
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
