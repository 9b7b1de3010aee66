//! One section run: its function called with its context, its values placed by token, its
//! record assembled. Apart from the lecture's run (`run.rs`) and the watch around each section
//! (`watch.rs`), which both call it: the watch reruns a disturbed section, the run watches each.

use std::time::Instant;

use super::{DevicesRow, SectionCtx, SectionDef};
use crate::device::DeviceChoice;
use crate::error::Error;
use crate::trace::source::FunctionSource;
use crate::trace::{self, RunInfo, SectionRecord, ValueRecord};

/// A section that failed, and why. The cause is part of the message, not a `source`: with a
/// source, `anyhow`'s `{:#}` would print it twice.
#[derive(Debug, thiserror::Error)]
#[error("section `{id}` failed: {cause}")]
pub struct SectionError {
    pub id: &'static str,
    pub cause: Box<Error>,
}

/// Givens a what-if changed: by section id, the given's name and its value in the trace's form.
pub type Overrides = indexmap::IndexMap<&'static str, indexmap::IndexMap<String, serde_json::Value>>;

/// Runs one section and returns its record, with `run` as its provenance.
pub fn run_section(def: &SectionDef, choice: &DeviceChoice, run: &RunInfo) -> Result<SectionRecord, SectionError> {
    run_section_with(def, choice, run, &Overrides::new())
}

/// `run_section` with the givens `overrides` changed.
pub fn run_section_with(
    def: &SectionDef,
    choice: &DeviceChoice,
    run: &RunInfo,
    overrides: &Overrides,
) -> Result<SectionRecord, SectionError> {
    let fail = |cause| SectionError {
        id: def.id,
        cause: Box::new(cause),
    };
    let code = trace::source::function_source(def.source, def.id)
        .map_err(|e| fail(Error::invalid("section", format!("{}: {e}", def.file))))?;
    let mut cx = SectionCtx::new(def.id, def.file, choice, run.seed);
    if let Some(changed) = overrides.get(def.id) {
        cx.overrides = changed.clone();
    }
    let start = Instant::now();
    (def.run)(&mut cx).map_err(fail)?;
    let wall_time_s = start.elapsed().as_secs_f64();
    let (mut values, steps) = cx.into_parts();
    for value in values.values_mut() {
        place_by_token(value, &code);
    }
    Ok(SectionRecord {
        id: def.id.to_string(),
        title: def.title.to_string(),
        source_file: def.file.to_string(),
        source_line: code.start_line,
        source_hash: code.hash(),
        wall_time_s,
        run: run.clone(),
        values,
        steps,
        // The watch around the section decides (`watch::run_watched`).
        disturbed: None,
        charts: def.charts.iter().map(|c| c.to_string()).collect(),
        devices: def.devices.iter().map(DevicesRow::to_trace).collect(),
    })
}

/// Notes, for the value and each earlier state, the token its line starts with: the book finds
/// the line again after the code is reformatted (same tokens, other lines).
fn place_by_token(value: &mut ValueRecord, code: &FunctionSource) {
    let token = |line: u32| if line == 0 { None } else { code.token_at_line(line) };
    value.token = token(value.line);
    for state in &mut value.history {
        state.token = token(state.line);
    }
}
