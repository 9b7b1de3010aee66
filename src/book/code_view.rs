//! A section's code with each recorded value beside the line that recorded it: the static form of
//! the original lecture's trace viewer. One grid row per source line (line number, code, values);
//! each code line is its own `<code class="lang-rust">`, which highlight.js colours (not
//! `language-rust`: mdbook would take that for a runnable block inside a `<pre>`).

use std::path::Path;

use super::format::{Format, compact_with, format_value, plain};
use super::html::escape;
use super::problem::Cause;
use super::traces::Traces;
use crate::lecture;
use crate::trace::{Trace, ValueRecord, number_from_json, source::function_source};

/// Longest value text shown beside code; the full text is in the tooltip.
const MAX_SHOWN_CHARS: usize = 44;

pub fn render(path: &Path, trace: &Trace, section_id: &str) -> Result<String, Cause> {
    let record = Traces::section(path, trace, section_id)?;
    let code = lecture::find(section_id)
        .and_then(|def| function_source(def.source, def.id).ok())
        .ok_or_else(|| Cause::BadTrace(format!("no source for section `{section_id}`")))?;
    let lines: Vec<&str> = code.text.lines().collect();

    // Recorded lines are relative to where the function started when it ran; the hash check
    // guarantees the function's text is the same, though code above it may have moved it.
    let mut beside: Vec<Vec<(String, String)>> = vec![Vec::new(); lines.len()];
    let mut elsewhere = Vec::new();
    for (name, value) in &record.values {
        let shown = (name.clone(), shown_value(value));
        match value.line.checked_sub(record.source_line).map(|i| i as usize) {
            Some(i) if value.line != 0 && i < lines.len() => beside[i].push(shown),
            _ => elsewhere.push(shown),
        }
    }

    let device = &trace.provenance.device;
    let mut html = format!(
        "<div class=\"lecture-code\"><div class=\"lecture-code-head\"><span>{} · <code>{}</code></span><span>values from the {} trace ({})</span></div><div class=\"lecture-code-grid\">",
        escape(&record.source_file),
        escape(section_id),
        escape(&device.slug),
        escape(&device.name),
    );
    for (i, line) in lines.iter().enumerate() {
        let number = code.start_line as usize + i;
        html.push_str(&format!("<span class=\"lecture-ln\">{number}</span>"));
        if beside[i].is_empty() {
            html.push_str(&format!(
                "<code class=\"lang-rust lecture-wide\">{}</code>",
                escape(line)
            ));
        } else {
            html.push_str(&format!("<code class=\"lang-rust\">{}</code>", escape(line)));
            html.push_str(&values_cell(&beside[i]));
        }
    }
    html.push_str("</div>");
    if !elsewhere.is_empty() {
        html.push_str("<div class=\"lecture-code-foot\">Recorded by helpers outside this function: ");
        html.push_str(
            &elsewhere
                .iter()
                .map(|(n, v)| format!("{} = {}", escape(n), escape(v)))
                .collect::<Vec<_>>()
                .join("; "),
        );
        html.push_str("</div>");
    }
    html.push_str("</div>");
    Ok(html)
}

fn values_cell(values: &[(String, String)]) -> String {
    let mut cell = String::from("<span class=\"lecture-lv\">");
    for (name, text) in values {
        let short = shorten(text);
        let title = if short == *text {
            String::new()
        } else {
            format!(" title=\"{}\"", escape(text))
        };
        cell.push_str(&format!(
            "<span{title}><span class=\"lecture-lv-name\">{}</span> = {}</span>",
            escape(name),
            escape(&short)
        ));
    }
    cell.push_str("</span>");
    cell
}

/// A value as it reads beside code: scalars formatted by unit, tensors and lists with short
/// numbers.
fn shown_value(record: &ValueRecord) -> String {
    match &record.value {
        serde_json::Value::Array(_) | serde_json::Value::Object(_) => compact_with(&record.value, &|v| {
            number_from_json(v).map(short_number).unwrap_or_else(|| v.to_string())
        }),
        v => format_value(v, record.unit, Format::Auto).unwrap_or_else(|_| v.to_string()),
    }
}

fn short_number(x: f64) -> String {
    if x.fract() == 0.0 || !x.is_finite() {
        plain(x)
    } else {
        format_value(&crate::trace::json_number(x), crate::trace::Unit::None, Format::Auto).unwrap_or_else(|_| plain(x))
    }
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= MAX_SHOWN_CHARS {
        return text.to_string();
    }
    let mut short: String = text.chars().take(MAX_SHOWN_CHARS - 1).collect();
    short.push('…');
    short
}
