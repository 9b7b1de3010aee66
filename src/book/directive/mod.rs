//! Finding and parsing directives in a chapter's markdown. Markdown is parsed with pulldown-cmark
//! only to learn where code is (fenced and indented blocks, inline code) and where HTML comments
//! are: a directive written there is text, not a directive, and is left exactly as it is.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag};

use super::format::Format;
use crate::trace::Unit;

/// `SECTION.NAME` with an optional path into the recorded JSON (`.max`, `.0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pub section: String,
    pub name: String,
    pub path: Vec<String>,
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.section, self.name)?;
        for step in &self.path {
            write!(f, ".{step}")?;
        }
        Ok(())
    }
}

/// What an `if` tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// A recorded boolean (`{{if a.b}}`), or its negation (`{{if not a.b}}`).
    Value { address: Address, negate: bool },
    /// Whether the trace records the value at all (`{{if has a.b}}`).
    Has(Address),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// `{{value SECTION.NAME[.PATH] [format=F] [unit=U] [trace=SLUG]}}`
    Value {
        address: Address,
        format: Format,
        unit: Option<Unit>,
        trace: Option<String>,
    },
    /// `{{code SECTION [trace=SLUG]}}`
    Code { section: String, trace: Option<String> },
    /// `{{chart ID [trace=SLUG]}}`
    Chart { id: String, trace: Option<String> },
    /// `{{provenance [trace=SLUG]}}`
    Provenance { trace: Option<String> },
    /// `{{compare SECTION.NAME[.PATH] [format=F] [unit=U]}}`
    Compare {
        address: Address,
        format: Format,
        unit: Option<Unit>,
    },
    /// `{{if [not|has] SECTION.NAME[.PATH] [trace=SLUG]}}`
    If {
        condition: Condition,
        trace: Option<String>,
    },
    /// `{{else}}`
    Else,
    /// `{{end}}`
    End,
}

impl Directive {
    /// Directives that produce a block of HTML (or open and close one) stand on their own line.
    pub fn is_block(&self) -> bool {
        !matches!(self, Directive::Value { .. })
    }
}

/// The directive forms, for messages.
pub const SYNTAX: &str = "{{value SECTION.NAME[.PATH] [format=F] [unit=U] [trace=SLUG]}}, {{code SECTION}}, {{chart ID}}, \
     {{provenance}}, {{compare SECTION.NAME[.PATH] [format=F] [unit=U]}}, {{if [not|has] SECTION.NAME}} … {{else}} … {{end}}";

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
    found
}

/// Parses the inside of `{{…}}`.
pub fn parse(inner: &str) -> Result<Directive, String> {
    let mut words = inner.split_whitespace();
    let kind = words.next().ok_or("empty directive")?;
    let mut positional = Vec::new();
    let mut format = None;
    let mut trace = None;
    let mut unit = None;
    for word in words {
        match word.split_once('=') {
            Some(("format", f)) => set_once(&mut format, f.parse::<Format>()?, "format")?,
            Some(("trace", t)) => set_once(&mut trace, slug(t)?, "trace")?,
            Some(("unit", u)) => set_once(&mut unit, unit_of(u)?, "unit")?,
            Some((key, _)) => return Err(format!("unknown option `{key}` (options: format=, unit=, trace=)")),
            None => positional.push(word),
        }
    }
    let allow = |format_ok: bool, trace_ok: bool| -> Result<(), String> {
        if (format.is_some() || unit.is_some()) && !format_ok {
            return Err(format!("`{kind}` takes no format or unit"));
        }
        if trace.is_some() && !trace_ok {
            return Err(format!("`{kind}` takes no trace (it reads every trace)"));
        }
        Ok(())
    };
    let directive = match (kind, positional.as_slice()) {
        ("value", [address]) => {
            allow(true, true)?;
            Directive::Value {
                address: address_of(address)?,
                format: format.unwrap_or(Format::Auto),
                unit,
                trace,
            }
        }
        ("compare", [address]) => {
            allow(true, false)?;
            Directive::Compare {
                address: address_of(address)?,
                format: format.unwrap_or(Format::Auto),
                unit,
            }
        }
        ("code", [section]) => {
            allow(false, true)?;
            Directive::Code {
                section: identifier(section, "section id")?,
                trace,
            }
        }
        ("chart", [id]) => {
            allow(false, true)?;
            Directive::Chart {
                id: identifier(id, "chart id")?,
                trace,
            }
        }
        ("provenance", []) => {
            allow(false, true)?;
            Directive::Provenance { trace }
        }
        ("if", words) => {
            allow(false, true)?;
            let condition = match words {
                [address] => Condition::Value {
                    address: address_of(address)?,
                    negate: false,
                },
                ["not", address] => Condition::Value {
                    address: address_of(address)?,
                    negate: true,
                },
                ["has", address] => Condition::Has(address_of(address)?),
                _ => return Err("`if` takes `SECTION.NAME`, `not SECTION.NAME` or `has SECTION.NAME`".into()),
            };
            Directive::If { condition, trace }
        }
        ("else", []) => {
            allow(false, false)?;
            Directive::Else
        }
        ("end", []) => {
            allow(false, false)?;
            Directive::End
        }
        ("value" | "compare" | "code" | "chart" | "provenance" | "else" | "end", args) => {
            return Err(format!("`{kind}` got {} argument(s) ({})", args.len(), args.join(" ")));
        }
        _ => return Err(format!("unknown directive `{kind}`")),
    };
    Ok(directive)
}

fn set_once<T>(slot: &mut Option<T>, value: T, key: &str) -> Result<(), String> {
    if slot.replace(value).is_some() {
        return Err(format!("option `{key}` given twice"));
    }
    Ok(())
}

/// A unit as the trace writes it (`bytes`, `FLOP`, `FLOP/s`, `s`, `ratio`, `count`, `bytes/s`,
/// `none`).
fn unit_of(word: &str) -> Result<Unit, String> {
    serde_json::from_value(serde_json::Value::from(word))
        .map_err(|_| format!("unknown unit `{word}` (units: bytes, FLOP, FLOP/s, s, ratio, count, bytes/s, none)"))
}

fn identifier(word: &str, what: &str) -> Result<String, String> {
    let ok = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(word.to_string())
    } else {
        Err(format!("`{word}` is not a valid {what} (letters, digits and `_`)"))
    }
}

/// A trace's file name without `.json`; no path separators, so a directive cannot leave the
/// trace folder.
fn slug(word: &str) -> Result<String, String> {
    let ok = !word.is_empty()
        && !word.starts_with('.')
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(word.to_string())
    } else {
        Err(format!("`{word}` is not a trace name (e.g. `cpu`, `nvidia-h200`)"))
    }
}

fn address_of(word: &str) -> Result<Address, String> {
    let mut parts = word.split('.');
    let (Some(section), Some(name)) = (parts.next(), parts.next()) else {
        return Err(format!("`{word}` is not of the form SECTION.NAME[.PATH]"));
    };
    let section = identifier(section, "section id")?;
    let name = identifier(name, "value name")?;
    let path = parts.map(|p| identifier(p, "path step")).collect::<Result<_, _>>()?;
    Ok(Address { section, name, path })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(section: &str, name: &str, path: &[&str]) -> Address {
        Address {
            section: section.into(),
            name: name.into(),
            path: path.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn parses_each_form() {
        assert_eq!(
            parse("value tensors_memory.fp8_e4m3_info.max"),
            Ok(Directive::Value {
                address: addr("tensors_memory", "fp8_e4m3_info", &["max"]),
                format: Format::Auto,
                unit: None,
                trace: None
            })
        );
        assert_eq!(
            parse("value tensor_slicing.row_0.1 format=plain trace=nvidia-h200"),
            Ok(Directive::Value {
                address: addr("tensor_slicing", "row_0", &["1"]),
                format: Format::Plain,
                unit: None,
                trace: Some("nvidia-h200".into())
            })
        );
        assert_eq!(
            parse("value a.b.c unit=FLOP/s format=si"),
            Ok(Directive::Value {
                address: addr("a", "b", &["c"]),
                format: Format::Si(None),
                unit: Some(Unit::FlopPerSec),
                trace: None
            })
        );
        assert_eq!(
            parse("code tensors_memory"),
            Ok(Directive::Code {
                section: "tensors_memory".into(),
                trace: None
            })
        );
        assert_eq!(
            parse("chart float_ranges"),
            Ok(Directive::Chart {
                id: "float_ranges".into(),
                trace: None
            })
        );
        assert_eq!(
            parse(" provenance  trace=cpu "),
            Ok(Directive::Provenance {
                trace: Some("cpu".into())
            })
        );
        assert_eq!(
            parse("compare a.b format=si"),
            Ok(Directive::Compare {
                address: addr("a", "b", &[]),
                format: Format::Si(None),
                unit: None
            })
        );
        assert_eq!(
            parse("if not a.b"),
            Ok(Directive::If {
                condition: Condition::Value {
                    address: addr("a", "b", &[]),
                    negate: true
                },
                trace: None
            })
        );
        assert_eq!(
            parse("if has a.b"),
            Ok(Directive::If {
                condition: Condition::Has(addr("a", "b", &[])),
                trace: None
            })
        );
        assert_eq!(parse("else"), Ok(Directive::Else));
        assert_eq!(parse("end"), Ok(Directive::End));
    }

    #[test]
    fn malformed_directives_say_why() {
        let err = |s: &str| parse(s).expect_err(s);
        assert!(err("").contains("empty"));
        assert!(err("valu a.b").contains("unknown directive `valu`"));
        assert!(err("value a").contains("SECTION.NAME"));
        assert!(err("value a.b c.d").contains("2 argument(s)"));
        assert!(err("value a.b colour=red").contains("unknown option `colour`"));
        assert!(err("value a.b format=sci format=eng").contains("twice"));
        assert!(err("value a.b format=kilo").contains("unknown format"));
        assert!(err("value a.b trace=../x").contains("not a trace name"));
        assert!(err("value a.b-c").contains("not a valid value name"));
        assert!(err("compare a.b trace=cpu").contains("takes no trace"));
        assert!(err("code a format=sci").contains("takes no format"));
        assert!(err("value a.b unit=furlongs").contains("unknown unit `furlongs`"));
        assert!(err("if a.b c.d").contains("`if` takes"));
    }

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
