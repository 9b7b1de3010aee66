//! Running sections and assembling the trace. A section that fails stops the run with its id and
//! the cause; the caller then leaves any existing trace file untouched. Each section keeps the
//! provenance of the run that recorded it; a partial run replaces its own sections and keeps the
//! others as they were.

use std::path::Path;

use super::provenance;
use super::watch::{self, Policy};
use super::{LECTURE, SECTIONS, SectionDef};
use crate::device::{Device, DeviceChoice};
use crate::error::Result;
use crate::host;
use crate::trace::{DeviceInfo, Provenance, RunInfo, SCHEMA_VERSION, SectionRecord, Trace};

pub use super::section_run::{Overrides, SectionError, run_section, run_section_with};

pub fn device_info(choice: &DeviceChoice) -> Result<DeviceInfo> {
    Ok(match &choice.device {
        Device::Cpu => DeviceInfo {
            kind: "cpu".into(),
            name: host::cpu_model(),
            slug: choice.device.slug()?,
            memory_bytes: host::memory_bytes(),
            cuda_unavailable_reason: choice.cuda_unavailable_reason.clone(),
            // Which instructions the CPU's matmuls use on this host, and the level our own code was
            // limited to (CS336_CPU_ISA, else the best this CPU has).
            details: [
                (
                    "bf16_matmul_isa",
                    serde_json::json!(crate::device::cpu::bf16_matmul_isa()),
                ),
                (
                    "f32_matmul_isa",
                    serde_json::json!(crate::device::cpu::isa::f32_matmul_isa().name()),
                ),
                (
                    "cpu_isa",
                    serde_json::json!(crate::device::cpu::isa::current().map_or("invalid", |l| l.name())),
                ),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
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
    })
}

/// What the device decides, trace-wide.
pub fn provenance(choice: &DeviceChoice) -> Result<Provenance> {
    Ok(Provenance {
        device: device_info(choice)?,
        host: provenance::host(),
        os: host::os(),
    })
}

/// Runs `selected` sections (all when empty) and merges them into `previous` (keeping the other
/// sections it holds, with their own provenance, in lecture order). `on_done` sees each record
/// as it completes.
pub fn run_lecture(
    selected: &[&'static SectionDef],
    choice: &DeviceChoice,
    seed: u64,
    root: &Path,
    previous: Option<Trace>,
    on_done: impl FnMut(&SectionRecord),
) -> Result<Trace, SectionError> {
    run_lecture_with(selected, choice, seed, root, previous, &Overrides::new(), on_done)
}

/// `run_lecture` with the givens `overrides` changed (a what-if). A disturbed section is marked,
/// not measured again (`watch::Policy::mark_only`).
pub fn run_lecture_with(
    selected: &[&'static SectionDef],
    choice: &DeviceChoice,
    seed: u64,
    root: &Path,
    previous: Option<Trace>,
    overrides: &Overrides,
    on_done: impl FnMut(&SectionRecord),
) -> Result<Trace, SectionError> {
    let policy = Policy::mark_only();
    run_lecture_watched(
        selected,
        choice,
        seed,
        root,
        previous,
        overrides,
        &policy,
        on_done,
        |_| {},
    )
}

/// `run_lecture_with`, treating disturbed sections as `policy` says; `note` hears each retry and
/// each peak that moved, in a line for the terminal.
#[allow(clippy::too_many_arguments)]
pub fn run_lecture_watched(
    selected: &[&'static SectionDef],
    choice: &DeviceChoice,
    seed: u64,
    root: &Path,
    previous: Option<Trace>,
    overrides: &Overrides,
    policy: &Policy,
    mut on_done: impl FnMut(&SectionRecord),
    mut note: impl FnMut(&str),
) -> Result<Trace, SectionError> {
    let to_run: Vec<&SectionDef> = if selected.is_empty() {
        SECTIONS.iter().collect()
    } else {
        selected.to_vec()
    };
    let run = provenance::run(seed, root);
    // Trace-wide, so decided before the first section: what keeps it from being named (an invalid
    // `CS336_CPU_ISA`) would stop that section too.
    let device = provenance(choice).map_err(|cause| SectionError {
        id: to_run.first().map_or("lecture", |d| d.id),
        cause: Box::new(cause),
    })?;
    let mut fresh = Vec::new();
    for def in to_run {
        let watched = watch::run_watched(def, choice, &run, overrides, policy, &mut note)?;
        on_done(&watched.record);
        fresh.push(watched);
    }
    if policy.check_peak && choice.device.is_cpu() {
        for why in watch::check_peaks(&mut fresh) {
            note(&format!("measured while the machine was busy: {why}"));
        }
    }
    let fresh = Trace {
        schema_version: SCHEMA_VERSION,
        lecture: LECTURE.to_string(),
        provenance: device,
        sections: fresh.into_iter().map(|w| w.record).collect(),
    };
    Ok(merge(previous, fresh))
}

/// The sections of `fresh` merged into `previous` (keeping the other sections it holds, with
/// their own run provenance), in lecture order; the trace-wide provenance is `fresh`'s (the
/// device decides it). The `lecture` binary runs the sections first and merges under the trace's
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

/// What `lecture` says after a run when the trace holds timings measured by a binary built
/// without optimisation (by this run, or by an earlier one whose sections it kept): they describe
/// that build, not the machine.
pub fn unoptimised_warning(trace: &Trace) -> Option<String> {
    let mut sections = Vec::new();
    let mut builds: Vec<String> = Vec::new();
    for s in timed_by(trace, |run| !run.build.is_optimised()) {
        sections.push(s.id.as_str());
        let build = s.run.build.describe();
        if !builds.contains(&build) {
            builds.push(build);
        }
    }
    (!sections.is_empty()).then(|| {
        format!(
            "warning: the times, speeds and MFU of {} section(s) ({}) were measured by a binary built without \
             optimisation ({}): they describe that build, not the machine, and every page quoting them says so. \
             For measurements, run `cargo run --release --bin lecture`.",
            sections.len(),
            sections.join(", "),
            builds.join("; ")
        )
    })
}

/// The sections of `trace` with timings, recorded by a run that `run` holds of.
fn timed_by(trace: &Trace, run: impl Fn(&RunInfo) -> bool) -> impl Iterator<Item = &SectionRecord> {
    trace
        .sections
        .iter()
        .filter(move |s| run(&s.run) && s.values.values().any(|v| v.timed()))
}

/// What `lecture` says after a run when the trace holds timings taken at the tests' budget
/// (`CS336_BUDGET=test`, by this run or an earlier one whose sections it kept).
pub fn test_budget_warning(trace: &Trace) -> Option<String> {
    let sections: Vec<&str> = timed_by(trace, RunInfo::at_test_budget)
        .map(|s| s.id.as_str())
        .collect();
    (!sections.is_empty()).then(|| {
        format!(
            "warning: the times, speeds and MFU of {} section(s) ({}) were taken at the tests' budget \
             (CS336_BUDGET=test: one call each, no warm-up): they describe no machine, and every page quoting \
             them says so. Without CS336_BUDGET, `cargo run --release --bin lecture` measures them.",
            sections.len(),
            sections.join(", ")
        )
    })
}

/// What `lecture` says after a run when the trace holds sections measured while the machine was
/// busy (by this run, or kept from an earlier one): each with why, and the command that measures
/// them again.
pub fn disturbed_warning(trace: &Trace) -> Option<String> {
    let disturbed: Vec<(&str, &str)> = trace
        .sections
        .iter()
        .filter_map(|s| Some((s.id.as_str(), s.disturbed.as_ref()?.why.as_str())))
        .collect();
    (!disturbed.is_empty()).then(|| {
        let each: String = disturbed.iter().map(|(id, why)| format!("\n  {id}: {why}")).collect();
        let again: String = disturbed.iter().map(|(id, _)| format!(" --section {id}")).collect();
        format!(
            "warning: {} section(s) were measured while the machine was busy; timings may be low, and every page \
             quoting them says so:{each}\nWhen the machine is quiet, measure them again: \
             cargo run --release --bin lecture --{again}",
            disturbed.len()
        )
    })
}
