//! Running sections and assembling the trace. A section that fails stops the run with its id and
//! the cause; the caller then leaves any existing trace file untouched.

use std::path::Path;
use std::time::Instant;

use super::{LECTURE, SECTIONS, SectionCtx, SectionDef};
use crate::device::{Device, DeviceChoice};
use crate::error::{Error, Result};
use crate::host;
use crate::trace::{self, DeviceInfo, Provenance, SCHEMA_VERSION, SectionRecord, Trace, provenance};

/// A section that failed, and why. The cause is part of the message, not a `source`: with a
/// source, `anyhow`'s `{:#}` would print it twice.
#[derive(Debug, thiserror::Error)]
#[error("section `{id}` failed: {cause}")]
pub struct SectionError {
    pub id: &'static str,
    pub cause: Box<Error>,
}

/// Runs one section and returns its record.
pub fn run_section(def: &SectionDef, choice: &DeviceChoice, seed: u64) -> Result<SectionRecord, SectionError> {
    let fail = |cause| SectionError {
        id: def.id,
        cause: Box::new(cause),
    };
    let code = trace::source::function_source(def.source, def.id)
        .map_err(|e| fail(Error::invalid("section", format!("{}: {e}", def.file))))?;
    let mut cx = SectionCtx::new(def.id, def.file, choice, seed);
    let start = Instant::now();
    (def.run)(&mut cx).map_err(fail)?;
    let wall_time_s = start.elapsed().as_secs_f64();
    Ok(SectionRecord {
        id: def.id.to_string(),
        title: def.title.to_string(),
        source_file: def.file.to_string(),
        source_line: code.start_line,
        source_hash: code.hash(),
        wall_time_s,
        recorded_at: provenance::now(),
        git_commit: None,
        values: cx.into_values(),
    })
}

pub fn device_info(choice: &DeviceChoice) -> DeviceInfo {
    match &choice.device {
        Device::Cpu => DeviceInfo {
            kind: "cpu".into(),
            name: host::cpu_model(),
            slug: choice.device.slug(),
            memory_bytes: host::memory_bytes(),
            cuda_unavailable_reason: choice.cuda_unavailable_reason.clone(),
            // Which instructions the CPU's bfloat16 matmul uses on this host.
            details: [(
                "bf16_matmul_isa".to_string(),
                serde_json::json!(crate::device::cpu::bf16_matmul_isa()),
            )]
            .into_iter()
            .collect(),
        },
        Device::Cuda(c) => {
            let props = c.props();
            let mut details = props.details();
            details.insert("kernel_compile_seconds".into(), serde_json::json!(c.compile_seconds));
            DeviceInfo {
                kind: "cuda".into(),
                name: props.name.clone(),
                slug: props.slug(),
                memory_bytes: Some(props.total_memory as u64),
                cuda_unavailable_reason: None,
                details,
            }
        }
    }
}

pub fn provenance(choice: &DeviceChoice, seed: u64, root: &Path) -> Provenance {
    Provenance {
        device: device_info(choice),
        host: provenance::host(),
        os: host::os(),
        git: provenance::git(root),
        rustc: provenance::rustc(),
        created_at: provenance::now(),
        seed,
        command_line: std::env::args().collect(),
    }
}

/// Runs `selected` sections (all when empty) and merges them into `previous` (keeping the other
/// sections it holds, in lecture order). `on_done` sees each record as it completes.
pub fn run_lecture(
    selected: &[&'static SectionDef],
    choice: &DeviceChoice,
    seed: u64,
    root: &Path,
    previous: Option<Trace>,
    mut on_done: impl FnMut(&SectionRecord),
) -> Result<Trace, SectionError> {
    let to_run: Vec<&SectionDef> = if selected.is_empty() {
        SECTIONS.iter().collect()
    } else {
        selected.to_vec()
    };
    let provenance = provenance(choice, seed, root);
    let mut fresh = Vec::new();
    for def in to_run {
        let mut record = run_section(def, choice, seed)?;
        record.git_commit = provenance.git.commit.clone();
        on_done(&record);
        fresh.push(record);
    }
    let fresh = Trace {
        schema_version: SCHEMA_VERSION,
        lecture: LECTURE.to_string(),
        provenance,
        sections: fresh,
    };
    Ok(merge(previous, fresh))
}

/// The sections of `fresh` merged into `previous` (keeping the other sections it holds), in
/// lecture order. The `lecture` binary runs the sections first and merges under the trace's
/// lock, into the trace as it is then: a concurrent run may have written it meanwhile.
pub fn merge(previous: Option<Trace>, fresh: Trace) -> Trace {
    let mut sections = previous.map(|t| t.sections).unwrap_or_default();
    for record in fresh.sections {
        match sections.iter_mut().find(|s| s.id == record.id) {
            Some(slot) => *slot = record,
            None => sections.push(record),
        }
    }
    // Lecture order; sections this build no longer knows go last, unchanged.
    let rank = |id: &str| SECTIONS.iter().position(|s| s.id == id).unwrap_or(usize::MAX);
    sections.sort_by_key(|s| rank(&s.id));
    Trace { sections, ..fresh }
}
