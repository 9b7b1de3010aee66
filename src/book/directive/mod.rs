//! Directives in a chapter's markdown: parsing one (here), finding them outside code (`find`),
//! and refusing those whose place cannot hold a value's HTML (`placement`).

pub mod claim;
mod find;
mod placement;

pub use find::{Found, find, literal_ranges};

pub use super::address::{Address, StateChoice};
use super::address::{address_of, identifier};
use super::format::Format;
use crate::trace::Unit;

pub use claim::Claim;

#[derive(Debug, Clone, PartialEq)]
pub enum Directive {
    /// `{{value SECTION.NAME[.PATH] [state=S] [format=F] [unit=U] [trace=SLUG]}}`
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
    /// `{{device SECTION [trace=SLUG]}}`: which device recorded the section, when, and whether
    /// older code did (inline, beside figures quoted from another trace).
    Device { section: String, trace: Option<String> },
    /// `{{devices}}`: every trace in the folder side by side on the lecture's headline numbers.
    Devices,
    /// `{{compare SECTION.NAME[.PATH] [state=S] [format=F] [unit=U]}}`
    Compare {
        address: Address,
        format: Format,
        unit: Option<Unit>,
    },
    /// `{{if CLAIM [state=S] [trace=SLUG]}}` (claims: `claim/mod.rs`)
    If { claim: Claim, trace: Option<String> },
    /// `{{else if CLAIM [state=S] [trace=SLUG]}}`
    ElseIf { claim: Claim, trace: Option<String> },
    /// `{{assert CLAIM [state=S] [trace=SLUG]}}`: the build fails unless it holds.
    Assert { claim: Claim, trace: Option<String> },
    /// `{{table SECTION.NAME[.PATH] [state=S] [format=F] [unit=U] [trace=SLUG] [columns=K,K]}}`: an
    /// object as a table; `columns=` picks the fields shown as columns, in that order.
    Table {
        address: Address,
        format: Format,
        unit: Option<Unit>,
        trace: Option<String>,
        columns: Option<Vec<String>>,
    },
    /// `{{check SECTION.NAME [trace=SLUG]}}`: a tick for a fact the section's code checked
    /// (`check!`), its claim and line on hover; the book quotes it, it does not decide it again.
    Check { address: Address, trace: Option<String> },
    /// `{{else}}`
    Else,
    /// `{{end}}`
    End,
    /// `{{times SECTION.NAME SECTION.NAME [trace=SLUG]}}`: how many times the first value is the
    /// second, in words ("about 95 times"; see `times.rs`).
    Times {
        top: Address,
        bottom: Address,
        trace: Option<String>,
    },
    /// `{{cite KEY}}`: a link to an entry of the bibliography (see `bibliography`).
    Cite { key: String },
    /// `{{references}}`: every entry of the bibliography.
    References,
}

impl Directive {
    /// Directives that produce a block of HTML (or open and close one) stand on their own line.
    /// Values, and the `if`/`else`/`end`/`assert` that only keep or drop text, may also stand
    /// inside a sentence.
    pub fn is_block(&self) -> bool {
        !matches!(
            self,
            Directive::Value { .. }
                | Directive::Times { .. }
                | Directive::Device { .. }
                | Directive::Cite { .. }
                | Directive::If { .. }
                | Directive::ElseIf { .. }
                | Directive::Else
                | Directive::End
                | Directive::Assert { .. }
                | Directive::Check { .. }
        )
    }
}

/// The directive forms, for messages.
pub const SYNTAX: &str = "{{value SECTION.NAME[.PATH] [state=first|last|K] [format=F] [unit=U] [trace=SLUG]}}, {{code SECTION}}, \
     {{chart ID}}, {{provenance}}, {{compare SECTION.NAME[.PATH] [state=S] [format=F] [unit=U]}}, \
     {{table SECTION.NAME[.PATH] [columns=K,K]}}, {{times SECTION.NAME SECTION.NAME [trace=SLUG]}}, {{device SECTION [trace=SLUG]}}, {{devices}}, {{if CLAIM}} … {{else if CLAIM}} … {{else}} … {{end}}, {{assert CLAIM}}, {{check SECTION.NAME}} \
     (CLAIM: `a.b > c.d`, `a.b < 2 * c.d`, `ratio(a.b, c.d) in [0.8, 1.25]`, `reldiff(a.b, c.d) < 0.05`, \
     `has a.b`, a recorded boolean `a.b`, joined with and/or/not), {{cite KEY}}, {{references}}";

/// Parses the inside of `{{…}}`.
pub fn parse(inner: &str) -> Result<Directive, String> {
    let mut words = inner.split_whitespace();
    let kind = words.next().ok_or("empty directive")?;
    if matches!(kind, "if" | "assert") || (kind == "else" && inner.split_whitespace().nth(1) == Some("if")) {
        return parse_claim_directive(inner);
    }
    let mut positional = Vec::new();
    let mut format = None;
    let mut trace = None;
    let mut unit = None;
    let mut state = None;
    let mut columns: Option<Vec<String>> = None;
    for word in words {
        match word.split_once('=') {
            Some(("format", f)) => set_once(&mut format, f.parse::<Format>()?, "format")?,
            Some(("trace", t)) => set_once(&mut trace, slug(t)?, "trace")?,
            Some(("unit", u)) => set_once(&mut unit, unit_of(u)?, "unit")?,
            Some(("state", s)) => set_once(&mut state, StateChoice::parse(s)?, "state")?,
            Some(("columns", list)) => {
                let keys: Vec<String> = list.split(',').map(str::to_string).collect();
                if keys
                    .iter()
                    .any(|k| k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                {
                    return Err(format!("`columns={list}` must list field names separated by commas"));
                }
                set_once(&mut columns, keys, "columns")?
            }
            Some((key, _)) => {
                return Err(format!(
                    "unknown option `{key}` (options: format=, unit=, state=, trace=, and columns= for a table)"
                ));
            }
            None => positional.push(word),
        }
    }
    if columns.is_some() && kind != "table" {
        return Err(format!("`{kind}` takes no columns (only a table has them)"));
    }
    // `state=` picks a state of the value a directive quotes; only those that quote one take it.
    let quotes = matches!(kind, "value" | "compare" | "table");
    if state.is_some() && !quotes {
        return Err(format!("`{kind}` takes no state (it quotes no single value)"));
    }
    let parse_address = |word: &str| -> Result<Address, String> {
        let mut address = address_of(word)?;
        address.state = state.unwrap_or_default();
        Ok(address)
    };
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
                address: parse_address(address)?,
                format: format.unwrap_or(Format::Auto),
                unit,
                trace,
            }
        }
        ("compare", [address]) => {
            allow(true, false)?;
            Directive::Compare {
                address: parse_address(address)?,
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
        ("device", [section]) => {
            allow(false, true)?;
            Directive::Device {
                section: identifier(section, "section id")?,
                trace,
            }
        }
        ("times", [top, bottom]) => {
            allow(false, true)?;
            Directive::Times {
                top: parse_address(top)?,
                bottom: parse_address(bottom)?,
                trace,
            }
        }
        ("devices", []) => {
            allow(false, false)?;
            Directive::Devices
        }
        ("provenance", []) => {
            allow(false, true)?;
            Directive::Provenance { trace }
        }
        ("table", [address]) => {
            allow(true, true)?;
            Directive::Table {
                address: parse_address(address)?,
                format: format.unwrap_or(Format::Auto),
                unit,
                trace,
                columns,
            }
        }
        ("check", [address]) => {
            allow(false, true)?;
            Directive::Check {
                address: parse_address(address)?,
                trace,
            }
        }
        ("else", []) => {
            allow(false, false)?;
            Directive::Else
        }
        ("end", []) => {
            allow(false, false)?;
            Directive::End
        }
        ("cite", [key]) => {
            allow(false, false)?;
            Directive::Cite {
                key: identifier(key, "reference key")?,
            }
        }
        ("references", []) => {
            allow(false, false)?;
            Directive::References
        }
        (
            "value" | "compare" | "table" | "code" | "chart" | "provenance" | "device" | "devices" | "else" | "end"
            | "cite" | "references" | "times" | "check",
            args,
        ) => {
            return Err(format!("`{kind}` got {} argument(s) ({})", args.len(), args.join(" ")));
        }
        _ => return Err(format!("unknown directive `{kind}`")),
    };
    Ok(directive)
}

/// `if CLAIM`, `else if CLAIM`, `assert CLAIM`, each with optional `state=S` (for keys without
/// `@STATE`) and `trace=SLUG` words; everything else is the claim.
fn parse_claim_directive(inner: &str) -> Result<Directive, String> {
    let mut words: Vec<&str> = inner.split_whitespace().collect();
    let kind = match words.as_slice() {
        ["else", "if", ..] => {
            words.drain(..2);
            "else if"
        }
        [first, ..] => {
            let kind = *first;
            words.remove(0);
            kind
        }
        [] => return Err("empty directive".into()),
    };
    let (mut trace, mut state) = (None, None);
    let mut claim_words = Vec::new();
    for word in words {
        if let Some(t) = word.strip_prefix("trace=") {
            set_once(&mut trace, slug(t)?, "trace")?;
        } else if let Some(s) = word.strip_prefix("state=") {
            set_once(&mut state, StateChoice::parse(s)?, "state")?;
        } else {
            claim_words.push(word);
        }
    }
    let claim =
        claim::parse_claim(&claim_words.join(" "), state.unwrap_or_default()).map_err(|e| format!("`{kind}`: {e}"))?;
    Ok(match kind {
        "if" => Directive::If { claim, trace },
        "else if" => Directive::ElseIf { claim, trace },
        _ => Directive::Assert { claim, trace },
    })
}

fn set_once<T>(slot: &mut Option<T>, value: T, key: &str) -> Result<(), String> {
    if slot.replace(value).is_some() {
        return Err(format!("option `{key}` given twice"));
    }
    Ok(())
}

/// A unit as the trace writes it (`bytes`, `FLOP`, `FLOP/s`, `s`, `ratio`, `count`, `bytes/s`,
/// `FLOP/byte`, `none`).
fn unit_of(word: &str) -> Result<Unit, String> {
    serde_json::from_value(serde_json::Value::from(word)).map_err(|_| {
        format!("unknown unit `{word}` (units: bytes, FLOP, FLOP/s, s, ratio, count, bytes/s, FLOP/byte, none)")
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(section: &str, name: &str, path: &[&str]) -> Address {
        Address::new(section, name, path)
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
        let not_b = Claim::Not(Box::new(Claim::Bool(addr("a", "b", &[]))));
        assert_eq!(
            parse("if not a.b"),
            Ok(Directive::If {
                claim: not_b.clone(),
                trace: None
            })
        );
        assert_eq!(
            parse("if has a.b"),
            Ok(Directive::If {
                claim: Claim::Has(addr("a", "b", &[])),
                trace: None
            })
        );
        assert_eq!(
            parse("else if not a.b trace=cpu"),
            Ok(Directive::ElseIf {
                claim: not_b,
                trace: Some("cpu".into())
            })
        );
        let claim = claim::parse_claim("a.b >= 2 * c.d", StateChoice::Last).unwrap();
        assert_eq!(
            parse("assert a.b >= 2 * c.d"),
            Ok(Directive::Assert { claim, trace: None })
        );
        assert_eq!(
            parse("table a.b.c"),
            Ok(Directive::Table {
                address: addr("a", "b", &["c"]),
                format: Format::Auto,
                unit: None,
                trace: None,
                columns: None,
            })
        );
        assert_eq!(
            parse("table a.b columns=time_s,mfu"),
            Ok(Directive::Table {
                address: addr("a", "b", &[]),
                format: Format::Auto,
                unit: None,
                trace: None,
                columns: Some(vec!["time_s".into(), "mfu".into()]),
            })
        );
        assert!(parse("value a.b columns=x").unwrap_err().contains("takes no columns"));
        assert!(
            parse("table a.b columns=x,,y")
                .unwrap_err()
                .contains("separated by commas")
        );
        assert_eq!(
            parse("cite glorot_2010"),
            Ok(Directive::Cite {
                key: "glorot_2010".into()
            })
        );
        assert_eq!(parse("references"), Ok(Directive::References));
        assert!(!Directive::Cite { key: "k".into() }.is_block());
        assert!(Directive::References.is_block());
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
        assert!(err("if a.b c.d").contains("`if`: unexpected `c.d`"));
        assert!(err("assert a.b >").contains("`assert`: the claim ends"));
        assert!(err("else if").contains("`else if`: empty claim"));
        assert!(err("if a.b > 1 trace=cpu trace=x").contains("twice"));
        assert!(err("table a.b c.d").contains("2 argument(s)"));
        assert!(err("cite").contains("`cite` got 0 argument(s)"));
        assert!(err("cite a-b").contains("not a valid reference key"));
        assert!(err("cite a trace=cpu").contains("takes no trace"));
        assert!(err("references a").contains("`references` got 1 argument(s)"));
    }
}
