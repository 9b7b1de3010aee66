//! The layout figures are drawn from the trace: the strides figure of `tensor_storage` from the
//! recorded matrix, strides and looked-up element; the batch figure of `tensor_matmul` from the
//! recorded shape and entries of y. A changed value changes the figure; values that contradict
//! each other or are missing fail the build naming the value. (And the throughput chart's peak
//! lines, whose labels are drawn from the recorded peaks.)

use crate::common;

use common::{Workspace, fresh_trace, only_problem, section_mut};
use cs336::book::Cause;
use cs336::trace::Trace;
use serde_json::{Value, json};

/// The trace with each `(section, name)` set to its value (`Null`: removed).
fn edited(edits: &[(&str, &str, Value)]) -> Trace {
    let mut t = fresh_trace().clone();
    for (section, name, value) in edits {
        let s = section_mut(&mut t, section);
        if value.is_null() {
            s.values.shift_remove(*name).expect("value to remove");
            s.steps.retain(|(step, _)| step != name);
        } else {
            s.values.get_mut(*name).expect("value").value = value.clone();
        }
    }
    t
}

/// The text of every `<text>` of the chart's SVG, in drawing order.
fn figure_texts(trace: &Trace, id: &str) -> Vec<String> {
    crate::chart_graphs::texts_and_titles(&crate::chart_graphs::chart_svg(trace, id)).0
}

fn figure_problem(trace: &Trace, id: &str) -> (Cause, String) {
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", trace);
    let p = only_problem(ws.build_chapter(&path, &format!("{{{{chart {id}}}}}\n")));
    (p.cause.clone(), p.to_string())
}

fn value<'t>(t: &'t Trace, section: &str, name: &str) -> &'t Value {
    &t.section(section).expect("section").values[name].value
}

/// The storage row as the figure draws it: position by position, what each holds.
fn storage_row(texts: &[String], n: usize) -> Vec<String> {
    let at = texts
        .iter()
        .position(|t| t == "flat storage (positions counted in elements)")
        .expect("the storage row");
    // After the row's title: for each position its value, its number, its x index.
    texts[at + 1..].chunks(3).take(n).map(|c| c[0].clone()).collect()
}

#[test]
fn strides_figure_follows_the_recorded_strides() {
    let t = fresh_trace();
    let stride = value(t, "tensor_storage", "stride");
    let index = value(t, "tensor_storage", "index");
    let (s0, s1) = (stride[0].as_u64().expect("stride"), stride[1].as_u64().expect("stride"));
    let texts = figure_texts(t, "tensor_strides");
    let joined = texts.join("\n");
    assert!(joined.contains(&format!("strides [{s0}, {s1}]")), "{joined}");
    assert!(joined.contains(&format!("one row down: +{s0} in storage")), "{joined}");
    assert!(
        joined.contains(&format!("one column right: +{s1} in storage")),
        "{joined}"
    );
    assert!(joined.contains(&format!("1·{s0} + 2·{s1} = {index}")), "{joined}");
    // Row-major: the storage holds x's elements in reading order.
    let x: Vec<String> = value(t, "tensor_storage", "x")
        .as_array()
        .expect("rows")
        .iter()
        .flat_map(|r| {
            r.as_array()
                .expect("row")
                .iter()
                .map(|v| format!("{}", v.as_f64().expect("number")))
        })
        .collect();
    assert_eq!(storage_row(&texts, x.len()), x);

    // The same matrix stored column by column: strides [1, 4], and element (1, 2) at 1 + 2·4.
    let rows = value(t, "tensor_storage", "x").as_array().expect("rows").len() as u64;
    let moved = 1 + 2 * rows;
    let column_major = edited(&[
        ("tensor_storage", "stride", json!([1, rows])),
        ("tensor_storage", "index", json!(moved)),
    ]);
    let changed = figure_texts(&column_major, "tensor_strides");
    assert_ne!(changed, texts);
    let joined = changed.join("\n");
    assert!(joined.contains("one row down: +1 in storage"), "{joined}");
    assert!(
        joined.contains(&format!("one column right: +{rows} in storage")),
        "{joined}"
    );
    assert!(joined.contains(&format!("1·1 + 2·{rows} = {moved}")), "{joined}");
    // Position 1 now holds x[1, 0], the first element of the second row.
    let second_row_first = value(t, "tensor_storage", "x")[1][0].as_f64().expect("number");
    assert_eq!(storage_row(&changed, 2)[1], format!("{second_row_first}"));
}

#[test]
fn strides_that_contradict_the_trace_or_are_missing_fail_naming_the_value() {
    // Strides changed alone: position `index` now holds another element than the one looked up.
    let (cause, text) = figure_problem(
        &edited(&[("tensor_storage", "stride", json!([1, 4]))]),
        "tensor_strides",
    );
    assert!(matches!(cause, Cause::BadValue { .. }), "{text}");
    assert!(text.contains("tensor_storage.element"), "{text}");
    assert!(text.contains("strides [1, 4] put x[2, 1]"), "{text}");

    for (stride, expected) in [
        (json!([4]), "2 strides"),
        (json!([0, 0]), "same position 0"),
        (json!([20, 1]), "more than the 32"),
        (json!([100, 1]), "whole number from 0 to 32"),
        (json!([-1, 1]), "whole number"),
        (json!(4), "expected a list"),
    ] {
        let (_, text) = figure_problem(
            &edited(&[("tensor_storage", "stride", stride.clone())]),
            "tensor_strides",
        );
        assert!(text.contains("tensor_storage.stride"), "{stride}: {text}");
        assert!(text.contains(expected), "{stride}: {text}");
    }
    let (_, text) = figure_problem(
        &edited(&[("tensor_storage", "x", json!([[0, 1], [2]]))]),
        "tensor_strides",
    );
    assert!(text.contains("all of one length"), "{text}");

    let (cause, text) = figure_problem(&edited(&[("tensor_storage", "index", Value::Null)]), "tensor_strides");
    assert!(
        matches!(&cause, Cause::MissingValue { name, .. } if name == "index"),
        "{text}"
    );
}

#[test]
fn batch_figure_follows_the_recorded_shapes() {
    let t = fresh_trace();
    let y: Vec<u64> = value(t, "tensor_matmul", "batched_y_shape")
        .as_array()
        .expect("shape")
        .iter()
        .map(|v| v.as_u64().expect("size"))
        .collect();
    let d = value(t, "tensor_matmul", "y_0_0").as_f64().expect("number") as u64;
    let dims = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(" × ");
    let mut x = y.clone();
    *x.last_mut().expect("sizes") = d;
    let texts = figure_texts(t, "batch_sequence").join("\n");
    assert!(texts.contains(&format!("x: {}", dims(&x))), "{texts}");
    assert!(texts.contains(&format!("y = x @ w: {}", dims(&y))), "{texts}");
    assert!(texts.contains(&format!("@ w ({d} × {})", y[3])), "{texts}");
    assert!(texts.contains(&format!("{} products", y[0] * y[1])), "{texts}");

    let smaller = edited(&[("tensor_matmul", "batched_y_shape", json!([2, 3, 16, 2]))]);
    let changed = figure_texts(&smaller, "batch_sequence").join("\n");
    assert!(changed.contains("6 products"), "{changed}");
    assert!(changed.contains("batch (B = 2)"), "{changed}");
    assert!(changed.contains("sequence position (L = 3)"), "{changed}");
}

#[test]
fn batch_shapes_that_contradict_the_trace_or_are_missing_fail_naming_the_value() {
    let (_, text) = figure_problem(
        &edited(&[("tensor_matmul", "batched_y_max", json!(31.0))]),
        "batch_sequence",
    );
    assert!(text.contains("tensor_matmul.batched_y_max"), "{text}");
    for (shape, expected) in [
        (json!([4]), "3 or 4 sizes"),
        (json!([4, 1000, 16, 2]), "the figure draws 1 to 32"),
        (json!([4, 8, 0, 2]), "nothing to draw"),
    ] {
        let (_, text) = figure_problem(
            &edited(&[("tensor_matmul", "batched_y_shape", shape.clone())]),
            "batch_sequence",
        );
        assert!(text.contains("tensor_matmul.batched_y_shape"), "{shape}: {text}");
        assert!(text.contains(expected), "{shape}: {text}");
    }
    let (cause, text) = figure_problem(&edited(&[("tensor_matmul", "y_0_0", Value::Null)]), "batch_sequence");
    assert!(
        matches!(&cause, Cause::MissingValue { name, .. } if name == "y_0_0"),
        "{text}"
    );
}

/// Equal peaks (one CPU loop for both dtypes) share one line and one label; different
/// ones keep a line each. Two lines at one height printed their labels over each other.
#[test]
fn equal_peaks_share_one_labelled_line() {
    let peaks = |fp32: f64, bf16: f64| {
        let mut t = fresh_trace().clone();
        let s = section_mut(&mut t, "tensor_operations_flops");
        let v = &mut s.values.get_mut("sweep_peaks").expect("sweep_peaks").value;
        v["fp32"]["flop_per_sec"] = json!(fp32);
        v["bf16"]["flop_per_sec"] = json!(bf16);
        figure_texts(&t, "matmul_throughput")
            .into_iter()
            .filter(|text| text.starts_with("peak "))
            .collect::<Vec<_>>()
    };
    assert_eq!(peaks(2e11, 2e11), ["peak fp32 = bf16"]);
    assert_eq!(peaks(2e11, 2.001e11), ["peak fp32 = bf16"]);
    let mut apart = peaks(2e11, 8e11);
    apart.sort();
    assert_eq!(apart, ["peak bf16", "peak fp32"]);
}

/// The roofline's legend names the sweep's sizes as the run chose them (a CPU sweeps 16 … 1024,
/// a GPU 256 … 8192), not a fixed range.
#[test]
fn the_roofline_names_the_sizes_its_sweep_ran() {
    let t = fresh_trace();
    let sweep = value(t, "arithmetic_intensity", "matmul_sweep")
        .as_array()
        .expect("the sweep")
        .clone();
    let n = |row: &Value| row["n"].as_u64().expect("n");
    let (first, last) = (n(&sweep[0]), n(&sweep[sweep.len() - 1]));
    let texts = figure_texts(t, "roofline");
    assert!(texts.contains(&format!("matmul, n = {first} … {last}")), "{texts:?}");
    // A sweep of other sizes: the legend follows.
    let mut other = sweep.clone();
    other.truncate(2);
    other[0]["n"] = json!(256);
    other[1]["n"] = json!(8192);
    let edited = edited(&[("arithmetic_intensity", "matmul_sweep", Value::Array(other))]);
    let texts = figure_texts(&edited, "roofline");
    assert!(texts.contains(&"matmul, n = 256 … 8192".to_string()), "{texts:?}");
}
