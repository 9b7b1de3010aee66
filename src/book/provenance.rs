//! The provenance box (`{{provenance}}`): which device recorded the numbers on a page, and which
//! runs recorded the sections the page quotes (commit, date, seed, compiler, build). Sections of
//! one trace may come from different runs (`lecture --section ID` re-records one): one run is said
//! in one line, several are listed with their sections. Timings from a binary built without
//! optimisation describe that build, not the machine: the box says so when the page quotes them.
//! So do timings measured while the machine was busy (a section's `disturbed` mark): the box says
//! so, and so does a line at the top of the page ([`busy_notes`]).

use std::path::Path;

use super::format::{Format, format_value};
use super::html::escape;
use super::traces::{Quote, Traces};
use crate::trace::{GitInfo, RunInfo, SectionRecord, Trace, Unit};

/// The commit as `abc1234`, with whether the tree had uncommitted changes.
pub fn short_commit(git: &GitInfo, long: bool) -> String {
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
pub fn when(recorded_at: &str) -> String {
    match recorded_at.split_once('T') {
        Some((date, time)) => format!("{date} {} UTC", time.trim_end_matches('Z').get(..5).unwrap_or(time)),
        None => recorded_at.to_string(),
    }
}

/// One run, and the sections shown that it recorded.
struct Run<'t> {
    run: &'t RunInfo,
    sections: Vec<&'t SectionRecord>,
    /// Of those, the ones whose values on the page depend on a clock.
    timed: Vec<&'t str>,
}

/// The sections of `trace` that `quotes` name (every section when they name none), grouped by
/// the run that recorded them, in lecture order.
fn runs<'t>(path: &Path, trace: &'t Trace, quotes: &[Quote]) -> (Vec<Run<'t>>, bool) {
    // For each section: whether the page quoted it, and whether a timed value of it.
    let quoted = |id: &str| -> (bool, bool) {
        let mut of = quotes.iter().filter(|q| q.trace == path && q.section == id).peekable();
        (of.peek().is_some(), of.any(|q| q.timed))
    };
    let any_quoted = trace.sections.iter().any(|s| quoted(&s.id).0);
    let mut runs: Vec<Run<'t>> = Vec::new();
    for section in &trace.sections {
        let (shown, timed) = if any_quoted {
            quoted(&section.id)
        } else {
            (true, section.values.values().any(|v| v.timed()))
        };
        if !shown {
            continue;
        }
        let at = match runs.iter().position(|r| *r.run == section.run) {
            Some(i) => i,
            None => {
                runs.push(Run {
                    run: &section.run,
                    sections: Vec::new(),
                    timed: Vec::new(),
                });
                runs.len() - 1
            }
        };
        runs[at].sections.push(section);
        if timed {
            runs[at].timed.push(&section.id);
        }
    }
    (runs, any_quoted)
}

/// "commit `abc…` on 2025-01-02 10:00 UTC, seed 0, rustc 1.90, release profile, opt-level 3".
fn describe(run: &RunInfo) -> String {
    format!(
        "commit <code>{}</code> on {}, seed {}, {}, {}",
        escape(&short_commit(&run.git, true)),
        escape(&when(&run.recorded_at)),
        run.seed,
        escape(&run.rustc),
        escape(&run.build.describe())
    )
}

fn section_list(ids: &[&str]) -> String {
    ids.iter()
        .map(|id| format!("<code>{}</code>", escape(id)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The box for the trace at `path`, describing the sections the page quoted from it.
pub fn render(path: &Path, trace: &Trace, quotes: &[Quote]) -> String {
    let p = &trace.provenance;
    let memory = p.device.memory_bytes.map_or(String::new(), |b| {
        let text = format_value(&serde_json::Value::from(b), Unit::Bytes, Format::Auto).unwrap_or_default();
        format!(", {text} of memory")
    });
    // The device as a reader says it; its slug (the file's name) stays in code.
    let device = format!(
        "Recorded on the {} ({}, {}{memory}; the <code>{}</code> trace)",
        escape(&super::device_names::spoken(&p.device)),
        escape(&p.device.name),
        escape(&p.device.kind),
        escape(&p.device.slug),
    );
    let (runs, any_quoted) = runs(path, trace, quotes);
    let origin = match runs.as_slice() {
        [] => ". It holds no sections.".to_string(),
        [one] => format!(" by {}.", describe(one.run)),
        many => {
            let items: String = many
                .iter()
                .map(|r| {
                    let ids: Vec<&str> = r.sections.iter().map(|s| s.id.as_str()).collect();
                    format!("<li>{}: {}</li>", describe(r.run), section_list(&ids))
                })
                .collect();
            let which = if any_quoted {
                "The sections quoted on this page"
            } else {
                "Its sections"
            };
            format!(". {which} come from {} runs:<ul>{items}</ul>", many.len())
        }
    };
    // What a run's timings describe, where it is not the machine: an unoptimised build's, or the
    // tests' budget's.
    let warnings: String = runs
        .iter()
        .filter(|r| !r.timed.is_empty())
        .flat_map(|r| {
            let unoptimised = (!r.run.build.is_optimised()).then(|| {
                format!(
                    "<p class=\"lecture-warning\"><strong>Unoptimised build:</strong> the times, speeds and ratios from {} \
                     were measured by a binary built without optimisation ({}): they describe that build, not the \
                     machine. <code>cargo run --release --bin lecture</code> measures the machine.</p>",
                    section_list(&r.timed),
                    escape(&r.run.build.describe())
                )
            });
            let test_budget = r.run.at_test_budget().then(|| {
                format!(
                    "<p class=\"lecture-warning\"><strong>Timed at the tests' budget:</strong> the times, speeds \
                     and ratios from {} are from one call each with no warm-up (<code>CS336_BUDGET=test</code>): \
                     they describe no machine. <code>cargo run --release --bin lecture</code> measures them.</p>",
                    section_list(&r.timed)
                )
            });
            [unoptimised, test_budget].into_iter().flatten()
        })
        .collect();
    // Per section, as it is per section that a run was measured again or not.
    let busy: String = runs
        .iter()
        .flat_map(|r| r.sections.iter().filter(|s| r.timed.contains(&s.id.as_str())))
        .filter_map(|s| busy_line(s))
        .collect();
    let warnings = warnings + &busy;
    let no_gpu = match &p.device.cuda_unavailable_reason {
        Some(why) if p.device.kind == "cpu" => format!(" No GPU was used: {}.", escape(why)),
        _ => String::new(),
    };
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    // One line a reader takes in at a glance (the device and the day); the runs behind a
    // disclosure; a warning about an unoptimised build stays in view.
    let mut days: Vec<&str> = runs.iter().filter_map(|r| r.run.recorded_at.get(..10)).collect();
    days.sort_unstable();
    days.dedup();
    let on = match days.as_slice() {
        [] => String::new(),
        [one] => format!(", {one}"),
        [first, .., last] => format!(", {first} to {last}"),
    };
    format!(
        "<div class=\"lecture-provenance\"><details><summary><strong>Where the numbers on this page come \
         from:</strong> {} ({}){}</summary>{device}{origin}{no_gpu} <span class=\"lecture-muted\">File: {}</span>\
         </details>{warnings}</div>",
        escape(&p.device.name),
        escape(&p.device.kind.to_uppercase()),
        escape(&on),
        escape(&file)
    )
}

/// The line a page shows for a section measured while the machine was busy, if it was.
fn busy_line(section: &SectionRecord) -> Option<String> {
    let d = section.disturbed.as_ref()?;
    Some(format!(
        "<p class=\"lecture-warning lecture-busy\"><strong>Measured while the machine was busy</strong> \
         (<code>{id}</code>: {why}); timings may be low. <code>cargo run --release --bin lecture -- --section \
         {id}</code> on a quiet machine measures them again.</p>",
        id = escape(&section.id),
        why = escape(&d.why)
    ))
}

/// The busy lines for every section whose timings the page quoted (any trace), for the top of
/// the page; empty when none was disturbed.
pub fn busy_notes(traces: &mut Traces, quotes: &[Quote]) -> String {
    let mut lines = String::new();
    for q in quotes.iter().filter(|q| q.timed) {
        // A trace that does not load has been reported where it was quoted.
        let Ok(trace) = traces.load(&q.trace) else { continue };
        if let Some(line) = trace.section(&q.section).and_then(busy_line)
            && !lines.contains(&line)
        {
            lines.push_str(&line);
        }
    }
    lines
}
