//! Limits the reader holds a trace to, beyond its schema, so that what reads a trace (the book,
//! `compare`) never spends minutes on a file no run could have written.

use crate::common;

use cs336::trace::{self, history::MAX_HISTORY};

/// Text that stands for a list in the JSON, replaced by the list's items as text: a list of
/// millions of states is written without building it as a tree, which is the slow step under test.
const HISTORY: &str = "\"@history@\"";
const STEPS: &str = "\"@steps@\"";

/// A committed trace as JSON text, with one history-recorded value given `states` states and
/// `calls` record calls for it (in that section's `steps`, after its values as a run writes them).
fn text_with_history(states: usize, calls: usize) -> String {
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
    let first = section["values"][&name]["history"][0].to_string();
    section["values"][&name]["history"] = serde_json::json!("@history@");
    let steps = section["steps"].as_array_mut().expect("steps");
    steps.retain(|s| s[0] != serde_json::json!(name));
    let others: Vec<String> = steps.iter().map(|s| s.to_string()).collect();
    section["steps"] = serde_json::json!("@steps@");
    let text = serde_json::to_string(&json).expect("text");
    let history = vec![first; states - 1].join(",");
    let calls = others
        .into_iter()
        .chain((0..calls).map(|k| serde_json::json!([name, k]).to_string()))
        .collect::<Vec<_>>()
        .join(",");
    text.replacen(HISTORY, &format!("[{history}]"), 1)
        .replacen(STEPS, &format!("[{calls}]"), 1)
}

/// The reader's answer to `text`, written into a fresh folder.
fn load(text: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("trace.json");
    std::fs::write(&path, text).expect("write");
    trace::load(&path).map(|_| ()).map_err(|e| e.to_string())
}

#[test]
fn a_history_longer_than_a_run_keeps_is_refused_with_the_limit() {
    load(&text_with_history(MAX_HISTORY, MAX_HISTORY)).expect("a full history is read");
    for states in [MAX_HISTORY + 1, 2_000_000] {
        let err = load(&text_with_history(states, MAX_HISTORY)).expect_err("refused");
        assert!(
            err.contains(&format!("has more than {MAX_HISTORY} states")) && err.contains("MAX_HISTORY"),
            "{err}"
        );
    }
}

/// The refusal comes as the list streams past, before the file is read whole: a file cut short
/// after its too-long history is refused for the history, not for its broken end.
#[test]
fn a_history_too_long_is_refused_before_the_rest_of_the_file_is_read() {
    let text = text_with_history(200_000, MAX_HISTORY);
    let cut = text.len() - 10;
    let err = load(&text[..cut]).expect_err("refused");
    assert!(err.contains("MAX_HISTORY") && !err.contains("not valid JSON"), "{err}");
}

#[test]
fn more_record_calls_than_states_are_refused_with_the_count() {
    let err = load(&text_with_history(2, 1_000_000)).expect_err("refused");
    assert!(err.contains("lists more than") && err.contains("record calls"), "{err}");
    // Steps before the values they count (no run writes them so) are held to the same rule.
    let text = text_with_history(2, 100);
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("json");
    for section in json["sections"].as_array_mut().expect("sections") {
        let map = section.as_object_mut().expect("a section");
        let steps = map.shift_remove("steps").expect("steps");
        map.shift_insert(0, "steps".into(), steps);
    }
    let err = load(&json.to_string()).expect_err("refused");
    assert!(err.contains("record calls, but its values have"), "{err}");
}
