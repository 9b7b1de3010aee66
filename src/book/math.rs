//! Math in chapters, typeset while the book builds: `$…$` inline and `$$…$$` as a block become
//! MathML Core (crate `math-core`), which Chromium, Firefox and Safari draw with no script and no
//! network. A number inside a formula still comes from the trace: a `{{value …}}` directive
//! written in the formula is rendered by the chapter's renderer and put into the MathML as an
//! `<mtext>` carrying the value's kind and key, as beside prose.
//!
//! `$` is math only outside code (spans and blocks) and HTML comments, never after a backslash
//! (`\$` is a dollar sign), and, inline, only when the text inside starts and ends without a space
//! and the closing `$` is not followed by a digit (so `$5 and $6` stays prose).

use std::ops::Range;

use math_core::{LatexToMathML, MathCoreConfig, MathDisplay};

use crate::directive::literal_ranges;

/// A formula found in a chapter.
#[derive(Debug, Clone, PartialEq)]
pub struct Formula {
    /// The formula with its dollars.
    pub span: Range<usize>,
    /// The LaTeX between the dollars.
    pub inner: Range<usize>,
    pub block: bool,
}

/// Every formula outside code, in order.
pub fn find(markdown: &str) -> Vec<Formula> {
    let literal = literal_ranges(markdown);
    let in_literal = |at: usize| literal.iter().any(|r| r.contains(&at));
    let bytes = markdown.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = markdown[at..].find('$') {
        let start = at + offset;
        at = start + 1;
        if in_literal(start) || (start > 0 && bytes[start - 1] == b'\\') {
            continue;
        }
        if markdown[start..].starts_with("$$") {
            let Some(close) = markdown[start + 2..].find("$$") else {
                continue;
            };
            let end = start + 2 + close;
            found.push(Formula {
                span: start..end + 2,
                inner: start + 2..end,
                block: true,
            });
            at = end + 2;
            continue;
        }
        let line_end = markdown[start..].find('\n').map_or(markdown.len(), |n| start + n);
        // The closing dollar: the first on the line that no backslash escapes.
        let close = markdown[start + 1..line_end]
            .match_indices('$')
            .map(|(i, _)| start + 1 + i)
            .find(|&i| bytes[i - 1] != b'\\');
        let Some(end) = close else { continue };
        let inner = &markdown[start + 1..end];
        let opens = inner.chars().next().is_some_and(|c| !c.is_whitespace());
        let closes = inner.chars().last().is_some_and(|c| !c.is_whitespace());
        let digit_after = bytes.get(end + 1).is_some_and(u8::is_ascii_digit);
        if opens && closes && !digit_after && !in_literal(end) {
            found.push(Formula {
                span: start..end + 1,
                inner: start + 1..end,
                block: false,
            });
            at = end + 1;
        }
    }
    found
}

/// The placeholder a value directive stands as in the LaTeX handed to the converter; it comes out
/// as `<mtext>` of the same text, which [`typeset`] replaces with the value.
pub fn placeholder(n: usize) -> String {
    format!("\\text{{@@{n}@@}}")
}

/// `latex` as MathML, with placeholder `n` replaced by `values[n]` (MathML already). Text between
/// tags is escaped for markdown, which reads around inline HTML (a `*` or `_` in an `<mo>` would
/// start emphasis).
pub fn typeset(latex: &str, block: bool, values: &[String]) -> Result<String, String> {
    let converter = LatexToMathML::new(MathCoreConfig::default()).map_err(|e| format!("{:?}", e.0))?;
    let display = if block { MathDisplay::Block } else { MathDisplay::Inline };
    let mathml = converter
        .convert_with_local_state(latex, display)
        .map_err(|e| format!("LaTeX the typesetter cannot read: {e}"))?
        .mathml;
    let mut out = markdown_safe(&mathml);
    for (n, value) in values.iter().enumerate() {
        let slot = format!("<mtext>@@{n}@@</mtext>");
        if !out.contains(&slot) {
            return Err(format!("the value in place {n} did not survive typesetting"));
        }
        out = out.replacen(&slot, value, 1);
    }
    Ok(out)
}

/// Text outside tags with markdown's special characters as character references.
fn markdown_safe(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            '\\' | '`' | '*' | '_' | '[' | ']' | '$' | '{' | '}' | '|' | '~' | '!' | '#' if !in_tag => {
                out.push_str(&format!("&#{};", c as u32));
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_are_math_outside_code_only() {
        let md = "Cost $6 N D$ FLOPs.\n\n`$HOME` and\n\n```sh\necho $x$\n```\n\nPrices $5 and $6 today, \\$x \
                  <!-- $y$ -->\n\n$$\\frac{a}{b}$$\nand $ z$ too.\n";
        let found = find(md);
        let texts: Vec<&str> = found.iter().map(|f| &md[f.inner.clone()]).collect();
        assert_eq!(texts, ["6 N D", "\\frac{a}{b}"]);
        assert!(!found[0].block && found[1].block);
        assert_eq!(&md[found[0].span.clone()], "$6 N D$");
    }

    #[test]
    fn typesets_mathml_with_values_in_place() {
        let value = "<mtext class=\"lecture-value\">2.30 GiB</mtext>".to_string();
        let latex = format!("M = {} \\cdot x_i", placeholder(0));
        let html = typeset(&latex, false, std::slice::from_ref(&value)).expect("typesets");
        assert!(html.starts_with("<math") && html.ends_with("</math>"), "{html}");
        assert!(html.contains(&value), "{html}");
        assert!(html.contains("<msub>"), "{html}");
        assert!(!html.contains('\n'));
        let block = typeset("6 N D", true, &[]).expect("typesets");
        assert!(block.contains("display=\"block\""), "{block}");
        assert!(typeset("\\frac{a", false, &[]).is_err());
        assert!(typeset("x", false, &[value]).is_err(), "a value without its place");
        assert_eq!(markdown_safe("<mo form=\"a_b\">*</mo>"), "<mo form=\"a_b\">&#42;</mo>");
    }
}
