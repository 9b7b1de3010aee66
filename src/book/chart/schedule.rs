//! `checkpoint_schedule`'s two charts: for each schedule, the measured peak activation memory and
//! the recomputed FLOPs against the network's depth, on log–log axes, where an order of growth
//! O(L^p) is a straight line of slope p.

use plotters::prelude::SeriesLabelPosition;

use super::plot::{Axis, LineChart, Scale, Series, line_chart};
use super::{ChartData, MAX_POINTS, MAX_SERIES};
use crate::problem::Cause;
use crate::trace::Unit;

/// One line per schedule of `schedules.<i>.<field>` against `schedules.<i>.num_layers`, in the
/// order the schedules first appear.
fn by_schedule(data: &ChartData, field: &str) -> Result<Vec<Series>, Cause> {
    let mut series: Vec<Series> = Vec::new();
    for i in 0..data.list("schedules", MAX_POINTS)?.len() {
        let name = data
            .value(&format!("schedules.{i}.schedule"))?
            .as_str()
            .ok_or_else(|| data.bad(&format!("schedules.{i}.schedule"), "expected a name".into()))?
            .to_string();
        let y = format!("schedules.{i}.{field}");
        let point = (data.number(&format!("schedules.{i}.num_layers"))?, data.number(&y)?);
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => {
                s.points.push(point);
                s.decided.push(data.decided(&y));
            }
            None => {
                if series.len() == MAX_SERIES {
                    return Err(data.bad("schedules", format!("more than the {MAX_SERIES} lines a chart draws")));
                }
                series.push(Series::measured(name, vec![point], vec![data.decided(&y)]));
            }
        }
    }
    Ok(series)
}

fn depth_axis() -> Axis {
    Axis {
        label: "layers L (count, log scale)".into(),
        scale: Scale::Log2,
        name: "L".into(),
        unit: Unit::Count,
    }
}

/// `checkpoint_schedule.schedules`: the step's measured high-water mark against depth.
pub fn peaks(data: &ChartData) -> Result<String, Cause> {
    let mut chart = LineChart::new(
        depth_axis(),
        Axis {
            label: "peak activation memory, measured (bytes, log scale)".into(),
            scale: Scale::Log10,
            name: "peak".into(),
            unit: Unit::Bytes,
        },
    );
    chart.series = by_schedule(data, "measured_peak_bytes")?;
    line_chart(&chart)
}

/// `checkpoint_schedule.schedules`: the forward FLOPs spent again against depth. Keeping every
/// layer recomputes nothing, which a log axis cannot show: that line is left out (it is the last
/// schedule, so the others keep the colours of the chart of peaks).
pub fn recomputed(data: &ChartData) -> Result<String, Cause> {
    let mut chart = LineChart::new(
        depth_axis(),
        Axis {
            label: "recomputed matmul FLOPs (FLOP, log scale)".into(),
            scale: Scale::Log10,
            name: "recomputed".into(),
            unit: Unit::Flop,
        },
    );
    chart.series = by_schedule(data, "recomputed_flops")?
        .into_iter()
        .filter(|s| s.points.iter().any(|&(_, y)| y > 0.0))
        .collect();
    chart.legend = SeriesLabelPosition::UpperLeft;
    line_chart(&chart)
}
