//! Charts are drawn from trace data, which is input: absurd sizes, counts and numbers fail the
//! build with a message naming the value, and never make a chart (or the process) grow without
//! bound. (On the code before this test, a bit width of 4294967295 aborted the process.)

use crate::common;

use common::{Workspace, fresh_trace, only_problem};
use cs336::book::Cause;
use cs336::book::chart::plot::{Axis, LineChart, Scale, Series, line_chart};
use serde_json::{Value, json};

/// The fresh trace with `section.name` replaced by `value`.
fn with_value(section: &str, name: &str, value: Value) -> cs336::trace::Trace {
    let mut t = fresh_trace().clone();
    let s = t.sections.iter_mut().find(|s| s.id == section).expect("section");
    s.values.get_mut(name).expect("value").value = value;
    t
}

/// Builds `{{chart id}}` over `trace` and returns the one problem's text.
fn chart_problem(trace: &cs336::trace::Trace, id: &str) -> String {
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", trace);
    let p = only_problem(ws.build_chapter(&path, &format!("{{{{chart {id}}}}}\n")));
    assert!(
        matches!(p.cause, Cause::BadValue { .. } | Cause::Chart { .. }),
        "{id}: {p}"
    );
    p.to_string()
}

fn layouts(sign: Value) -> Value {
    json!([{"name": "float32", "sign": sign, "exponent": 8, "mantissa": 23}])
}

#[test]
fn bit_widths_must_be_small_whole_numbers() {
    for (sign, expected) in [
        (json!(4294967295u64), "bit_layouts.0.sign"),
        (json!(4294967296u64), "bit_layouts.0.sign"),
        (json!(-1), "bit_layouts.0.sign"),
        (json!(2.5), "bit_layouts.0.sign"),
        (json!(1e300), "bit_layouts.0.sign"),
        (json!("NaN"), "bit_layouts.0.sign"),
        (json!(65), "bit_layouts.0.sign"),
    ] {
        let t = with_value("tensors_memory", "bit_layouts", layouts(sign.clone()));
        let text = chart_problem(&t, "float_bit_layouts");
        assert!(text.contains(expected), "sign {sign}: {text}");
    }
}

#[test]
fn row_and_series_counts_are_bounded() {
    let many: Vec<Value> = (0..1000)
        .map(|i| json!({"name": format!("f{i}"), "sign": 1, "exponent": 5, "mantissa": 10}))
        .collect();
    let t = with_value("tensors_memory", "bit_layouts", Value::Array(many));
    assert!(chart_problem(&t, "float_bit_layouts").contains("bit_layouts"));

    let sweep: Vec<Value> = (0..1000)
        .map(|i| json!({"dtype": format!("d{i}"), "n": 64, "flop_per_sec": 1e9}))
        .collect();
    let t = with_value("tensor_operations_flops", "throughput_sweep", Value::Array(sweep));
    assert!(chart_problem(&t, "matmul_throughput").contains("series"));

    let losses: Vec<f64> = (0..200_000).map(|i| 1.0 + i as f64).collect();
    let t = with_value("mixed_precision_training", "losses_fp32", json!(losses));
    let text = chart_problem(&t, "mixed_precision_losses");
    assert!(text.contains("points"), "{text}");
}

#[test]
fn extreme_numbers_do_not_break_a_chart() {
    // Every number finite but far apart on a linear axis: the chart is drawn or refused, quickly.
    let mut chart = LineChart::new(
        Axis {
            label: "x".into(),
            scale: Scale::Linear,
            name: "x".into(),
            unit: cs336::trace::Unit::None,
        },
        Axis {
            label: "y".into(),
            scale: Scale::Linear,
            name: "y".into(),
            unit: cs336::trace::Unit::None,
        },
    );
    chart.series.push(Series::measured(
        "s",
        vec![(-f64::MAX, -f64::MAX), (f64::MAX, f64::MAX)],
        vec!["s.v".into()],
    ));
    match line_chart(&chart) {
        Ok(svg) => assert!(svg.len() < 1 << 20 && !svg.contains("NaN"), "{} bytes", svg.len()),
        Err(cause) => assert!(cause.to_string().contains("range"), "{cause}"),
    }
    // A format whose range spans the whole of f64.
    let t = with_value(
        "tensors_memory",
        "float32_info",
        json!({"smallest_subnormal": 5e-324, "smallest_normal": 2.2e-308, "max": f64::MAX, "eps": 1e-7}),
    );
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", &t);
    match ws.build_chapter(&path, "{{chart float_ranges}}\n") {
        Ok(html) => assert!(html.len() < 4 << 20),
        Err(problems) => panic!("a wide but valid range is drawn: {problems:#?}"),
    }
}
