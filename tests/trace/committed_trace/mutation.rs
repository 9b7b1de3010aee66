//! The mutation experiment: change one recorded state at a time in this CPU's committed trace
//! and hold the copy to a fresh run, as `committed_cpu_traces_equal_a_fresh_run` does. Every
//! change to a value a rerun reproduces (given, computed, a rounding on the same kernel) must be
//! caught, naming the value; a change to one the machine decided (a clock, the device) must not,
//! since that test would then fail on every rerun (only an invariant may pin it). The kinds come from the trace alone: no list
//! of values is kept here.

use serde_json::Value;

use super::{compare, not_reproducible};
use crate::common;
use cs336::trace::compare::by_kind;
use cs336::trace::{Kind, Trace};

/// The last leaf of a JSON value (depth first), changed so that it differs: a number moves by
/// one (or becomes one), a string gains a character, a boolean flips, a null becomes zero.
fn mutate(v: &mut Value) {
    match v {
        Value::Array(items) if !items.is_empty() => {
            if let Some(last) = items.last_mut() {
                mutate(last)
            }
        }
        Value::Object(fields) if !fields.is_empty() => {
            if let Some((_, last)) = fields.iter_mut().next_back() {
                mutate(last)
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            let moved = if x.abs() < 1e15 { x + 1.0 } else { x * 2.0 };
            *v = serde_json::json!(moved);
        }
        Value::String(s) => s.push('~'),
        Value::Bool(b) => *b = !*b,
        Value::Null | Value::Array(_) | Value::Object(_) => *v = serde_json::json!(0),
    }
}

/// Only section `id` of `t`.
fn only(t: &Trace, id: &str) -> Trace {
    let mut one = t.clone();
    one.sections.retain(|s| s.id == id);
    one
}

#[test]
fn every_change_to_a_value_a_rerun_reproduces_is_caught_and_none_to_the_machines() {
    let fresh = common::fresh_trace();
    let own = format!(
        "{}.json",
        cs336::device::cpu::trace_name().expect("this CPU has a trace name")
    );
    let committed = common::committed_traces()
        .into_iter()
        .find(|(p, _)| p.file_name().is_some_and(|n| n.to_string_lossy() == own));
    // This CPU's committed trace when it reproduces here, else the fresh run itself: the
    // comparison and the kinds are what is under test.
    let (what, base) = match committed {
        Some((path, t)) if not_reproducible(&t, fresh).is_none() && compare(&t, fresh).differences.is_empty() => {
            (path.display().to_string(), t)
        }
        _ => (
            "a fresh run (this CPU's trace is not committed or not current)".to_string(),
            fresh.clone(),
        ),
    };
    let (mut caught, mut machine, mut missed, mut wrongly) = (0, 0, Vec::new(), Vec::new());
    for section in &base.sections {
        let (a, b) = (only(&base, &section.id), only(fresh, &section.id));
        for (name, record) in &section.values {
            let kind = record
                .kind()
                .unwrap_or_else(|| panic!("{what}: {}.{name} has no kind", section.id));
            for k in 0..record.num_states() {
                let mut changed = a.clone();
                let v = changed.sections[0].values.get_mut(name).expect("the value");
                let state = if k < v.history.len() {
                    &mut v.history[k].value
                } else {
                    &mut v.value
                };
                mutate(state);
                // A reproducible value must fail the whole test's comparison; a machine's must pass
                // the comparison by kinds (an invariant beside it may still pin it, as the bf16
                // kernel's name is pinned to the trace's provenance).
                let report = match kind.is_reproducible() {
                    true => compare(&changed, &b),
                    false => by_kind(&changed, &b, ["committed", "fresh"], true),
                };
                let named = report
                    .differences
                    .iter()
                    .any(|d| d.contains(&format!("{}.{name}", section.id)));
                let label = format!("{}.{name} (state {k}, {})", section.id, kind.word());
                match (kind.is_reproducible(), named) {
                    (true, true) => caught += 1,
                    (true, false) => missed.push(label),
                    (false, false) => machine += 1,
                    (false, true) => wrongly.push(label),
                }
            }
        }
    }
    assert!(
        missed.is_empty(),
        "{what}: changed, and not caught by the committed-trace comparison: {missed:?}"
    );
    assert!(
        wrongly.is_empty(),
        "{what}: a change to a value the machine decides failed the comparison (every rerun would): {wrongly:?}"
    );
    assert!(caught > 0 && machine > 0, "{caught} caught, {machine} the machine's");
    common::terminal_note(&format!(
        "mutation experiment on {what}: {caught} change(s) to given, computed or rounding states caught, each \
         naming its value; {machine} change(s) to the machine's states ({}, {}) let through",
        Kind::Clock.word(),
        Kind::Device.word()
    ));
}
