//! Benchmarks that print ratios against a reference measured in the same process (never
//! absolute thresholds: machines differ).

pub mod train_step;
