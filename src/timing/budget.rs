//! How long and how often to sample (`Budget`), and the one switch between the lecture's real
//! timing budgets and the tests' smallest ones.
//!
//! A test that starts a lecture, a section or a benchmark asserts what the run records and how it
//! behaves, never how fast it was: timing each value for 0.3 s after a warm-up only makes the
//! tests slow (and, run side by side, busy). `CS336_BUDGET=test` (or [`use_test_budget`] in a test
//! process) makes every timing one call with no warm-up, and a disturbed section is marked but not
//! measured again. Nothing else changes: the same sections, givens and sizes run, so every value
//! that is not a timing is the one a real run records. A trace measured so says so
//! (`RunInfo::budget`), and so do `lecture` and every page quoting its timings.

use std::sync::OnceLock;
use std::time::Duration;

use crate::error::{Error, Result};

/// How long and how often to sample.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Untimed calls before timing, at least this many…
    pub warmup: usize,
    /// …and at least this much time in them.
    pub warmup_time: Duration,
    /// Timed calls per contender: at least this many…
    pub min_samples: usize,
    /// …and at least this much time in them…
    pub min_time: Duration,
    /// …but never more than this many (a bound on memory; the time budget decides first).
    pub max_samples: usize,
    /// About how long one block (one contender's turn) lasts.
    pub block: Duration,
    /// Idle time after each block. BLAS libraries keep their threads spinning for a while after a
    /// call (OpenBLAS for up to 2^28 cycles), which would steal the cores from the next
    /// contender; the pause lets them go to sleep first.
    pub settle: Duration,
}

impl Budget {
    /// The lecture's: 0.3 s of samples per value, after 50 ms of warm-up, in 30 ms blocks. A GPU
    /// product of a second or more still gets three samples (and a warm-up call): a time budget,
    /// not a huge count.
    pub fn lecture() -> Budget {
        Budget {
            warmup: 1,
            warmup_time: Duration::from_millis(50),
            min_samples: 3,
            min_time: Duration::from_millis(300),
            max_samples: 1_000_000,
            block: Duration::from_millis(30),
            settle: Duration::ZERO,
        }
    }

    /// The benchmarks' default: longer, with a pause after each turn for other libraries' threads.
    pub fn bench() -> Budget {
        Budget {
            warmup: 3,
            warmup_time: Duration::from_millis(50),
            min_samples: 15,
            min_time: Duration::from_millis(1500),
            max_samples: 5000,
            block: Duration::from_millis(150),
            settle: Duration::from_millis(150),
        }
    }

    /// Exactly `reps` timed calls after `warmup` untimed ones, one block each.
    pub fn count(warmup: usize, reps: usize) -> Budget {
        Budget {
            warmup,
            warmup_time: Duration::ZERO,
            min_samples: reps.max(1),
            min_time: Duration::ZERO,
            max_samples: reps.max(1),
            block: Duration::ZERO,
            settle: Duration::ZERO,
        }
    }

    /// Whether `samples` are enough.
    pub(super) fn done(&self, samples: &[f64]) -> bool {
        samples.len() >= self.max_samples
            || (samples.len() >= self.min_samples && samples.iter().sum::<f64>() >= self.min_time.as_secs_f64())
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget::lecture()
    }
}

/// Names the budget: `test`, or `lecture` (the default).
pub const BUDGET_VAR: &str = "CS336_BUDGET";

/// Which budgets the timings of this process use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// The lecture's and the benchmarks' own budgets: the numbers a reader is shown.
    Lecture,
    /// One timed call, no warm-up, no retries: for tests, which assert no timing.
    Test,
}

impl Scale {
    /// The name `CS336_BUDGET` takes, and a trace records.
    pub fn name(self) -> &'static str {
        match self {
            Scale::Lecture => "lecture",
            Scale::Test => "test",
        }
    }
}

static CHOSEN: OnceLock<Scale> = OnceLock::new();

/// `CS336_BUDGET`, checked: the binaries call this first, so a misspelt value stops them with a
/// message before anything runs.
pub fn from_env() -> Result<Scale> {
    match std::env::var(BUDGET_VAR) {
        Err(std::env::VarError::NotPresent) => Ok(Scale::Lecture),
        Ok(text) => parse(&text),
        Err(std::env::VarError::NotUnicode(_)) => Err(bad("(not UTF-8)")),
    }
}

fn parse(text: &str) -> Result<Scale> {
    match text.trim() {
        "" | "lecture" => Ok(Scale::Lecture),
        "test" => Ok(Scale::Test),
        other => Err(bad(other)),
    }
}

fn bad(text: &str) -> Error {
    Error::invalid(
        "budget",
        format!("{BUDGET_VAR}={text}: expected `lecture` (the default) or `test` (one timed call, for tests)"),
    )
}

/// The budget of this process: the first of [`use_test_budget`] and `CS336_BUDGET` to be asked
/// decides it for good (a value that does not parse is the lecture's; [`from_env`] reports it).
pub fn scale() -> Scale {
    *CHOSEN.get_or_init(|| from_env().unwrap_or(Scale::Lecture))
}

/// Whether this process times at the tests' budget.
pub fn is_test() -> bool {
    scale() == Scale::Test
}

/// For a test process, which cannot safely set its own environment: every timing in it from now
/// on is at the tests' budget. Fails when the process already timed at the lecture's.
pub fn use_test_budget() -> Result<()> {
    match *CHOSEN.get_or_init(|| Scale::Test) {
        Scale::Test => Ok(()),
        Scale::Lecture => Err(Error::invalid(
            "budget",
            "this process already timed at the lecture's budget; the tests' budget must be chosen first",
        )),
    }
}

/// `budget`, or at the tests' budget the least that still runs each contender: one timed call
/// and no warm-up.
pub fn scaled(budget: Budget) -> Budget {
    match scale() {
        Scale::Lecture => budget,
        Scale::Test => Budget::count(0, 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_anything_else_is_named_in_the_error() {
        assert_eq!(parse("test").ok(), Some(Scale::Test));
        assert_eq!(parse(" lecture ").ok(), Some(Scale::Lecture));
        assert_eq!(parse("").ok(), Some(Scale::Lecture));
        for wrong in ["tests", "fast", "1"] {
            let err = parse(wrong).map(|_| ()).unwrap_err().to_string();
            assert!(
                err.contains(BUDGET_VAR) && err.contains(wrong) && err.contains("`test`"),
                "{err}"
            );
        }
        assert_eq!((Scale::Test.name(), Scale::Lecture.name()), ("test", "lecture"));
    }
}
