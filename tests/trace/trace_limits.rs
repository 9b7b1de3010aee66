//! Limits the reader holds a trace to, beyond its schema, so that what reads a trace (the book,
//! `compare`) never spends minutes on a file no run could have written.

use crate::common;

use cs336::trace::{self, history::MAX_HISTORY};

/// A committed trace as JSON, with one history-recorded value given `states` states (and a record
/// call for each), written into a fresh folder; returns the reader's answer.
fn load_with_history(states: usize) -> Result<(), String> {
    let (_, committed) = common::committed_traces()
        .into_iter()
        .find(|(_, t)| {
            t.sections
                .iter()
                .any(|s| s.values.values().any(|v| !v.history.is_empty()))
        })
        .expect("a committed trace with a history");
    let mut json = serde_json::to_value(&committed).expect("json");
    let sections = json["sections"].as_array_mut().expect("sections");
    let section = sections
        .iter_mut()
        .find(|s| {
            s["values"]
                .as_object()
                .is_some_and(|v| v.values().any(|r| r.get("history").is_some()))
        })
        .expect("a section with a history");
    let name = section["values"]
        .as_object()
        .and_then(|v| v.iter().find(|(_, r)| r.get("history").is_some()))
        .map(|(n, _)| n.clone())
        .expect("a value with a history");
    let first = section["values"][&name]["history"][0].clone();
    section["values"][&name]["history"] = serde_json::Value::Array(vec![first; states - 1]);
    let steps = section["steps"].as_array_mut().expect("steps");
    steps.retain(|s| s[0] != serde_json::json!(name));
    steps.extend((0..states).map(|k| serde_json::json!([name, k])));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("trace.json");
    std::fs::write(&path, serde_json::to_string(&json).expect("text")).expect("write");
    trace::load(&path).map(|_| ()).map_err(|e| e.to_string())
}

#[test]
fn a_history_longer_than_a_run_keeps_is_refused_with_the_limit() {
    load_with_history(MAX_HISTORY).expect("a full history is read");
    for states in [MAX_HISTORY + 1, 200_000] {
        let err = load_with_history(states).expect_err("refused");
        assert!(
            err.contains(&format!("{states} states")) && err.contains("MAX_HISTORY"),
            "{err}"
        );
    }
}
