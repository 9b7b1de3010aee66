//! `arithmetic_intensity`'s memory hierarchy: bandwidth against working-set size on log–log
//! axes, one line per STREAM kernel and thread count, the caches the OS reports marked where they
//! fill; and the operations' own sweeps over the memory's fastest bandwidth at each size.

use plotters::prelude::SeriesLabelPosition;
use serde_json::Value;

use super::plot::{Axis, LineChart, Scale, Series, line_chart};
use super::{ChartData, MAX_POINTS};
use crate::problem::Cause;
use crate::trace::Unit;

/// The kernels the section records, in its order.
const KERNELS: [&str; 5] = ["copy", "scale", "add", "triad", "read"];
/// The operations swept, and those timed at the lecture's size (drawn as single points).
const SWEPT: [&str; 5] = ["relu", "gelu", "add", "dot", "matvec"];
const AT_LECTURE_SIZE: [&str; 4] = ["relu", "gelu", "dot", "matvec"];

fn axes() -> LineChart {
    LineChart::new(
        Axis {
            label: "working set (bytes, log scale)".into(),
            scale: Scale::Log2,
            name: "working set".into(),
            unit: Unit::Bytes,
        },
        Axis {
            label: "bytes per second (log scale)".into(),
            scale: Scale::Log10,
            name: "bandwidth".into(),
            unit: Unit::BytesPerSec,
        },
    )
}

/// Points of a chart line, and their hover keys.
type Line = (Vec<(f64, f64)>, Vec<String>);

/// The points of a list of `{bytes, <field>}` objects at `name`, and their hover keys.
fn points(data: &ChartData, name: &str, field: &str) -> Result<Line, Cause> {
    let n = data.list(name, MAX_POINTS)?.len();
    let mut pts = Vec::with_capacity(n);
    let mut keys = Vec::with_capacity(n);
    for i in 0..n {
        pts.push((
            data.number(&format!("{name}.{i}.bytes"))?,
            data.number(&format!("{name}.{i}.{field}"))?,
        ));
        keys.push(data.decided(&format!("{name}.{i}.{field}")));
    }
    Ok((pts, keys))
}

pub fn memory_hierarchy(data: &ChartData) -> Result<String, Cause> {
    let threads = data.number("hierarchy_threads")?;
    let mut chart = axes();
    let (mut lo, mut hi) = (f64::MAX, 0f64);
    for (curves, dashed, label) in [
        ("hierarchy_all_threads", false, format!("{threads} threads")),
        ("hierarchy_one_thread", true, "1 thread".to_string()),
    ] {
        for kernel in KERNELS {
            let (pts, keys) = points(data, &format!("{curves}.{kernel}"), "bytes_per_sec")?;
            for &(_, y) in &pts {
                (lo, hi) = (lo.min(y), hi.max(y));
            }
            chart.series.push(Series {
                reference: dashed,
                ..Series::measured(format!("{kernel}, {label}"), pts, keys)
            });
        }
    }
    if lo > hi {
        return Err(data.bad("hierarchy_all_threads", "no point to draw".into()));
    }
    // Each reported cache, a vertical line where the measured threads' copies of it fill.
    let reported = data.value("reported_caches")?;
    let names: Vec<String> = reported
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    for name in names.iter().take(4) {
        let x = data.number(&format!("reported_caches.{name}.holds_bytes"))?;
        chart.series.push(Series {
            reference: true,
            ..Series::measured(
                format!("{name} as reported"),
                vec![(x, lo), (x, hi)],
                vec![data.decided(&format!("reported_caches.{name}.holds_bytes"))],
            )
        });
    }
    // Upper right: bandwidth falls with size. Thirteen lines want a taller chart.
    chart.legend = SeriesLabelPosition::UpperRight;
    chart.height = 560;
    line_chart(&chart)
}

pub fn op_sweeps(data: &ChartData) -> Result<String, Cause> {
    let mut chart = axes();
    // The memory's fastest bandwidth at each size: the best of the five kernels on all threads
    // (a GPU's run measures its memory at one size only: drawn flat).
    if data.names().any(|n| n == "hierarchy_all_threads") {
        let curves: Vec<Vec<(f64, f64)>> = KERNELS
            .iter()
            .map(|k| points(data, &format!("hierarchy_all_threads.{k}"), "best_bytes_per_sec").map(|p| p.0))
            .collect::<Result<_, _>>()?;
        let envelope: Vec<(f64, f64)> = (0..curves.iter().map(Vec::len).min().unwrap_or(0))
            .map(|i| (curves[0][i].0, curves.iter().map(|c| c[i].1).fold(0.0, f64::max)))
            .collect();
        chart.series.push(Series {
            reference: true,
            ..Series::measured(
                "the memory's fastest (STREAM)",
                envelope,
                vec![data.decided("hierarchy_all_threads")],
            )
        });
    } else {
        let bw = data.number("memory_bytes_per_sec")?;
        let (pts, _) = points(data, "op_sweeps.relu", "bytes_per_sec")?;
        let xs = pts.iter().map(|p| p.0);
        let (lo, hi) = xs.fold((f64::MAX, 0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
        chart.series.push(Series {
            reference: true,
            ..Series::measured(
                "the memory's copy",
                vec![(lo, bw), (hi, bw)],
                vec![data.decided("memory_bytes_per_sec")],
            )
        });
    }
    for op in SWEPT {
        let (pts, keys) = points(data, &format!("op_sweeps.{op}"), "bytes_per_sec")?;
        chart.series.push(Series::measured(op, pts, keys));
    }
    for op in AT_LECTURE_SIZE {
        let at = (
            data.number(&format!("op_counts.{op}.bytes"))?,
            data.number(&format!("op_timings.{op}.bytes_per_sec"))?,
        );
        let key = data.decided(&format!("op_timings.{op}.bytes_per_sec"));
        chart.series.push(Series::measured(
            format!("{op}, the lecture's size"),
            vec![at],
            vec![key],
        ));
    }
    chart.legend = SeriesLabelPosition::UpperRight;
    chart.height = 600;
    line_chart(&chart)
}

/// Whether the value at `name` is an object with a key `key` (older traces lack some).
pub fn has(data: &ChartData, name: &str, key: &str) -> bool {
    data.value(name)
        .ok()
        .and_then(Value::as_object)
        .is_some_and(|o| o.contains_key(key))
}
