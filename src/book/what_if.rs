//! A what-if book (`lecture --set …`, `lecture book --what-if FILE`): the pages quote a what-if's
//! trace, in which the sections whose givens changed ran again and the others are the device's
//! own. Every page opens with a banner naming the changed givens against their defaults; a value
//! the change moved shows the device's own run's value beside it; each code view says whether its
//! section ran again. Every page with givens also has a "What if?" box listing them, with the
//! `lecture --set …` command that changes them (a form builds it as the reader edits; the page
//! itself runs nothing).

use serde_json::Value;

use super::address::Address;
use super::format::{Format, format_value};
use super::html::{escape, escape_inline};
use super::problem::Cause;
use super::traces::Traces;
use crate::trace::{SectionRecord, Trace, Unit, ValueRecord, walk};

/// A given a what-if changed: where, its value and its default, as the book writes them.
struct Changed {
    key: String,
    value: String,
    default: String,
}

fn shown(value: &Value, unit: Unit) -> String {
    format_value(value, unit, Format::Auto).unwrap_or_else(|_| value.to_string())
}

/// The givens `trace` changed from their defaults.
fn changed(trace: &Trace) -> Vec<Changed> {
    trace
        .changed_givens()
        .into_iter()
        .map(|(section, name, v, given)| Changed {
            key: format!("{}.{name}", section.id),
            value: shown(&v.value, v.unit),
            default: shown(&given.default, v.unit),
        })
        .collect()
}

/// Whether `section` ran again in a what-if: one of its givens changed.
pub fn rerun(section: &SectionRecord) -> bool {
    section.values.values().any(ValueRecord::changed_given)
}

/// Whether `trace` is a what-if's: some given differs from its default.
pub fn is_what_if(trace: &Trace) -> bool {
    !trace.changed_givens().is_empty()
}

/// The banner of every page of a what-if book, or None for the device's own book.
pub fn banner(traces: &mut Traces) -> Result<Option<String>, Cause> {
    let Some(baseline) = traces.baseline() else {
        return Ok(None);
    };
    let path = traces.path(None)?;
    let trace = traces.load(&path)?;
    let items: String = changed(&trace)
        .iter()
        .map(|c| {
            format!(
                "<li><code>{}</code> = <strong>{}</strong> (the lecture's: {})</li>",
                escape(&c.key),
                escape(&c.value),
                escape(&c.default)
            )
        })
        .collect();
    let device = baseline
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Some(format!(
        "<div class=\"lecture-what-if-banner\"><strong>What if:</strong> this book shows a run with givens changed \
         from the lecture's:<ul>{items}</ul>The sections those givens belong to ran again on this device; every other \
         section is the device's own run (<code>{}</code>), unchanged. A value the change moved shows the own run's \
         value beside it.</div>\n\n",
        escape(&device)
    )))
}

/// `content` with `banner` after its title (or first, if it has none).
pub fn with_banner(content: &str, banner: &str) -> String {
    match content.strip_prefix("# ").and_then(|rest| rest.split_once('\n')) {
        Some((title, rest)) => format!("# {title}\n\n{banner}{rest}"),
        None => format!("{banner}{content}"),
    }
}

/// In a what-if book, for a value quoted from the what-if's trace (`path`) whose section ran
/// again: the device's own value beside it, where the what-if moved it.
pub fn beside(
    traces: &mut Traces,
    path: &std::path::Path,
    address: &Address,
    value: &Value,
    unit: Unit,
    format: Format,
) -> String {
    let Some(baseline) = traces.baseline() else {
        return String::new();
    };
    let Ok(default_path) = traces.path(None) else {
        return String::new();
    };
    if path != default_path {
        return String::new();
    }
    let (Ok(what_if), Ok(own)) = (traces.load(path), traces.load(&baseline)) else {
        return String::new();
    };
    if !what_if.section(&address.section).is_some_and(rerun) {
        return String::new();
    }
    let Some(record) = own.section(&address.section).and_then(|s| s.values.get(&address.name)) else {
        return " <span class=\"lecture-default\">(the own run has no such value)</span>".to_string();
    };
    let Ok(before) = walk(&record.value, &address.path) else {
        return String::new();
    };
    if before == value {
        return String::new();
    }
    format!(
        " <span class=\"lecture-default\" title=\"the value in this device's own run, with the lecture's givens\">(own run: {})</span>",
        escape_inline(&format_value(before, unit, format).unwrap_or_else(|_| shown(before, unit)))
    )
}

/// Under a code view: the section's givens, their values in this run, and a form that builds the
/// `lecture --set …` command for the values a reader types. Empty for a section without givens.
pub fn what_if_box(section: &SectionRecord) -> String {
    let givens: Vec<(&String, &ValueRecord)> = section.values.iter().filter(|(_, v)| v.given.is_some()).collect();
    if givens.is_empty() {
        return String::new();
    }
    let mut rows = String::new();
    for (name, v) in &givens {
        let Some(g) = &v.given else { continue };
        let key = format!("{}.{name}", section.id);
        let plain = match &v.value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        rows.push_str(&format!(
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td><input type=\"text\" \
             class=\"lecture-what-if-input\" data-key=\"{}\" data-run=\"{}\" value=\"{}\" size=\"12\" \
             aria-label=\"{}\"></td></tr>",
            escape(name),
            escape(&shown(&v.value, v.unit)),
            escape(&g.range),
            escape(&g.help),
            escape(&key),
            escape(&plain),
            escape(&plain),
            escape(&key),
        ));
    }
    format!(
        "<details class=\"lecture-what-if\"><summary>What if?</summary><p>This section's givens, as this run had \
         them. Edit a value and the command below changes with it: run it in the repository to re-run this section \
         with your values and get a book of your own beside this one. This page cannot run anything itself.</p>\
         <div class=\"lecture-scroll\"><table><thead><tr><th>Given</th><th>This run</th><th>Range</th><th>What it is</th>\
         <th>Your value</th></tr></thead><tbody>{rows}</tbody></table></div><pre class=\"lecture-what-if-command\"><code>cargo run --release --bin \
         lecture --</code></pre></details>"
    )
}
