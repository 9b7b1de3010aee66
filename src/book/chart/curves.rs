//! x–y charts of the compute and training sections: matmul throughput against size, output
//! spread against input dimension, and loss curves.

use plotters::prelude::SeriesLabelPosition;

use super::plot::{Axis, LineChart, Reference, Scale, Series, line_chart};
use super::{ChartData, MAX_POINTS, MAX_SERIES};
use crate::problem::Cause;
use crate::trace::Unit;

/// The items of a recorded list (at most a chart's points).
fn len(data: &ChartData, name: &str) -> Result<usize, Cause> {
    data.list(name, MAX_POINTS).map(Vec::len)
}

/// At most `MAX_SERIES` lines, said of the value `name` that makes them.
fn bounded(data: &ChartData, name: &str, series: Vec<Series>) -> Result<Vec<Series>, Cause> {
    if series.len() > MAX_SERIES {
        return Err(data.bad(
            name,
            format!(
                "{} series, more than the {MAX_SERIES} lines a chart draws",
                series.len()
            ),
        ));
    }
    Ok(series)
}

/// A loss list as (step, loss) points, steps counted from 1.
fn loss_series(data: &ChartData, name: &str, label: &str) -> Result<Series, Cause> {
    let losses = data.numbers(name)?;
    Ok(Series::measured(
        label,
        losses.iter().enumerate().map(|(i, &l)| ((i + 1) as f64, l)).collect(),
        (0..losses.len())
            .map(|i| data.decided(&format!("{name}.{i}")))
            .collect(),
    ))
}

fn loss_chart(series: Vec<Series>) -> Result<String, Cause> {
    let mut chart = LineChart::new(
        Axis {
            label: "training step (count)".into(),
            scale: Scale::Linear,
            name: "step".into(),
            unit: Unit::Count,
        },
        Axis {
            label: "loss, mean squared error (log scale)".into(),
            scale: Scale::Log10,
            name: "loss".into(),
            unit: Unit::None,
        },
    );
    chart.series = series;
    chart.markers = false;
    chart.legend = SeriesLabelPosition::LowerLeft; // losses start high and fall to the right
    line_chart(&chart)
}

/// `tensor_operations_flops.throughput_sweep`: FLOP/s of square matmuls by size and dtype, with
/// the peaks of `sweep_peaks` (measured on a CPU, a GPU's datasheet figure) as lines.
pub fn matmul_throughput(data: &ChartData) -> Result<String, Cause> {
    let mut series: Vec<Series> = Vec::new();
    for i in 0..len(data, "throughput_sweep")? {
        let dtype = data
            .value(&format!("throughput_sweep.{i}.dtype"))?
            .as_str()
            .unwrap_or("?")
            .to_string();
        let y = format!("throughput_sweep.{i}.flop_per_sec");
        let point = (data.number(&format!("throughput_sweep.{i}.n"))?, data.number(&y)?);
        match series.iter_mut().find(|s| s.name == dtype) {
            Some(s) => {
                s.points.push(point);
                s.decided.push(data.decided(&y));
            }
            None => series.push(Series::measured(dtype, vec![point], vec![data.decided(&y)])),
        }
    }
    let mut chart = LineChart::new(
        Axis {
            label: "matrix size n, for n×n times n×n (log scale)".into(),
            scale: Scale::Log2,
            name: "n".into(),
            unit: Unit::Count,
        },
        Axis {
            label: "throughput (FLOP/s, log scale)".into(),
            scale: Scale::Log10,
            name: "throughput".into(),
            unit: Unit::FlopPerSec,
        },
    );
    let series = bounded(data, "throughput_sweep", series)?;
    for s in &series {
        // A dtype without a known peak has no line; the chapter says why.
        let at = format!("sweep_peaks.{}.flop_per_sec", s.name);
        if let Ok(peak) = data.number(&at) {
            // Peaks within 1 % of each other (one loop promising both dtypes, as on a CPU
            // without bf16 instructions) share one line; two would print their labels on top of
            // each other.
            let same = |r: &&mut Reference| (r.y - peak).abs() <= 0.01 * r.y.abs().max(peak.abs());
            match chart.references.iter_mut().find(same) {
                Some(r) => r.label.push_str(&format!(" = {}", s.name)),
                None => chart.references.push(Reference {
                    label: format!("peak {}", s.name),
                    y: peak,
                    decided: data.decided(&at),
                }),
            }
        }
    }
    chart.series = series;
    chart.legend = SeriesLabelPosition::LowerRight; // below the peak lines
    line_chart(&chart)
}

/// `module_parameters.output_std_vs_input_dim`: output spread for N(0, 1) and Xavier weights,
/// with √input_dim for reference.
pub fn init_std(data: &ChartData) -> Result<String, Cause> {
    let name = "output_std_vs_input_dim";
    let mut normal = Series::measured("w ~ N(0, 1)", Vec::new(), Vec::new());
    let mut xavier = Series::measured("w ~ N(0, 1/input_dim)", Vec::new(), Vec::new());
    let mut sqrt = Series {
        reference: true,
        ..Series::measured("√input_dim (formula)", Vec::new(), Vec::new())
    };
    for i in 0..len(data, name)? {
        let dim = data.number(&format!("{name}.{i}.input_dim"))?;
        for (series, field) in [
            (&mut normal, "normal_std"),
            (&mut xavier, "xavier_std"),
            (&mut sqrt, "sqrt_input_dim"),
        ] {
            let at = format!("{name}.{i}.{field}");
            series.points.push((dim, data.number(&at)?));
            series.decided.push(data.decided(&at));
        }
    }
    let mut chart = LineChart::new(
        Axis {
            label: "input dimension (count, log scale)".into(),
            scale: Scale::Log2,
            name: "input_dim".into(),
            unit: Unit::Count,
        },
        Axis {
            label: "standard deviation of the outputs (unitless, log scale)".into(),
            scale: Scale::Log2,
            name: "std".into(),
            unit: Unit::None,
        },
    );
    chart.series = vec![normal, xavier, sqrt];
    line_chart(&chart)
}

/// `train_loop.longer_runs`: the loss of each optimizer and learning rate, step by step.
pub fn train_losses(data: &ChartData) -> Result<String, Cause> {
    let runs = data
        .value("longer_runs")?
        .as_object()
        .ok_or_else(|| data.bad("longer_runs", "expected an object of runs".into()))?;
    if runs.len() > MAX_SERIES {
        return Err(data.bad(
            "longer_runs",
            format!("{} runs, more than the {MAX_SERIES} lines a chart draws", runs.len()),
        ));
    }
    let mut series = Vec::new();
    for run in runs.keys() {
        let lr = data.number(&format!("longer_runs.{run}.lr"))?;
        let optimizer = data
            .value(&format!("longer_runs.{run}.optimizer"))?
            .as_str()
            .unwrap_or(run)
            .to_string();
        series.push(loss_series(
            data,
            &format!("longer_runs.{run}.losses"),
            &format!("{optimizer}, lr {lr}"),
        )?);
    }
    loss_chart(series)
}

/// `mixed_precision_training`: the three precisions' loss curves.
pub fn mixed_precision_losses(data: &ChartData) -> Result<String, Cause> {
    loss_chart(vec![
        loss_series(data, "losses_fp32", "float32")?,
        loss_series(data, "losses_bf16", "bfloat16 everywhere")?,
        loss_series(data, "losses_mixed", "mixed: bfloat16 matmuls, float32 weights")?,
    ])
}
