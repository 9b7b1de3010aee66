//! Values that older code never recorded. A trace that is not held to the code (another CPU's, a
//! GPU's) keeps what its run of an older commit recorded; a chapter written since may quote a
//! value that run did not have. That is no fault of the chapter, and only that device can record
//! the trace again, so the page shows a visible placeholder in the value's place, lists each such
//! value once at its end, and a claim that needs one takes no branch and says so. In the trace that
//! is held to the code (or in a section the current code recorded) a missing value stays a build
//! failure: there it is a wrong name in the chapter, or a value the code forgot to record.

use std::path::{Path, PathBuf};

use super::html::{escape, escape_inline};
use super::problem::Cause;
use super::provenance::short_commit;
use super::traces::Traces;

/// A value a directive asked for that the run which wrote a lenient trace did not record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unrecorded {
    pub trace: PathBuf,
    /// The trace's device, as a reader says it (`device_names`).
    pub device: String,
    /// `SECTION.NAME[.PATH]`, or the section alone when the run recorded none of it.
    pub key: String,
    /// The abbreviated commit of the run that recorded the section (or the trace's newest run).
    pub commit: String,
}

impl Unrecorded {
    /// The words in the value's place.
    pub fn text(&self) -> String {
        format!("not recorded by the run of commit {}", self.commit)
    }

    /// The placeholder, inline (it may stand in a sentence, so it is escaped for markdown too).
    pub fn placeholder(&self) -> String {
        format!(
            "<span class=\"lecture-unrecorded\" title=\"{} · the {}'s trace: this run of older code did not record it; only that \
             device can record the trace again\">{}</span>",
            escape_inline(&self.key),
            escape_inline(&self.device),
            escape_inline(&self.text())
        )
    }

    /// The placeholder inside a formula: the same words and hover title as MathML text.
    pub fn placeholder_in_math(&self) -> String {
        format!(
            "<mtext class=\"lecture-unrecorded\" title=\"{} · the {}'s trace: this run of older code did not record it; only \
             that device can record the trace again\">{}</mtext>",
            escape_inline(&self.key),
            escape_inline(&self.device),
            escape_inline(&self.text())
        )
    }

    /// What stands where a claim that needs the value would have chosen a passage.
    pub fn undecided(&self) -> String {
        format!(
            "<span class=\"lecture-unrecorded\">(a passage here depends on <code>{}</code>, which the {}'s run of \
             commit {} did not record)</span>",
            escape_inline(&self.key),
            escape_inline(&self.device),
            escape_inline(&self.commit)
        )
    }
}

/// Whether `cause` is a value, state, path or section missing from a lenient trace's section that
/// older code recorded (or from which the older run recorded nothing): if so, what to show.
pub fn unrecorded(traces: &mut Traces, cause: &Cause) -> Option<Unrecorded> {
    let (trace, section, key) = match cause {
        Cause::MissingValue {
            trace, section, name, ..
        } => (trace, section.clone(), format!("{section}.{name}")),
        Cause::MissingPath { trace, address, .. } | Cause::MissingState { trace, address, .. } => {
            let section = address.split('.').next().unwrap_or_default().to_string();
            (trace, section, address.clone())
        }
        Cause::MissingSection { trace, section, .. } => (trace, section.clone(), section.clone()),
        _ => return None,
    };
    if !traces.is_lenient(trace) {
        return None;
    }
    let loaded = traces.load(trace).ok()?;
    let run = match loaded.section(&section) {
        // A section the current code recorded that lacks the value: the chapter is wrong.
        Some(s) => {
            traces.section(trace, &loaded, &section).ok()?.older_code?;
            &s.run
        }
        None => {
            let newest = loaded.created_at()?;
            &loaded.sections.iter().find(|s| s.run.recorded_at == newest)?.run
        }
    };
    Some(Unrecorded {
        trace: trace.clone(),
        device: super::device_names::spoken(&loaded.provenance.device),
        key,
        commit: short_commit(&run.git, false),
    })
}

/// `result`, or the placeholder when it failed for a value the trace's older run never recorded
/// (noted for the page's list).
pub fn or_placeholder(traces: &mut Traces, result: Result<String, Cause>) -> Result<String, Cause> {
    shown_or(traces, result, Unrecorded::placeholder)
}

/// [`or_placeholder`] for a value inside a formula: the placeholder as MathML.
pub fn or_placeholder_in_math(traces: &mut Traces, result: Result<String, Cause>) -> Result<String, Cause> {
    shown_or(traces, result, Unrecorded::placeholder_in_math)
}

fn shown_or(
    traces: &mut Traces,
    result: Result<String, Cause>,
    placeholder: fn(&Unrecorded) -> String,
) -> Result<String, Cause> {
    match result {
        Err(cause) => match unrecorded(traces, &cause) {
            Some(missing) => {
                let shown = placeholder(&missing);
                traces.note_unrecorded(missing);
                Ok(shown)
            }
            None => Err(cause),
        },
        Ok(shown) => Ok(shown),
    }
}

/// The page's list of values its traces' older runs did not record, one line per trace.
pub fn list(missing: &[Unrecorded]) -> Option<String> {
    if missing.is_empty() {
        return None;
    }
    let mut traces: Vec<&Path> = Vec::new();
    for m in missing {
        if !traces.contains(&m.trace.as_path()) {
            traces.push(&m.trace);
        }
    }
    let items: Vec<String> = traces
        .into_iter()
        .map(|path| {
            let of: Vec<&Unrecorded> = missing.iter().filter(|m| m.trace == path).collect();
            let mut commits: Vec<&str> = of.iter().map(|m| m.commit.as_str()).collect();
            commits.dedup();
            let keys: Vec<String> = of.iter().map(|m| format!("<code>{}</code>", escape(&m.key))).collect();
            format!(
                "<li>The {}'s trace (<code>{}</code>, run of commit {}): {}</li>",
                escape(&of[0].device),
                escape(&path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()),
                escape(&commits.join(", ")),
                keys.join(", ")
            )
        })
        .collect();
    Some(format!(
        "<div class=\"lecture-unrecorded-list\"><p>Not recorded by the older code that wrote these traces, so shown as \
         such above; only each trace's own device can record it again:</p><ul>{}</ul></div>",
        items.join("")
    ))
}
