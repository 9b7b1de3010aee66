//! The autograd graphs are drawn from the trace: every box is a recorded node with its name,
//! shape and what it saved, and its hover text gives bytes and FLOPs. A changed node changes the
//! drawing; a graph whose inputs do not point at earlier nodes, or that is empty, fails the
//! build naming the value.

use crate::common;

use common::{Workspace, fresh_trace, only_problem, section_mut};
use cs336::book::Cause;
use serde_json::{Value, json};

/// The chart's SVG as the book builds it from `trace`.
pub(crate) fn chart_svg(trace: &cs336::trace::Trace, id: &str) -> String {
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", trace);
    let html = ws
        .build_chapter(&path, &format!("{{{{chart {id}}}}}\n"))
        .unwrap_or_else(|p| panic!("{p:#?}"));
    let figure = html.find("<figure class=\"lecture-chart\"").expect("a figure");
    let start = html[figure..].find("<svg").expect("an SVG") + figure;
    let end = html[start..].find("</svg>").expect("SVG ends") + start + "</svg>".len();
    html[start..end].to_string()
}

/// The texts and the hover titles of an SVG, in drawing order.
pub(crate) fn texts_and_titles(svg: &str) -> (Vec<String>, Vec<String>) {
    let doc = roxmltree::Document::parse(svg).expect("the chart parses as SVG");
    let of = |tag: &str| {
        doc.descendants()
            .filter(|n| n.has_tag_name(tag))
            .map(|n| n.text().unwrap_or_default().to_string())
            .collect()
    };
    (of("text"), of("title"))
}

#[test]
fn the_gradients_graph_draws_the_recorded_nodes_with_their_costs() {
    let mut trace = fresh_trace().clone();
    let (texts, titles) = texts_and_titles(&chart_svg(&trace, "autograd_graph"));
    for text in ["w", "matmul", "saves x", "pow"] {
        assert!(texts.iter().any(|t| t == text), "{text:?} in {texts:?}");
    }
    let graph = trace.section("gradients_basics").expect("section").values["graph"]
        .value
        .clone();
    let nodes = graph.as_array().expect("a list of nodes");
    assert_eq!(titles.len(), nodes.len(), "one hover text per box: {titles:?}");
    let matmul = titles
        .iter()
        .find(|t| t.starts_with("matmul: matmul"))
        .expect("the product's hover text");
    assert!(matmul.contains("shape scalar, 4 bytes, 6 FLOP forward"), "{matmul}");
    assert!(matmul.contains("saved for backward: x [3] (12 bytes)"), "{matmul}");
    // What decided the box, in words and by the section's title, never where the trace keeps it.
    assert!(matmul.contains("(Gradients: the basics)"), "{matmul}");
    assert!(!matmul.contains("gradients_basics"), "{matmul}");
    // Another op's name in the trace: the drawing follows it.
    let mut edited = graph.clone();
    let at = nodes.iter().position(|n| n["op"] == "pow").expect("a pow node");
    edited[at]["op"] = json!("square");
    section_mut(&mut trace, "gradients_basics")
        .values
        .get_mut("graph")
        .expect("graph")
        .value = edited;
    let (texts, _) = texts_and_titles(&chart_svg(&trace, "autograd_graph"));
    assert!(
        texts.iter().any(|t| t == "square") && !texts.iter().any(|t| t == "pow"),
        "{texts:?}"
    );
}

#[test]
fn the_checkpoint_graph_marks_segments_kept_inputs_and_recomputed_ops() {
    let trace = fresh_trace();
    let nodes = trace.section("checkpoint_schedule").expect("section").values["checkpoint_graph"]
        .value
        .as_array()
        .expect("a list of nodes")
        .clone();
    let segments: std::collections::BTreeSet<u64> = nodes.iter().filter_map(|n| n["segment"].as_u64()).collect();
    assert!(segments.len() >= 2, "{segments:?}");
    let last = *segments.iter().last().expect("a segment");
    for n in &nodes {
        match n["op"].as_str() {
            Some("parameter") => assert!(n["name"].is_string(), "{n}"),
            Some("kept input") => assert_eq!(n["inputs"].as_array().map(Vec::len), Some(1), "{n}"),
            _ => assert_eq!(n["recomputed"], Value::from(n["segment"].as_u64() != Some(last)), "{n}"),
        }
    }
    let (texts, titles) = texts_and_titles(&chart_svg(trace, "checkpoint_graph"));
    for text in [
        "kept input",
        "op run again in backward",
        "input kept by the forward pass",
        "parameter",
    ] {
        assert!(texts.iter().any(|t| t == text), "{text:?} in {texts:?}");
    }
    assert!(
        titles.iter().any(|t| t.contains("run again during backward")),
        "{titles:?}"
    );
}

#[test]
fn a_graph_that_points_forward_or_is_empty_fails_naming_the_value() {
    let base = fresh_trace();
    for (graph, expected) in [
        (json!([]), "a graph with no nodes"),
        (
            json!([{"op": "matmul", "shape": [2], "bytes": 8, "flops": 4, "inputs": [1], "saved": []},
                   {"op": "parameter", "shape": [2], "bytes": 8, "flops": 0, "inputs": [], "saved": []}]),
            "expected indices of earlier nodes",
        ),
        (json!([{"op": 3}]), "expected an op's name"),
    ] {
        let mut trace = base.clone();
        section_mut(&mut trace, "gradients_basics")
            .values
            .get_mut("graph")
            .expect("graph")
            .value = graph;
        let ws = Workspace::new();
        let path = ws.write_trace("cpu", &trace);
        let p = only_problem(ws.build_chapter(&path, "{{chart autograd_graph}}\n"));
        assert!(matches!(p.cause, Cause::BadValue { .. }), "{p}");
        let text = p.to_string();
        assert!(
            text.contains("gradients_basics.graph") && text.contains(expected),
            "{text}"
        );
    }
}
