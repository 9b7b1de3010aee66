//! Sections measured on a busy machine: each section runs under a [`Watch`]; when the machine
//! was busy while it timed, the run waits and measures it again, up to a bound; a section still
//! disturbed after that keeps a mark in the trace (`SectionRecord::disturbed`), which the book and
//! `lecture` show. After the last section, the FMA peak loop is measured again and must agree with
//! the peak the sections used.

use std::time::Duration;

use super::SectionDef;
use super::section_run::{Overrides, SectionError, run_section_with};
use crate::device::DeviceChoice;
use crate::device::cpu::measured_peak;
use crate::error::{Error, Result};
use crate::timing::budget;
use crate::timing::disturbance::{self, Observed, RULE, Watch};
use crate::trace::{Disturbance, RunInfo, SectionRecord};

/// Names the number of times a disturbed section is measured again (default [`Policy::RETRIES`]).
pub const RETRIES_VAR: &str = "CS336_DISTURBANCE_RETRIES";

/// How a run treats a disturbed section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Measurements again after the first, at most.
    pub retries: u32,
    /// Pause before each: a burst of other work (a page loading, a build step) often ends by then.
    pub wait: Duration,
    /// Whether to measure the FMA peak again after the last section and compare.
    pub check_peak: bool,
}

impl Policy {
    pub const RETRIES: u32 = 2;
    /// At most this many retries: each may rerun a section of many seconds.
    const MAX_RETRIES: u32 = 10;

    /// `lecture`'s: [`Policy::RETRIES`] retries (or `CS336_DISTURBANCE_RETRIES`), two seconds
    /// apart, and the peak checked at the end. At the tests' budget (`CS336_BUDGET=test`) a
    /// disturbed section is marked only, unless `CS336_DISTURBANCE_RETRIES` asks for retries: a
    /// test asserts no timing, and one timed call is no measurement to repeat.
    pub fn from_env() -> Result<Policy> {
        let retries = match std::env::var(RETRIES_VAR) {
            Err(std::env::VarError::NotPresent) if budget::is_test() => return Ok(Policy::mark_only()),
            Err(std::env::VarError::NotPresent) => Policy::RETRIES,
            Ok(text) => parse_retries(&text)?,
            Err(std::env::VarError::NotUnicode(_)) => return Err(bad_retries("(not UTF-8)")),
        };
        Ok(Policy {
            retries,
            wait: Duration::from_secs(2),
            check_peak: !budget::is_test(),
        })
    }

    /// Marks a disturbed section and nothing more: the in-process runs of the tests, which must
    /// not take longer on a busy machine, and measure no peak they do not need.
    pub fn mark_only() -> Policy {
        Policy {
            retries: 0,
            wait: Duration::ZERO,
            check_peak: false,
        }
    }
}

fn bad_retries(text: &str) -> Error {
    Error::invalid(
        "disturbance",
        format!(
            "{RETRIES_VAR}={text}: expected a whole number from 0 to {}",
            Policy::MAX_RETRIES
        ),
    )
}

/// The value of `CS336_DISTURBANCE_RETRIES`.
pub fn parse_retries(text: &str) -> Result<u32> {
    match text.trim().parse::<u32>() {
        Ok(n) if n <= Policy::MAX_RETRIES => Ok(n),
        _ => Err(bad_retries(text)),
    }
}

/// A section's record, and whether it read a measured peak (an MFU, a peak's own value).
pub struct Watched {
    pub record: SectionRecord,
    pub read_peak: bool,
}

/// Runs `def` under a watch, measuring it again while it is disturbed and `policy` allows;
/// `note` hears each retry, in a line for the terminal.
pub fn run_watched(
    def: &SectionDef,
    choice: &DeviceChoice,
    run: &RunInfo,
    overrides: &Overrides,
    policy: &Policy,
    note: &mut dyn FnMut(&str),
) -> std::result::Result<Watched, SectionError> {
    // The machine's load slows a CPU's timings; a GPU's kernels run beside it, so only their
    // spread is judged.
    let host = choice.device.is_cpu();
    let mut tries = 0;
    loop {
        tries += 1;
        measured_peak::take_read();
        let watch = Watch::start(host);
        let mut record = run_section_with(def, choice, run, overrides)?;
        let seen = watch.finish();
        let read_peak = measured_peak::take_read();
        let timed = record.values.values().any(|v| v.timed());
        let Some(why) = RULE.why(&seen, host).filter(|_| timed) else {
            return Ok(Watched { record, read_peak });
        };
        if tries > policy.retries {
            record.disturbed = Some(mark(why, &seen, tries));
            return Ok(Watched { record, read_peak });
        }
        note(&format!(
            "{}: measured while the machine was busy ({why}); waiting {} s and measuring again (retry {} of {})",
            def.id,
            policy.wait.as_secs_f64(),
            tries,
            policy.retries
        ));
        std::thread::sleep(policy.wait);
        // A peak measured while the machine was busy would skew the retry's MFU the same way.
        if read_peak {
            measured_peak::forget();
        }
    }
}

fn mark(why: String, seen: &Observed, tries: u32) -> Disturbance {
    Disturbance {
        why,
        load: seen.load,
        others: seen.others,
        steal: seen.steal,
        spread: seen.spread,
        tries,
    }
}

/// After the last section: each peak the sections used, measured again. When one moved by more
/// than `disturbance::PEAK_AGREEMENT`, every timed section that read a peak and is not marked yet
/// is marked with why (the sections' own watches saw nothing, but the peak they divide by, or the
/// machine's speed since, is in doubt). Returns the reasons, for the terminal.
pub fn check_peaks(records: &mut [Watched]) -> Vec<String> {
    if !records.iter().any(|w| w.read_peak) {
        return Vec::new();
    }
    let moved: Vec<String> = measured_peak::measured_so_far()
        .into_iter()
        .filter_map(|(peak_loop, before)| {
            let after = measured_peak::measure_again(peak_loop).ok()?;
            disturbance::peak_moved(before, after)
                .map(|why| why.replacen("FMA peak loop", &format!("FMA peak loop ({})", peak_loop.name()), 1))
        })
        .collect();
    if let Some(why) = moved.first() {
        for w in records.iter_mut().filter(|w| w.read_peak) {
            let timed = w.record.values.values().any(|v| v.timed());
            if timed && w.record.disturbed.is_none() {
                w.record.disturbed = Some(mark(why.clone(), &Observed::default(), 1));
            }
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_are_a_small_whole_number() {
        assert_eq!(parse_retries("0").ok(), Some(0));
        assert_eq!(parse_retries(" 3 ").ok(), Some(3));
        for bad in ["", "-1", "two", "11", "1.5"] {
            let err = parse_retries(bad).map(|_| ()).unwrap_err().to_string();
            assert!(err.contains(RETRIES_VAR) && err.contains("0 to 10"), "{bad}: {err}");
        }
    }
}
