//! The one timing helper every measurement uses (lecture, benchmarks, `cuda_bench`).
//!
//! - **Clocks** (`clock.rs`): the host's monotonic clock on the CPU, CUDA events on the stream on
//!   a GPU (the device's own clock; launches return before the work is done).
//! - **Repetitions decided by time** (`turns.rs`): untimed warm-up calls first (page faults,
//!   thread start-up, cold caches, clock ramp-up), then timed calls in blocks until every value has
//!   at least `min_samples` samples and `min_time` seconds of them. A fixed count would measure a
//!   0.1 ms product over 20 ms, about one scheduler time slice: the machine's noise as much as the
//!   kernel.
//! - **Contenders take turns**: values compared with each other (f32 against bf16, forward against
//!   backward) are timed in alternating blocks, so a busy moment of the machine slows both.
//! - **Median and spread** (`Timing`): the median ignores the odd slow repetition; min, quartiles
//!   and max show how much there was.
//! - **Budgets** (`budget.rs`): `CS336_BUDGET=test` makes every timing one call, for tests.
//! - **Disturbance** (`disturbance.rs`): every timing's spread is noted for the watch around the
//!   section, which also reads what other processes and the hypervisor took meanwhile.

pub mod budget;
pub mod clock;
pub mod disturbance;
mod interval;
mod turns;

use serde::Serialize;
use serde_json::json;

pub use budget::Budget;
pub use clock::Clock;
pub use interval::{RatioInterval, geometric_mean};
pub use turns::{
    Contender, Sampled, contender, contender_with_setup, in_turns, in_turns_sampled, time, time_each, time_with_setup,
};

/// Seconds per call: the median and the spread of the timed repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Timing {
    pub median_s: f64,
    pub min_s: f64,
    pub q1_s: f64,
    pub q3_s: f64,
    pub max_s: f64,
    /// Timed repetitions.
    pub reps: usize,
    /// Untimed warm-up calls before them.
    pub warmup: usize,
}

impl Timing {
    /// FLOP/s for an operation that performs `flops` per call.
    pub fn flop_per_sec(&self, flops: u64) -> f64 {
        flops as f64 / self.median_s
    }

    /// Third quartile over first of the calls' times: 1 when every call took as long (or when
    /// there is no quartile to divide by).
    pub fn spread(&self) -> f64 {
        if self.q1_s > 0.0 { self.q3_s / self.q1_s } else { 1.0 }
    }

    /// The spread, for the trace.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "median_s": self.median_s, "min_s": self.min_s, "q1_s": self.q1_s, "q3_s": self.q3_s,
            "max_s": self.max_s, "reps": self.reps, "warmup": self.warmup,
        })
    }

    /// Summary statistics of raw per-call seconds (all NaN when there are none).
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

    /// The same from seconds in any order, with no warm-up recorded.
    pub fn from_seconds(mut seconds: Vec<f64>) -> Timing {
        Timing::from_samples(&mut seconds, 0)
    }
}

/// The median of raw samples (sorts them); NaN when there are none.
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
    fn medians_of_odd_and_even_counts() {
        let t = Timing::from_seconds(vec![3.0, 1.0, 2.0]);
        assert_eq!((t.median_s, t.min_s, t.max_s, t.reps), (2.0, 1.0, 3.0, 3));
        assert_eq!(Timing::from_seconds(vec![4.0, 1.0, 2.0, 3.0]).median_s, 2.5);
        assert!(Timing::from_seconds(vec![]).median_s.is_nan());
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }
}
