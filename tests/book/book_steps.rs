//! What a code view gives its stepping script (`book/theme/lecture-steps.js`), checked without a
//! browser: one entry per record call of the section, in the trace's order, each naming the
//! element beside the line that made the call (or below the code) and the text of the state it
//! recorded; after the last step every element reads what the static page shows. The browser
//! tests (`tests/book/book_browser/`) check what the script then does with it.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{ROOT, Workspace};
use cs336::book::format::{Format, format_value};
use cs336::trace::source::function_source;
use cs336::trace::{self, SectionRecord, Trace};
use serde_json::Value;

/// Longest value text shown beside code (`src/book/code_view.rs`).
const MAX_SHOWN_CHARS: usize = 44;
const DATA: &str = "<script type=\"application/json\" class=\"lecture-steps-data\">";

/// A value's element in a code view: the file line it sits beside (None: below the code), its
/// name, and the text after `name = `.
#[derive(Debug, Clone, PartialEq)]
struct Shown {
    line: Option<u32>,
    name: String,
    text: String,
}

/// The elements of one code view, by `data-slot`, and its steps as `(slot, text)`.
fn parse_view(view: &str) -> (BTreeMap<u64, Shown>, Vec<(u64, String)>) {
    let mut slots = BTreeMap::new();
    let mut line = None;
    let mut offset = 0;
    for piece in view.split('<') {
        let end = offset + piece.len();
        offset = end + 1;
        if let Some(n) = piece.strip_prefix("span class=\"lecture-ln\">") {
            line = Some(n.parse().expect("a line number"));
        }
        let foot = piece.starts_with("span class=\"lecture-foot-value\"");
        let Some(at) = piece.find("data-slot=\"") else { continue };
        let id = piece[at + 11..]
            .split('"')
            .next()
            .expect("slot")
            .parse()
            .expect("slot id");
        let rest = &view[end..];
        let name = rest
            .strip_prefix("<span class=\"lecture-lv-name\">")
            .and_then(|r| r.split('<').next())
            .expect("the slot's name");
        let after = rest.split("</span> = ").nth(1).expect("the slot's text");
        // A tensor drawn as a grid stands for the text stepping shows for its state (stepping
        // puts the grid back when it reaches that text: `lecture-steps.js`).
        let grid_text = piece
            .split("data-grid-text=\"")
            .nth(1)
            .and_then(|a| a.split('"').next());
        let text = match grid_text {
            Some(text) => {
                assert!(
                    after.starts_with("<span class=\"lecture-tensor\">"),
                    "slot {id}: a grid follows its name"
                );
                text
            }
            None => after.split("</span>").next().expect("closed"),
        };
        let shown = Shown {
            line: if foot { None } else { line },
            name: unescape(name),
            text: unescape(text),
        };
        assert!(slots.insert(id, shown).is_none(), "slot {id} appears once");
    }
    let data = view.split(DATA).nth(1).expect("a view with steps carries them");
    let json = data.split("</script>").next().expect("closed");
    let steps: Vec<Value> = serde_json::from_str(json).expect("steps are JSON");
    let steps = steps
        .iter()
        .map(|s| {
            let s = s.as_array().expect("a step is a list");
            assert!(s.len() == 2 || s.len() == 3, "{s:?}");
            let text = s[1].as_str().expect("text").to_string();
            if let Some(full) = s.get(2) {
                let full = full.as_str().expect("full text");
                assert!(full.chars().count() > MAX_SHOWN_CHARS && text.ends_with('…'), "{s:?}");
            }
            (s[0].as_u64().expect("slot"), text)
        })
        .collect();
    (slots, steps)
}

fn unescape(html: &str) -> String {
    html.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The file line each step's state must sit beside: by token (the committed CPU trace was recorded
/// by today's code), None for a helper outside the function.
fn expected_lines(record: &SectionRecord) -> Vec<Option<u32>> {
    let text = std::fs::read_to_string(Path::new(ROOT).join(&record.source_file)).expect("source");
    let code = function_source(&text, &record.id).expect("the section's function");
    assert_eq!(code.hash(), record.source_hash, "{}: the trace is current", record.id);
    record
        .steps
        .iter()
        .map(|(name, k)| {
            let state = record.values[name.as_str()].state(*k).expect("a step names a state");
            match (state.line, state.token) {
                (0, _) => None,
                (_, Some(token)) => code.line_of_token(token),
                (line, None) => Some(code.start_line + (line - record.source_line)),
            }
        })
        .collect()
}

#[test]
fn every_code_view_carries_its_steps_in_order_beside_their_lines() {
    let trace: Trace = trace::load(&common::default_trace_path()).expect("committed trace loads");
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", &trace);
    let chapter: String = trace
        .sections
        .iter()
        .map(|s| format!("{{{{code {}}}}}\n\n", s.id))
        .collect();
    let html = ws.build_chapter(&path, &chapter).expect("builds");
    let views: Vec<&str> = html.split("<div class=\"lecture-code\">").skip(1).collect();
    assert_eq!(views.len(), trace.sections.len());
    let mut histories = 0;
    for (record, view) in trace.sections.iter().zip(views) {
        let id = &record.id;
        assert!(!record.steps.is_empty(), "{id} records something");
        let (slots, steps) = parse_view(view);
        assert_eq!(steps.len(), record.steps.len(), "{id}: one entry per record call");
        let lines = expected_lines(record);
        let mut last: BTreeMap<u64, &str> = BTreeMap::new();
        for (i, ((slot, text), (name, k))) in steps.iter().zip(&record.steps).enumerate() {
            let shown = slots
                .get(slot)
                .unwrap_or_else(|| panic!("{id} step {}: slot {slot} is on the page", i + 1));
            assert_eq!(&shown.name, name, "{id} step {}", i + 1);
            assert_eq!(shown.line, lines[i], "{id} step {} ({name}): its line", i + 1);
            let value = &record.values[name.as_str()];
            let state = value.state(*k).expect("state");
            if let Value::Number(_) = state.value {
                let want = format_value(&state.value, value.unit, Format::Auto).expect("formats");
                assert_eq!(text, &want, "{id} step {} ({name} state {k})", i + 1);
            }
            last.insert(*slot, text);
        }
        // The last step leaves every element as the static page shows it, and every element is
        // filled by some step.
        assert_eq!(last.len(), slots.len(), "{id}: every value shown is recorded by a step");
        for (slot, text) in last {
            assert_eq!(text, slots[&slot].text, "{id}: slot {slot} at the last step");
        }
        histories += usize::from(record.values.values().any(|v| !v.history.is_empty()));
    }
    assert!(histories >= 3, "{histories} sections with histories");
}

/// The example: stepping through `gradients_flops` shows the backward FLOP count as each
/// term is added, on the line that added it.
#[test]
fn gradients_flops_steps_show_the_count_growing_term_by_term() {
    let trace: Trace = trace::load(&common::default_trace_path()).expect("committed trace loads");
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", &trace);
    let html = ws.build_chapter(&path, "{{code gradients_flops}}\n").expect("builds");
    let view = html.split("<div class=\"lecture-code\">").nth(1).expect("a code view");
    let (slots, steps) = parse_view(view);
    let flops = trace.value("gradients_flops", "num_backward_flops").expect("recorded");
    let counts: Vec<(Option<u32>, String)> = steps
        .iter()
        .filter(|(slot, _)| slots[slot].name == "num_backward_flops")
        .map(|(slot, text)| (slots[slot].line, text.clone()))
        .collect();
    assert_eq!(counts.len(), flops.num_states());
    let values: Vec<f64> = (0..flops.num_states())
        .map(|k| flops.state(k).and_then(|s| s.value.as_f64()).expect("a count"))
        .collect();
    assert!(
        values.windows(2).all(|w| w[1] > w[0]),
        "each term adds FLOPs: {values:?}"
    );
    let lines: Vec<Option<u32>> = counts.iter().map(|(l, _)| *l).collect();
    assert!(
        lines.windows(2).all(|w| w[0] < w[1]),
        "each term on its own later line: {lines:?}"
    );
    let texts: Vec<&String> = counts.iter().map(|(_, t)| t).collect();
    assert!(texts.windows(2).all(|w| w[0] != w[1]), "{texts:?}");
}
