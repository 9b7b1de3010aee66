//! Hostile input, round 4: a benchmark that would run for many minutes says so and asks for
//! `--yes`, as a what-if does; givens whose products a section cannot record are refused before
//! anything runs, naming the given and the limit.

use crate::cli_hostile3::bench;
use crate::common::process::{assert_clean_failure, text};

/// Twenty million layers of width one: a few FLOPs, but about ten thousand million tensor ops,
/// many minutes on any machine; refused at once, with the estimate and how to insist. `--yes` is
/// the what-ifs' flag, and is taken (shown here on sizes refused for another reason, so that
/// nothing runs).
#[test]
fn a_train_step_estimated_past_the_limit_needs_yes() {
    let o = bench(
        &["train-step", "--dim", "1", "--layers", "20000000", "--batch", "1"],
        None,
    );
    let err = assert_clean_failure(&o, &["would take about", "tensor ops", "past the 180 s", "--yes"]);
    let (out, _) = text(&o);
    assert!(out.is_empty(), "nothing ran: {out}{err}");
    let o = bench(&["train-step", "--layers", "0", "--yes"], None);
    assert_clean_failure(&o, &["--layers must be at least 1"]);
}
