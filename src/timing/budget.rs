//! The one switch between the lecture's real timing budgets and the tests' smallest ones.
//!
//! A test that starts a lecture, a section or a benchmark asserts what the run records and how it
//! behaves, never how fast it was: timing each value for 0.3 s after a warm-up only makes the
//! tests slow (and, run side by side, busy). `CS336_BUDGET=test` (or [`use_test_budget`] in a test
//! process) makes every timing one call with no warm-up, and a disturbed section is marked but not
//! measured again. Nothing else changes: the same sections, givens and sizes run, so every value
//! that is not a timing is the one a real run records. A trace measured so says so
//! (`RunInfo::budget`), and so do `lecture` and every page quoting its timings.

use std::sync::OnceLock;

use crate::error::{Error, Result};

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
pub fn scaled(budget: super::Budget) -> super::Budget {
    match scale() {
        Scale::Lecture => budget,
        Scale::Test => super::Budget::count(0, 1),
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
