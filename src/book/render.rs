//! Rendering one chapter: every directive outside code is replaced by what it stands for, and
//! `if`/`else`/`end` keep or drop the lines between them. Problems are collected, not stopped at,
//! so one build reports everything that is wrong.

use std::ops::Range;
use std::path::Path;

use super::chart;
use super::code_view;
use super::directive::{self, Address, Condition, Directive, Found};
use super::format::{Format, format_value};
use super::html::{escape, escape_inline};
use super::problem::Cause;
use super::sections::OlderCode;
use super::traces::Traces;
use crate::trace::{Trace, Unit};

/// A problem at a line of the chapter, with the directive as written.
pub type Located = (usize, String, Cause);

/// An open `if`: whether its branch is being kept, and whether `else` was seen.
struct Open {
    line: usize,
    text: String,
    keep: bool,
    in_else: bool,
}

/// Renders `markdown`; on failure returns every problem found.
pub fn render_chapter(markdown: &str, traces: &mut Traces) -> Result<String, Vec<Located>> {
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    let mut problems = Vec::new();
    let mut open: Vec<Open> = Vec::new();
    // Where the text being dropped (an untaken branch) started.
    let mut dropping_from: Option<usize> = None;
    let active = |open: &[Open]| open.iter().all(|o| o.keep != o.in_else);

    for found in directive::find(markdown) {
        let directive = match &found.parsed {
            Ok(d) => d,
            Err(msg) => {
                problems.push((found.line, found.text.clone(), Cause::Malformed(msg.clone())));
                continue;
            }
        };
        let was_active = active(&open);
        match directive {
            Directive::If { condition, trace } => {
                let keep = if was_active {
                    condition_holds(condition, trace.as_deref(), traces).unwrap_or_else(|cause| {
                        problems.push((found.line, found.text.clone(), cause));
                        false
                    })
                } else {
                    false
                };
                open.push(Open {
                    line: found.line,
                    text: found.text.clone(),
                    keep,
                    in_else: false,
                });
            }
            Directive::Else => match open.last_mut() {
                Some(o) if !o.in_else => o.in_else = true,
                _ => problems.push((
                    found.line,
                    found.text.clone(),
                    Cause::Structure("`{{else}}` without an open `{{if}}`".into()),
                )),
            },
            Directive::End => {
                if open.pop().is_none() {
                    problems.push((
                        found.line,
                        found.text.clone(),
                        Cause::Structure("`{{end}}` without an open `{{if}}`".into()),
                    ));
                }
            }
            _ if !was_active => continue,
            _ => {
                match render_one(directive, traces) {
                    Ok(html) if directive.is_block() => edits.push((found.line_span.clone(), format!("\n{html}\n"))),
                    Ok(html) => edits.push((found.span.clone(), html)),
                    Err(cause) => problems.push((found.line, found.text.clone(), cause)),
                }
                continue;
            }
        }
        // An if/else/end line: remove it, and any untaken branch it opens or closes.
        let line = whole_line(markdown, &found);
        let now_active = active(&open);
        match (was_active, now_active, dropping_from) {
            (true, false, _) => dropping_from = Some(line.start),
            (false, true, Some(from)) => {
                edits.push((from..line.end, String::new()));
                dropping_from = None;
            }
            (false, _, _) => {}
            (true, true, _) => edits.push((line, String::new())),
        }
    }
    for o in open {
        problems.push((
            o.line,
            o.text,
            Cause::Structure("this `{{if}}` is never closed by `{{end}}`".into()),
        ));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(apply(markdown, edits))
}

/// The directive's line including its newline.
fn whole_line(markdown: &str, found: &Found) -> Range<usize> {
    let end = if markdown[found.line_span.end..].starts_with('\n') {
        found.line_span.end + 1
    } else {
        found.line_span.end
    };
    found.line_span.start..end
}

fn apply(markdown: &str, mut edits: Vec<(Range<usize>, String)>) -> String {
    edits.sort_by_key(|(r, _)| r.start);
    let mut out = String::with_capacity(markdown.len());
    let mut at = 0;
    for (range, text) in edits {
        if range.start < at {
            continue; // inside a dropped branch already removed
        }
        out.push_str(&markdown[at..range.start]);
        out.push_str(&text);
        at = range.end;
    }
    out.push_str(&markdown[at..]);
    out
}

fn condition_holds(condition: &Condition, slug: Option<&str>, traces: &mut Traces) -> Result<bool, Cause> {
    let path = traces.path(slug)?;
    let trace = traces.load(&path)?;
    match condition {
        Condition::Has(address) => match traces.resolve(&path, &trace, address) {
            Ok(_) => Ok(true),
            Err(Cause::MissingValue { .. } | Cause::MissingPath { .. }) => Ok(false),
            Err(other) => Err(other),
        },
        Condition::Value { address, negate } => {
            let value = traces.resolve(&path, &trace, address)?.value;
            let b = value.as_bool().ok_or_else(|| Cause::BadValue {
                trace: path.clone(),
                address: address.to_string(),
                msg: format!("`if` needs true or false, found `{value}`"),
            })?;
            Ok(b != *negate)
        }
    }
}

fn render_one(directive: &Directive, traces: &mut Traces) -> Result<String, Cause> {
    match directive {
        Directive::Value {
            address,
            format,
            unit,
            trace,
        } => {
            let path = traces.path(trace.as_deref())?;
            let trace = traces.load(&path)?;
            value(traces, &path, &trace, address, *format, *unit)
        }
        Directive::Code { section, trace } => {
            let path = traces.path(trace.as_deref())?;
            let trace = traces.load(&path)?;
            Ok(code_view::render(&trace, &traces.section(&path, &trace, section)?))
        }
        Directive::Chart { id, trace } => {
            let path = traces.path(trace.as_deref())?;
            let trace = traces.load(&path)?;
            chart::render(id, &path, &trace, traces)
        }
        Directive::Provenance { trace } => {
            let path = traces.path(trace.as_deref())?;
            Ok(provenance(&path, &*traces.load(&path)?))
        }
        Directive::Compare { address, format, unit } => compare(traces, address, *format, *unit),
        Directive::If { .. } | Directive::Else | Directive::End => {
            Err(Cause::Structure("misplaced `if`/`else`/`end`".into()))
        }
    }
}

/// The value as text, formatted, escaped for markdown, marked as measured. `unit` gives a unit to
/// a number inside a recorded object (the record's unit covers the whole record).
fn value(
    traces: &mut Traces,
    path: &Path,
    trace: &Trace,
    address: &Address,
    format: Format,
    unit: Option<Unit>,
) -> Result<String, Cause> {
    let found = traces.resolve(path, trace, address)?;
    let bad = |msg: String| Cause::BadValue {
        trace: path.to_path_buf(),
        address: address.to_string(),
        msg,
    };
    let unit = match (unit, found.record.unit) {
        (None, recorded) => recorded,
        (Some(given), Unit::None) => given,
        (Some(_), recorded) => {
            return Err(bad(format!(
                "it was recorded with unit {recorded:?}; `unit=` is only for values recorded without one"
            )));
        }
    };
    let text = format_value(found.value, unit, format).map_err(bad)?;
    // Numbers stay on one line; lists and text (error messages) may wrap.
    let class = match found.value {
        serde_json::Value::Array(_) | serde_json::Value::Object(_) => "lecture-value lecture-list",
        serde_json::Value::String(_) if unit == Unit::None => "lecture-value lecture-text",
        _ => "lecture-value",
    };
    let title = format!(
        "{address} · {} trace · {}:{}",
        trace.provenance.device.slug, found.section.source_file, found.record.line
    );
    let mark = found.older_code.as_ref().map_or(String::new(), older_code_mark);
    // Inline: markdown reads around these tags, so even the attribute is escaped for markdown
    // (a backtick in it could close a code span the chapter opened before).
    Ok(format!(
        "<span class=\"{class}\" title=\"{}\">{}</span>{mark}",
        escape_inline(&title),
        escape_inline(&text)
    ))
}

/// The mark beside values that code as it is now did not record (another device's trace). It
/// also stands inline in prose (after a value), so its text is escaped for markdown too.
pub fn older_code_mark(older: &OlderCode) -> String {
    format!(
        "<span class=\"lecture-older-code\" title=\"the section's code changed after this trace recorded it; \
         only the device that wrote the trace can record it again\">{}</span>",
        escape_inline(&older.text())
    )
}

/// The commit as `abc1234`, with whether the tree had uncommitted changes.
fn short_commit(trace: &Trace, long: bool) -> String {
    let git = &trace.provenance.git;
    let commit = git.commit.as_deref().map_or("unknown".to_string(), |c| {
        c.chars().take(if long { 10 } else { 7 }).collect()
    });
    match (git.dirty, long) {
        (Some(true), true) => format!("{commit} with uncommitted changes"),
        (Some(true), false) => format!("{commit} (dirty)"),
        (None, true) => format!("{commit} (clean or not: unknown)"),
        _ => commit,
    }
}

/// The date part of an RFC 3339 time, and its clock time.
fn when(created_at: &str) -> String {
    match created_at.split_once('T') {
        Some((date, time)) => format!("{date} {} UTC", time.trim_end_matches('Z').get(..5).unwrap_or(time)),
        None => created_at.to_string(),
    }
}

fn provenance(path: &Path, trace: &Trace) -> String {
    let p = &trace.provenance;
    let memory = p.device.memory_bytes.map_or(String::new(), |b| {
        let text = format_value(&serde_json::Value::from(b), Unit::Bytes, Format::Auto).unwrap_or_default();
        format!(", {text} of memory")
    });
    let no_gpu = match &p.device.cuda_unavailable_reason {
        Some(why) if p.device.kind == "cpu" => format!(" No GPU was used: {}.", escape(why)),
        _ => String::new(),
    };
    format!(
        "<div class=\"lecture-provenance\"><strong>Where the numbers on this page come from:</strong> the <code>{}</code> trace, \
         recorded on {} ({}{memory}) by commit <code>{}</code> on {}, seed {}, {}.{no_gpu} \
         <span class=\"lecture-muted\">File: {}</span></div>",
        escape(&p.device.slug),
        escape(&p.device.name),
        escape(&p.device.kind),
        escape(&short_commit(trace, true)),
        escape(&when(&p.created_at)),
        p.seed,
        escape(&p.rustc),
        escape(
            &path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default()
        ),
    )
}

/// One row per trace in the folder, device named.
fn compare(traces: &mut Traces, address: &Address, format: Format, unit: Option<Unit>) -> Result<String, Cause> {
    let mut rows = String::new();
    for (path, trace) in traces.all()? {
        let cell = value(traces, &path, &trace, address, format, unit)?;
        let p = &trace.provenance;
        rows.push_str(&format!(
            "<tr><td><code>{}</code></td><td>{}</td><td>{cell}</td><td>{}, <code>{}</code></td></tr>",
            escape(&p.device.slug),
            escape(&p.device.name),
            escape(p.created_at.split('T').next().unwrap_or_default()),
            escape(&short_commit(&trace, false)),
        ));
    }
    Ok(format!(
        "<div class=\"lecture-compare\"><table><thead><tr><th>Trace</th><th>Device</th><th>Value of <code>{}</code></th><th>Recorded</th></tr></thead><tbody>{rows}</tbody></table></div>",
        escape(&address.to_string())
    ))
}
