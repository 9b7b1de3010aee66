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
    let ceilings = ceilings(data)?;
    // The memory slopes rise to the highest ceiling.
    let peak = ceilings.iter().map(|c| c.1).fold(0.0, f64::max);
    let mut points: Vec<(String, f64, f64)> = Vec::new();
    for op in OPS {
        let intensity = data.number(&format!("op_counts.{op}.intensity"))?;
        let flop_per_sec = data.number(&format!("op_timings.{op}.flop_per_sec"))?;
        below_its_roof(data, op)?;
        points.push((op.to_string(), intensity, flop_per_sec));
    }
    let sweep_keys = (0..data.list("matmul_sweep", MAX_POINTS)?.len())
        .map(|i| data.decided(&format!("matmul_sweep.{i}.flop_per_sec")))
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
        .flat_map(|(_, bw, _)| ceilings.iter().map(move |c| c.1 / bw))
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
    // A roof's points follow from two values: its hover says what decided each.
    let roof_key = |bandwidth: &str, peak: &str| {
        let (b, p) = (data.decided_alone(bandwidth), data.decided_alone(peak));
        let decided = if b == p {
            format!("each {b}")
        } else {
            format!("the bandwidth {b}; the peak {p}")
        };
        vec![format!("the smaller of bandwidth × intensity and the peak: {decided}")]
    };
    let top = ceilings
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map_or("peak_flop_per_sec".to_string(), |c| c.2.clone());
    for (level, bw, key) in &levels {
        chart.series.push(Series::measured(
            format!("memory: {level}"),
            roof(peak, *bw, (lo, hi)),
            roof_key(key, &top),
        ));
    }
    // One flat ceiling per precision route.
    for (name, flop_per_sec, key) in &ceilings {
        chart.series.push(Series::measured(
            format!("ceiling: {name}"),
            vec![(lo, *flop_per_sec), (hi, *flop_per_sec)],
            vec![data.decided(key)],
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
                roof_key("datasheet_bytes_per_sec", "peak_flop_per_sec"),
            )
        });
    }
    chart.series.push(Series {
        reference: true,
        ..Series::measured(
            "H100 datasheet roofline",
            roof(h100_peak, h100_bw, (lo, hi)),
            roof_key("h100_bytes_per_sec", "h100_flop_per_sec"),
        )
    });
    for (op, intensity, flop_per_sec) in points {
        let key = data.decided(&format!("op_timings.{op}.flop_per_sec"));
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
    // Upper right, on a taller chart: the points sit low and left, the ceilings in the middle;
    // only the H100's dashed line passes there.
    chart.legend = SeriesLabelPosition::UpperRight;
    chart.height = 560;
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

/// The compute ceilings (name, FLOP/s, where the trace holds it): one per precision route, or
/// the bf16 peak alone in a trace older than them.
fn ceilings(data: &ChartData) -> Result<Vec<(String, f64, String)>, Cause> {
    if !data.names().any(|n| n == "compute_ceilings") {
        return Ok(vec![(
            "bf16 peak".into(),
            data.number("peak_flop_per_sec")?,
            "peak_flop_per_sec".into(),
        )]);
    }
    let names: Vec<String> = (data.value("compute_ceilings")?.as_object())
        .map(|o| o.keys().take(super::MAX_SERIES / 4).cloned().collect())
        .unwrap_or_default();
    names
        .into_iter()
        .map(|name| {
            let key = format!("compute_ceilings.{name}.flop_per_sec");
            let dtype = data
                .value(&format!("compute_ceilings.{name}.dtype"))?
                .as_str()
                .unwrap_or("")
                .to_string();
            Ok((format!("{name} ({dtype})"), data.number(&key)?, key))
        })
        .collect()
}

/// Refuses an operation that moved its bytes faster than the memory did at its working set,
/// beyond the two timings' spreads (`allowance`): a point above its roof is a wrong measurement
/// or a wrong roof, and the roofline must not draw it. The run checks the same before it records;
/// a trace timed at the tests' budget (one cold call each) is not held to it.
fn below_its_roof(data: &ChartData, op: &str) -> Result<(), Cause> {
    if data.section.record.run.at_test_budget() || !super::hierarchy::has(data, "op_timings", op) {
        return Ok(());
    }
    let row = format!("op_timings.{op}");
    if !super::hierarchy::has(data, &row, "allowance") {
        return Ok(());
    }
    let achieved = data.number(&format!("{row}.bytes_per_sec"))?;
    let roof = data.number(&format!("{row}.roof_bytes_per_sec"))?;
    let allowance = data.number(&format!("{row}.allowance"))?;
    if achieved > roof * allowance {
        return Err(data.bad(
            &format!("{row}.bytes_per_sec"),
            format!(
                "{op} moved {achieved:.4e} bytes/s, {:.0}% of the memory's bandwidth at its working set ({roof:.4e} bytes/s, \
                 allowed {allowance:.3}× for the timings' spread): a point above its roof is not drawn",
                100.0 * achieved / roof
            ),
        ));
    }
    Ok(())
}

/// Each measured level, its bandwidth and where the trace holds it, in the order recorded
/// (fastest first on a CPU): the fastest kernel's where recorded, else the copy's.
fn roof_levels(data: &ChartData) -> Result<Vec<(String, f64, String)>, Cause> {
    let roofs = data.value("memory_roofs")?;
    let levels = roofs
        .as_object()
        .ok_or_else(|| data.bad("memory_roofs", "expected an object of levels".into()))?;
    levels
        .keys()
        .take(super::MAX_SERIES)
        .map(|level| {
            let fastest = format!("memory_roofs.{level}.bytes_per_sec");
            let key = match data.number(&fastest) {
                Ok(_) => fastest,
                Err(_) => format!("memory_roofs.{level}.copy_bytes_per_sec"),
            };
            Ok((level.clone(), data.number(&key)?, key))
        })
        .collect()
}
