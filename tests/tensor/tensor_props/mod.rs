//! Property tests of the tensor core against naive references: strided views, elementwise ops
//! with broadcasting, reductions and matmul, on contiguous and strided operands.
//!
//! Case counts are sized for CI on two cores; `PROPTEST_CASES=5000 cargo test --release --test
//! tensor_props` runs a longer search. Failing inputs are printed, not written into the tree;
//! each bug these tests found has a deterministic test of its own.

mod elementwise;
mod matmul;
mod reductions;
mod reference;
mod views;

use proptest::test_runner::Config;

/// `cases` random cases, unless PROPTEST_CASES asks for another number.
pub fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}
