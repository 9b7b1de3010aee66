//! `arithmetic_intensity`'s roofline: FLOP/s against arithmetic intensity on log–log axes. Each
//! measured memory level caps an operation at bandwidth × intensity (a slope), the measured peak
//! caps it flat; the five operations and the sweep of matrix products are the measured points.

use plotters::prelude::SeriesLabelPosition;

use super::plot::{Axis, LineChart, Scale, Series, line_chart};
use super::{ChartData, MAX_POINTS};
use crate::problem::Cause;
use crate::trace::Unit;

/// The operations the section times, in the order it records them.
const OPS: [&str; 5] = ["relu", "gelu", "dot", "matvec", "matmul"];

pub fn roofline(data: &ChartData) -> Result<String, Cause> {
    let peak = data.number("peak_flop_per_sec")?;
    let mut points: Vec<(String, f64, f64)> = Vec::new();
    for op in OPS {
        let intensity = data.number(&format!("op_counts.{op}.intensity"))?;
        let flop_per_sec = data.number(&format!("op_timings.{op}.flop_per_sec"))?;
        points.push((op.to_string(), intensity, flop_per_sec));
    }
    let sweep_keys = (0..data.list("matmul_sweep", MAX_POINTS)?.len())
        .map(|i| data.key(&format!("matmul_sweep.{i}.flop_per_sec")))
        .collect();
    let sweep: Vec<(f64, f64)> = (0..data.list("matmul_sweep", MAX_POINTS)?.len())
        .map(|i| {
            Ok((
                data.number(&format!("matmul_sweep.{i}.intensity"))?,
                data.number(&format!("matmul_sweep.{i}.flop_per_sec"))?,
            ))
        })
        .collect::<Result<_, Cause>>()?;
    // The x range covers every point and every roof's bend, with a factor of two to spare.
    let levels = roof_levels(data)?;
    let xs = points.iter().map(|p| p.1).chain(sweep.iter().map(|p| p.0));
    // The H100's datasheet roofline is drawn too (dashed): its values are read once, here.
    let (h100_peak, h100_bw) = (data.number("h100_flop_per_sec")?, data.number("h100_bytes_per_sec")?);
    let knees = levels
        .iter()
        .map(|(_, bw)| peak / bw)
        .chain(std::iter::once(h100_peak / h100_bw));
    let knees = knees.chain(
        ["h100_flop_per_sec", "h100_bytes_per_sec"]
            .map(|name| data.number(name))
            .into_iter()
            .collect::<Result<Vec<f64>, Cause>>()
            .map(|v| v[0] / v[1]),
    );
    let (lo, hi) = xs
        .chain(knees)
        .filter(|x| x.is_finite() && *x > 0.0)
        .fold((f64::MAX, 0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    if lo > hi {
        return Err(data.bad("op_counts", "no positive intensity to draw".into()));
    }
    let (lo, hi) = (lo / 2.0, hi * 2.0);
    let mut chart = LineChart::new(
        Axis {
            label: "arithmetic intensity (FLOP/byte, log scale)".into(),
            scale: Scale::Log10,
            name: "intensity".into(),
            unit: Unit::FlopPerByte,
        },
        Axis {
            label: "attainable and achieved FLOP/s (log scale)".into(),
            scale: Scale::Log10,
            name: "FLOP/s".into(),
            unit: Unit::FlopPerSec,
        },
    );
    // A roof's points follow from two values: its hover names both.
    let roof_key = |bandwidth: String, peak: &str| vec![format!("min({bandwidth} × intensity, {})", data.key(peak))];
    for (level, bw) in &levels {
        chart.series.push(Series::measured(
            format!("roof: {level}"),
            roof(peak, *bw, (lo, hi)),
            roof_key(
                data.key(&format!("memory_roofs.{level}.copy_bytes_per_sec")),
                "peak_flop_per_sec",
            ),
        ));
    }
    // The datasheet's roofs, dashed: the lecture's H100 on every device, and this GPU's own where
    // it has one (a measured roof below it is the gap between the datasheet and a copy kernel).
    if let Ok(bw) = data.number("datasheet_bytes_per_sec") {
        chart.series.push(Series {
            reference: true,
            ..Series::measured(
                "roof: datasheet memory",
                roof(peak, bw, (lo, hi)),
                roof_key(data.key("datasheet_bytes_per_sec"), "peak_flop_per_sec"),
            )
        });
    }
    chart.series.push(Series {
        reference: true,
        ..Series::measured(
            "H100 datasheet roofline",
            roof(h100_peak, h100_bw, (lo, hi)),
            roof_key(data.key("h100_bytes_per_sec"), "h100_flop_per_sec"),
        )
    });
    for (op, intensity, flop_per_sec) in points {
        let key = data.key(&format!("op_timings.{op}.flop_per_sec"));
        chart
            .series
            .push(Series::measured(op, vec![(intensity, flop_per_sec)], vec![key]));
    }
    // The sweep's sizes as the run chose them (a CPU's and a GPU's differ).
    let size = |i: usize| data.number(&format!("matmul_sweep.{i}.n"));
    let label = match sweep.len() {
        0 => "matmul, by size".to_string(),
        sizes => format!("matmul, n = {} … {}", size(0)?, size(sizes - 1)?),
    };
    chart.series.push(Series::measured(label, sweep, sweep_keys));
    // Upper left: the roofs and points rise to the right, and the H100's dashed line starts low.
    chart.legend = SeriesLabelPosition::UpperLeft;
    line_chart(&chart)
}

/// The roofline of a `peak` and a bandwidth `bw` across `lo..hi`: the slope, its bend, the flat.
fn roof(peak: f64, bw: f64, (lo, hi): (f64, f64)) -> Vec<(f64, f64)> {
    let knee = peak / bw;
    let mut line = vec![(lo, (bw * lo).min(peak))];
    if knee > lo && knee < hi {
        line.push((knee, peak));
    }
    line.push((hi, (bw * hi).min(peak)));
    line
}

/// Each measured level and its copy bandwidth, in the order recorded (fastest first on a CPU).
fn roof_levels(data: &ChartData) -> Result<Vec<(String, f64)>, Cause> {
    let roofs = data.value("memory_roofs")?;
    let levels = roofs
        .as_object()
        .ok_or_else(|| data.bad("memory_roofs", "expected an object of levels".into()))?;
    levels
        .keys()
        .take(super::MAX_SERIES)
        .map(|level| {
            Ok((
                level.clone(),
                data.number(&format!("memory_roofs.{level}.copy_bytes_per_sec"))?,
            ))
        })
        .collect()
}
