//! The one timing helper every measurement uses: warm up, repeat, take the median, keep the
//! spread. The first calls pay for page faults, thread start-up and cache misses, so they are run
//! and thrown away; the median of the rest ignores the odd slow repetition (another process, a
//! timer interrupt), and the spread (min, quartiles, max) shows how much that mattered.
//! On a GPU each repetition is timed by CUDA events recorded on the stream around the work (the
//! device's own clock; kernel launches return before the work is done, so a host clock would need
//! a synchronise and would count launch latency), and waits for its end event.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::device::{self, Device};
use crate::error::Result;

/// How many repetitions to run.
#[derive(Debug, Clone, Copy)]
pub struct TimingOptions {
    pub warmup: usize,
    pub min_reps: usize,
    pub max_reps: usize,
    /// Stop adding repetitions (beyond `min_reps`) once this much time has been spent.
    pub budget: Duration,
}

impl Default for TimingOptions {
    fn default() -> Self {
        TimingOptions {
            warmup: 3,
            min_reps: 10,
            max_reps: 200,
            budget: Duration::from_millis(400),
        }
    }
}

impl TimingOptions {
    /// Fewer repetitions, for operations that take a large fraction of a second each.
    pub fn quick() -> Self {
        TimingOptions {
            warmup: 1,
            min_reps: 3,
            max_reps: 30,
            budget: Duration::from_millis(150),
        }
    }
}

/// Seconds per call: the median and the spread of the repetitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub median_s: f64,
    pub min_s: f64,
    pub q1_s: f64,
    pub q3_s: f64,
    pub max_s: f64,
    pub reps: usize,
    pub warmup: usize,
}

impl Timing {
    /// FLOP/s for an operation that performs `flops` per call.
    pub fn flop_per_sec(&self, flops: u64) -> f64 {
        flops as f64 / self.median_s
    }

    /// The spread, for the trace.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "median_s": self.median_s, "min_s": self.min_s, "q1_s": self.q1_s, "q3_s": self.q3_s,
            "max_s": self.max_s, "reps": self.reps, "warmup": self.warmup,
        })
    }

    /// Summary statistics of raw per-call times (at least one).
    pub fn from_samples(samples: &mut [f64], warmup: usize) -> Timing {
        samples.sort_by(f64::total_cmp);
        let q = |p: f64| quantile(samples, p);
        Timing {
            median_s: q(0.5),
            min_s: q(0.0),
            q1_s: q(0.25),
            q3_s: q(0.75),
            max_s: q(1.0),
            reps: samples.len(),
            warmup,
        }
    }
}

/// The median of raw samples (sorts them); NaN when there are none. Every timing in the project
/// reports this one.
pub fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    quantile(samples, 0.5)
}

/// Linear interpolation between order statistics of a sorted slice.
fn quantile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = p * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Times `f` on `device`: `warmup` discarded calls, then between `min_reps` and `max_reps` timed
/// calls (as many as fit the budget), each ending with a synchronise.
pub fn time<F: FnMut() -> Result<()>>(device: &Device, options: TimingOptions, mut f: F) -> Result<Timing> {
    time_with_setup(device, options, || Ok(()), |()| f())
}

/// Seconds one call takes: CUDA events on a GPU, the host clock on the CPU (which runs
/// synchronously).
fn time_call(device: &Device, f: impl FnOnce() -> Result<()>) -> Result<f64> {
    match device.cuda() {
        Some(gpu) => device::cuda::timing::time_once(gpu, f),
        None => {
            let t = Instant::now();
            f()?;
            device::synchronize(device)?;
            Ok(t.elapsed().as_secs_f64())
        }
    }
}

/// Like `time`, but each call first runs an untimed `setup` whose result the timed `f` consumes
/// (a backward pass needs a fresh forward graph every time).
pub fn time_with_setup<S, Setup, F>(
    device: &Device,
    options: TimingOptions,
    mut setup: Setup,
    mut f: F,
) -> Result<Timing>
where
    Setup: FnMut() -> Result<S>,
    F: FnMut(S) -> Result<()>,
{
    for _ in 0..options.warmup {
        let s = setup()?;
        f(s)?;
        device::synchronize(device)?;
    }
    let started = Instant::now();
    let mut samples = Vec::with_capacity(options.min_reps);
    while samples.len() < options.min_reps.max(1)
        || (samples.len() < options.max_reps && started.elapsed() < options.budget)
    {
        let s = setup()?;
        device::synchronize(device)?;
        samples.push(time_call(device, || f(s))?);
    }
    Ok(Timing::from_samples(&mut samples, options.warmup))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_statistics_of_known_samples() {
        let mut s = vec![5.0, 1.0, 4.0, 2.0, 3.0];
        let t = Timing::from_samples(&mut s, 0);
        assert_eq!(
            (t.min_s, t.q1_s, t.median_s, t.q3_s, t.max_s),
            (1.0, 2.0, 3.0, 4.0, 5.0)
        );
        assert_eq!(t.flop_per_sec(6), 2.0);
        let mut even = vec![1.0, 2.0, 3.0, 10.0];
        assert_eq!(Timing::from_samples(&mut even, 0).median_s, 2.5);
    }

    #[test]
    fn runs_warmup_and_at_least_min_reps() {
        let mut calls = 0;
        let opts = TimingOptions {
            warmup: 2,
            min_reps: 5,
            max_reps: 5,
            budget: Duration::ZERO,
        };
        let t = time(&Device::Cpu, opts, || {
            calls += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((calls, t.reps, t.warmup), (7, 5, 2));
    }
}
