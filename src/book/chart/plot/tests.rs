//! The line chart's scales, ticks and drawing, tested apart from the charts that use it.

use super::*;

#[test]
fn line_chart_draws_series_references_and_units() {
    let mut chart = LineChart::new(
        Axis {
            label: "matrix size n (elements per side)".into(),
            scale: Scale::Log2,
            name: "n".into(),
            unit: Unit::Count,
        },
        Axis {
            label: "throughput (FLOP/s)".into(),
            scale: Scale::Log10,
            name: "throughput".into(),
            unit: Unit::FlopPerSec,
        },
    );
    let decided = |dtype: &str, n: usize| (0..n).map(|i| format!("measured: {dtype} point {i}")).collect();
    chart.series.push(Series::measured(
        "float32",
        vec![(64.0, 1e9), (256.0, 3e10), (1024.0, 5e10), (2048.0, f64::NAN)],
        decided("f32", 4),
    ));
    chart.series.push(Series::measured(
        "bfloat16",
        vec![(64.0, 2e9), (256.0, 6e10), (1024.0, 9e10)],
        decided("bf16", 3),
    ));
    chart.references.push(Reference {
        label: "peak float32".into(),
        y: 1.2e11,
        decided: "given: the peak".into(),
    });
    let svg = line_chart(&chart).expect("draws");
    assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
    assert!(!svg.contains('\n'));
    assert!(!svg.contains(FG_HEX));
    assert!(svg.contains("currentColor"));
    for text in [
        "throughput (FLOP/s)",
        "matrix size n (elements per side)",
        "peak float32",
        "float32",
        "bfloat16",
    ] {
        assert!(svg.contains(&format!(">{text}<")), "missing text {text}");
    }
    // Every drawn point is a marker in its series' colour with its value, unit and what decided
    // it on hover; the point that cannot be drawn (NaN) has none; the peak line has its own.
    let hover = svg
        .split("<g class=\"lecture-chart-hover\"")
        .nth(1)
        .expect("hover group");
    assert_eq!(hover.matches("<circle ").count(), 6, "{hover}");
    assert_eq!(hover.matches("fill=\"#3d8fd1\"").count(), 3, "float32 in blue");
    assert!(
        hover.contains("<title>float32, n = 256: 30 GFLOP/s&#10;measured: f32 point 1</title>"),
        "{hover}"
    );
    assert!(hover.contains("<title>bfloat16, n = 1,024: 90 GFLOP/s&#10;measured: bf16 point 2</title>"));
    assert!(!hover.contains("f32 point 3"), "NaN is not drawn, so not pointed at");
    assert!(hover.contains("<line ") && hover.contains("<title>peak float32: 120 GFLOP/s&#10;given: the peak</title>"));
    // Log-axis ticks are written as the numbers they stand for, at whole powers.
    assert!(svg.contains(">1e10<") && svg.contains(">1e11<"), "{svg}");
    assert!(svg.contains(">64<") && svg.contains(">1024<"), "{svg}");
    assert!(!svg.contains(">3.162e10<"), "no half-power ticks");
    // Drawn twice: for a desktop's column, then for a phone's, whose legend is page text.
    let at = svg
        .find("<svg class=\"lecture-chart-svg lecture-chart-narrow\"")
        .expect("a narrow drawing");
    let (wide, narrow) = svg.split_at(at);
    assert!(
        wide.starts_with("<svg class=\"lecture-chart-svg lecture-chart-wide\""),
        "{}",
        &wide[..60]
    );
    let (narrow, legend) = narrow.split_at(narrow.find("</svg>").expect("closed") + "</svg>".len());
    assert!(
        legend.contains("solid #3d8fd1\"></span>float32</li>") && legend.contains("bfloat16</li>"),
        "{legend}"
    );
    assert!(!narrow.contains(">bfloat16<"), "no legend drawn inside the narrow plot");
    // At its minimum width each drawing's smallest text is still readable; the narrow one's
    // minimum fits a phone's column (350 px at a 390 px window).
    for (drawing, width, widest_min) in [(wide, 720.0, 720.0), (narrow, 340.0, 350.0)] {
        let min_width: f64 = drawing
            .split("min-width: ")
            .nth(1)
            .and_then(|s| s.split("px").next())
            .and_then(|s| s.parse().ok())
            .expect("a minimum width");
        let smallest = smallest_font(drawing).expect("text");
        assert!(min_width <= widest_min, "{min_width}");
        assert!(
            smallest * min_width / width >= READABLE_TEXT_PX,
            "{smallest} px at {min_width} px"
        );
        assert!(
            drawing.contains(&format!("viewBox=\"0 0 {width} ")),
            "{}",
            &drawing[..200]
        );
    }
}

#[test]
fn a_chart_without_points_is_an_error() {
    let chart = LineChart::new(
        Axis {
            label: "x".into(),
            scale: Scale::Log10,
            name: "x".into(),
            unit: Unit::None,
        },
        Axis {
            label: "y".into(),
            scale: Scale::Linear,
            name: "y".into(),
            unit: Unit::None,
        },
    );
    assert!(matches!(line_chart(&chart), Err(Cause::Chart { .. })));
}

#[test]
fn a_log2_axis_of_bytes_is_labelled_in_binary_units() {
    assert_eq!(bytes_tick(12.0, Scale::Log2, Unit::Bytes).as_deref(), Some("4 KiB"));
    assert_eq!(bytes_tick(30.0, Scale::Log2, Unit::Bytes).as_deref(), Some("1 GiB"));
    assert_eq!(bytes_tick(5.0, Scale::Log2, Unit::Bytes).as_deref(), Some("32 bytes"));
    assert_eq!(bytes_tick(12.5, Scale::Log2, Unit::Bytes), None);
    assert_eq!(bytes_tick(12.0, Scale::Log10, Unit::Bytes), None);
    assert_eq!(bytes_tick(12.0, Scale::Log2, Unit::None), None);
}
