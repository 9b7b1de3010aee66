//! Rendering one chapter: every directive outside code is replaced by what it stands for, and
//! `if`/`else`/`end` keep or drop the lines between them. Problems are collected, not stopped at,
//! so one build reports everything that is wrong. `{{provenance}}` is rendered last, when the
//! chapter's other directives have said which sections they quote.

use std::ops::Range;
use std::path::Path;

use super::chart;
use super::claims::Branches;
use super::code_view;
use super::devices;
use super::directive::{self, Address, Directive, Found};
use super::format::{Format, format_value};
use super::html::{escape, escape_inline};
use super::math;
use super::problem::Cause;
use super::provenance::{self, short_commit};
use super::sections::OlderCode;
use super::tables;
use super::traces::Traces;
use super::unrecorded;
use crate::trace::{Trace, Unit};

/// A problem at a line of the chapter, with the directive as written.
pub type Located = (usize, String, Cause);

/// Renders `markdown`; on failure returns every problem found.
pub fn render_chapter(markdown: &str, traces: &mut Traces) -> Result<String, Vec<Located>> {
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    let mut problems = Vec::new();
    let mut branches = Branches::default();
    // Where the text being dropped (an untaken branch) started.
    let mut dropping_from: Option<usize> = None;
    // Provenance boxes wait for the quotes of the whole chapter.
    let mut provenance_boxes: Vec<(Found, Option<String>)> = Vec::new();
    traces.take_quotes();
    traces.take_unrecorded();
    // Formulas, and the values rendered inside each (by their directive's span).
    let formulas = math::find(markdown);
    let mut in_formulas: Vec<Vec<(Range<usize>, Option<String>)>> = vec![Vec::new(); formulas.len()];
    let formula_of = |span: &Range<usize>| {
        formulas
            .iter()
            .position(|f| f.inner.start <= span.start && span.end <= f.inner.end)
    };

    for found in directive::find(markdown) {
        if let Some(i) = formula_of(&found.span) {
            // Inside a formula only values stand; an untaken branch leaves the formula out too.
            let rendered = match &found.parsed {
                // A value an older run never recorded stands as the placeholder, as outside.
                Ok(d) if branches.active() => {
                    let rendered = value_in_math(d, traces);
                    Some(unrecorded::or_placeholder_in_math(traces, rendered))
                }
                Ok(_) => None,
                Err(msg) => Some(Err(Cause::Malformed(msg.clone()))),
            };
            match rendered.transpose() {
                Ok(html) => in_formulas[i].push((found.span.clone(), html)),
                Err(cause) => problems.push((found.line, found.text.clone(), cause)),
            }
            continue;
        }
        let directive = match &found.parsed {
            Ok(d) => d,
            Err(msg) => {
                problems.push((found.line, found.text.clone(), Cause::Malformed(msg.clone())));
                // A malformed `if` still opens a branch, so its `end` is not reported as stray.
                branches.open_unparsed(&found);
                continue;
            }
        };
        let was_active = branches.active();
        match directive {
            Directive::If { .. }
            | Directive::ElseIf { .. }
            | Directive::Else
            | Directive::End
            | Directive::Assert { .. } => {
                if let Err(cause) = branches.step(directive, &found, traces) {
                    problems.push((found.line, found.text.clone(), cause));
                }
            }
            _ if !was_active => continue,
            Directive::Provenance { trace } => {
                provenance_boxes.push((found.clone(), trace.clone()));
                continue;
            }
            _ => {
                let rendered = render_one(directive, traces);
                match unrecorded::or_placeholder(traces, rendered) {
                    Ok(html) if directive.is_block() => edits.push((found.line_span.clone(), format!("\n{html}\n"))),
                    Ok(html) => edits.push((found.span.clone(), html)),
                    Err(cause) => problems.push((found.line, found.text.clone(), cause)),
                }
                continue;
            }
        }
        // An if/else/end/assert: remove it (its line when it stands alone, else the directive),
        // and any untaken branch it opens or closes.
        let line = if found.standalone {
            whole_line(markdown, &found)
        } else {
            found.span.clone()
        };
        // A claim that needed a value the trace's older run never recorded: no branch was taken, and
        // the note stands where the passage would have been.
        if let Some(note) = branches.take_note() {
            edits.push((line.start..line.start, note));
        }
        let now_active = branches.active();
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
    for (formula, values) in formulas.iter().zip(in_formulas) {
        match typeset(markdown, formula, values) {
            Ok(Some(html)) => edits.push((formula.span.clone(), html)),
            Ok(None) => {}
            Err(msg) => problems.push((
                markdown[..formula.span.start].matches('\n').count() + 1,
                markdown[formula.span.clone()].to_string(),
                Cause::Malformed(msg),
            )),
        }
    }
    let quotes = traces.take_quotes();
    // Timings measured on a busy machine are said at the top, not only in the box at the end; first
    // among the edits, so an edit that starts at the same place (a dropped branch) cannot hide it.
    let busy = provenance::busy_notes(traces, &quotes);
    if !busy.is_empty() {
        let at = after_own_heading(markdown);
        edits.insert(0, (at..at, format!("\n{busy}\n\n")));
    }
    // The values shown as not recorded, listed once, before the provenance box (else at the end).
    if let Some(list) = unrecorded::list(&traces.take_unrecorded()) {
        let at = provenance_boxes
            .first()
            .map_or(markdown.len(), |(found, _)| found.line_span.start);
        edits.push((at..at, format!("\n{list}\n\n")));
    }
    for (found, trace) in provenance_boxes {
        let rendered = traces.path(trace.as_deref()).and_then(|path| {
            let trace = traces.load(&path)?;
            Ok(provenance::render(&path, &trace, &quotes))
        });
        match rendered {
            Ok(html) => edits.push((found.line_span.clone(), format!("\n{html}\n"))),
            Err(cause) => problems.push((found.line, found.text.clone(), cause)),
        }
    }
    problems.extend(branches.unclosed());
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(apply(markdown, edits))
}

/// A formula as MathML with its values in place, or None when it sits in an untaken branch (its
/// values were not rendered, and the branch's text is dropped).
fn typeset(
    markdown: &str,
    formula: &math::Formula,
    values: Vec<(Range<usize>, Option<String>)>,
) -> Result<Option<String>, String> {
    let mut latex = String::new();
    let mut at = formula.inner.start;
    let mut shown = Vec::new();
    for (span, html) in values {
        let Some(html) = html else { return Ok(None) };
        latex.push_str(&markdown[at..span.start]);
        latex.push_str(&math::placeholder(shown.len()));
        shown.push(html);
        at = span.end;
    }
    latex.push_str(&markdown[at..formula.inner.end]);
    math::typeset(&latex, formula.block, &shown).map(Some)
}

/// Where a chapter's text starts: after its own heading line, when it has one (a chapter that is
/// one section gets its heading later, above everything).
fn after_own_heading(markdown: &str) -> usize {
    let start = markdown.len() - markdown.trim_start().len();
    if !markdown[start..].starts_with("# ") {
        return 0;
    }
    markdown[start..].find('\n').map_or(markdown.len(), |n| start + n + 1)
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
            let shown = traces.section(&path, &trace, section)?;
            // The code view shows every value of the section.
            traces.quote(&path, section, shown.record.values.values().any(|v| v.timed()));
            Ok(code_view::render(&trace, &shown))
        }
        Directive::Chart { id, trace } => {
            let path = traces.path(trace.as_deref())?;
            let trace = traces.load(&path)?;
            chart::render(id, &path, &trace, traces)
        }
        Directive::Compare { address, format, unit } => compare(traces, address, *format, *unit),
        Directive::Device { section, trace } => {
            let path = traces.path(trace.as_deref())?;
            let trace = traces.load(&path)?;
            let shown = traces.section(&path, &trace, section)?;
            let mark = match &shown.older_code {
                Some(older) => traces.older_mark(&path, section, older),
                None => String::new(),
            };
            Ok(device_tag(&trace, &shown, &mark))
        }
        Directive::Devices => devices::render(traces),
        Directive::Check { address, trace } => {
            let path = traces.path(trace.as_deref())?;
            let trace = traces.load(&path)?;
            super::checks::render(traces, &path, &trace, address)
        }
        Directive::Times { top, bottom, trace } => {
            let path = traces.path(trace.as_deref())?;
            let trace = traces.load(&path)?;
            super::times::render(traces, &path, &trace, top, bottom)
        }
        // The citation pass (`citations.rs`) replaced these before this chapter was rendered.
        Directive::Cite { .. } | Directive::References => Err(Cause::Structure(
            "`cite`/`references` outside the book's citation pass".into(),
        )),
        Directive::Table {
            address,
            format,
            unit,
            trace,
            columns,
        } => tables::table(traces, address, *format, *unit, trace.as_deref(), columns.as_deref()),
        Directive::If { .. }
        | Directive::ElseIf { .. }
        | Directive::Else
        | Directive::End
        | Directive::Assert { .. }
        | Directive::Provenance { .. } => Err(Cause::Structure(
            "misplaced `if`/`else`/`end`/`assert`/`provenance`".into(),
        )),
    }
}

/// The value as text, formatted, escaped for markdown, marked with what decided it. `unit` gives a unit to
/// a number inside a recorded object (the record's unit covers the whole record).
pub(super) fn value(
    traces: &mut Traces,
    path: &Path,
    trace: &Trace,
    address: &Address,
    format: Format,
    unit: Option<Unit>,
) -> Result<String, Cause> {
    let shown = value_parts(traces, path, trace, address, format, unit)?;
    // Inline: markdown reads around these tags, so even the attribute is escaped for markdown
    // (a backtick in it could close a code span the chapter opened before).
    Ok(format!(
        "<span class=\"{}\" title=\"{}\">{}</span>{}{}",
        shown.class,
        escape_inline(&shown.title),
        escape_inline(&shown.text),
        shown.mark,
        shown.own
    ))
}

/// A value inside a formula: MathML text with the value's kind and key, as beside prose. The
/// marks that follow a value in prose (older code, what-if) are HTML, which MathML cannot hold;
/// the page's provenance box still lists the section.
fn value_in_math(directive: &Directive, traces: &mut Traces) -> Result<String, Cause> {
    let Directive::Value {
        address,
        format,
        unit,
        trace,
    } = directive
    else {
        return Err(Cause::Structure(
            "only `value` directives can stand inside a formula".into(),
        ));
    };
    let path = traces.path(trace.as_deref())?;
    let trace = traces.load(&path)?;
    let shown = value_parts(traces, &path, &trace, address, *format, *unit)?;
    Ok(format!(
        "<mtext class=\"{}\" title=\"{}\">{}</mtext>",
        shown.class,
        escape_inline(&shown.title),
        escape_inline(&shown.text)
    ))
}

/// What a value shows: its text, its classes and hover title, and the HTML that follows it.
struct Shown {
    text: String,
    class: String,
    title: String,
    mark: String,
    own: String,
}

fn value_parts(
    traces: &mut Traces,
    path: &Path,
    trace: &Trace,
    address: &Address,
    format: Format,
    unit: Option<Unit>,
) -> Result<Shown, Cause> {
    let found = traces.resolve(path, trace, address)?;
    let bad = |msg: String| Cause::BadValue {
        trace: path.to_path_buf(),
        address: address.to_string(),
        msg,
    };
    let holds_object = |v: &serde_json::Value| v.as_array().is_some_and(|items| items.iter().any(|i| i.is_object()));
    if found.value.is_object() || holds_object(found.value) {
        return Err(bad(format!(
            "it is an object (or a list of objects), which prose cannot show as raw JSON: quote one field (`{address}.FIELD`) or show \
             it whole with `{{{{table {address}}}}}`"
        )));
    }
    let unit = match (unit, found.record.unit) {
        (None, recorded) => recorded,
        (Some(given), Unit::None) => given,
        (Some(_), recorded) => {
            return Err(bad(format!(
                "it was recorded with unit {recorded:?}; `unit=` is only for values recorded without one"
            )));
        }
    };
    // A yes-or-no value reads as a word (a table's "Shares x's storage?" column); a sentence
    // says it with `{{if}}` instead.
    let text = match found.value {
        serde_json::Value::Bool(b) => (if *b { "yes" } else { "no" }).to_string(),
        v => format_value(v, unit, format).map_err(bad)?,
    };
    // Numbers stay on one line; lists and text (error messages) may wrap.
    let shape = match found.value {
        serde_json::Value::Array(_) | serde_json::Value::Object(_) => " lecture-list",
        serde_json::Value::String(_) if unit == Unit::None => " lecture-text",
        _ => "",
    };
    // What decided it: measured, computed or given, styled and said on hover.
    let class = format!("lecture-value {}{shape}", super::kinds::class(found.record));
    // Older code's line is a line of its own commit: today's file may have moved or gone.
    let commit = found
        .older_code
        .as_ref()
        .map_or(String::new(), |o| format!(" in commit {}", o.commit));
    let title = format!(
        "{} · {address} · {} trace · {}:{}{commit}",
        super::kinds::words(found.record),
        trace.provenance.device.slug,
        found.section.source_file,
        found.line
    );
    let mark = match &found.older_code {
        Some(older) => traces.older_mark(path, &address.section, older),
        None => String::new(),
    };
    let own = super::what_if::beside(traces, path, address, found.value, unit, format);
    Ok(Shown {
        text,
        class,
        title,
        mark,
        own,
    })
}

/// The device that recorded a section, the day, and the older-code mark where it applies: what a
/// figure quoted from another trace carries.
fn device_tag(trace: &Trace, shown: &super::sections::Section, mark: &str) -> String {
    let day = shown.record.run.recorded_at.split('T').next().unwrap_or_default();
    format!(
        "<span class=\"lecture-device\" title=\"{} trace, commit {}\">{}, {}</span>{mark}",
        escape_inline(&trace.provenance.device.slug),
        escape_inline(&short_commit(&shown.record.run.git, false)),
        escape_inline(&super::device_names::spoken(&trace.provenance.device)),
        escape_inline(day)
    )
}

/// The mark beside values that code as it is now did not record (another device's trace). It
/// also stands inline in prose (after a value), so its text is escaped for markdown too.
pub fn older_code_mark(older: &OlderCode) -> String {
    mark_html(&older.text())
}

/// The mark's short form, for a section whose full mark the page already showed: the dagger that
/// mark began with, its words on hover.
pub fn older_code_dagger(older: &OlderCode) -> String {
    format!(
        "<span class=\"lecture-older-code lecture-older-code-short\" title=\"{}\">†</span>",
        escape_inline(&older.text())
    )
}

/// The full mark links to the one place that explains it, so a reader who meets it first on any
/// page can find out what it means.
fn mark_html(text: &str) -> String {
    format!(
        "<a class=\"lecture-older-code\" href=\"how_this_book_is_made.html#where-the-numbers-come-from\" \
         title=\"the section's code changed after this trace recorded it; only the device that wrote the trace can \
         record it again\">{}</a>",
        escape_inline(text)
    )
}

/// One row per trace in the folder, device named.
fn compare(traces: &mut Traces, address: &Address, format: Format, unit: Option<Unit>) -> Result<String, Cause> {
    let mut rows = String::new();
    for (path, trace) in traces.all()? {
        let shown = value(traces, &path, &trace, address, format, unit);
        let cell = unrecorded::or_placeholder(traces, shown)?;
        let p = &trace.provenance;
        // When and by which commit this trace's section was recorded.
        let recorded = trace.section(&address.section).map_or(String::new(), |s| {
            format!(
                "{}, <code>{}</code>",
                escape(s.run.recorded_at.split('T').next().unwrap_or_default()),
                escape(&short_commit(&s.run.git, false))
            )
        });
        rows.push_str(&format!(
            "<tr><td><code>{}</code></td><td>{}</td><td>{cell}</td><td>{recorded}</td></tr>",
            escape(&p.device.slug),
            escape(&p.device.name),
        ));
    }
    Ok(format!(
        "<div class=\"lecture-compare\"><table><thead><tr><th>Trace</th><th>Device</th><th title=\"{}\">Recorded value</th><th>Recorded</th></tr></thead><tbody>{rows}</tbody></table></div>",
        // The key is for whoever edits the chapter (on hover); the prose above says what it is.
        escape(&address.to_string())
    ))
}
