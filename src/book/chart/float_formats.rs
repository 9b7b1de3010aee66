//! The float formats of `tensors_memory`: how each spends its bits, and which magnitudes it holds.

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::ChartData;
use super::plot::{FG, PALETTE, drawing, svg, text_style, tick};
use crate::book::format::{Format, format_value};
use crate::book::problem::Cause;
use crate::trace::{Unit, json_number};

const SIGN: RGBColor = PALETTE[3];
const EXPONENT: RGBColor = PALETTE[0];
const MANTISSA: RGBColor = PALETTE[1];

/// A format's name and field widths, from the recorded `bit_layouts` list.
struct Layout {
    name: String,
    sign: u32,
    exponent: u32,
    mantissa: u32,
}

fn layouts(data: &ChartData) -> Result<Vec<Layout>, Cause> {
    let list = data.value("bit_layouts")?.as_array().ok_or_else(|| data.bad("bit_layouts", "expected a list".into()))?;
    let field = |i: usize, key: &str| -> Result<u32, Cause> {
        let at = format!("bit_layouts.{i}.{key}");
        u32::try_from(data.number(&at)? as i64).map_err(|_| data.bad(&at, "expected a bit count".into()))
    };
    (0..list.len())
        .map(|i| {
            let name = data.value(&format!("bit_layouts.{i}.name"))?;
            let name = name.as_str().ok_or_else(|| data.bad(&format!("bit_layouts.{i}.name"), "expected a string".into()))?;
            Ok(Layout { name: name.to_string(), sign: field(i, "sign")?, exponent: field(i, "exponent")?, mantissa: field(i, "mantissa")? })
        })
        .collect()
}

/// One row per format; one cell per bit, most significant first, coloured by field.
pub fn bit_layouts(data: &ChartData) -> Result<String, Cause> {
    let rows = layouts(data)?;
    let widest = rows.iter().map(|r| r.sign + r.exponent + r.mantissa).max().unwrap_or(0);
    if rows.is_empty() || widest == 0 {
        return Err(data.bad("bit_layouts", "no formats recorded".into()));
    }
    let names: Vec<String> = rows.iter().map(|r| r.name.clone()).collect();
    let height = 70 + 46 * rows.len() as u32;
    svg(760, height, "bit layouts of the floating-point formats", |root| {
        let mut chart = drawing(
            ChartBuilder::on(root)
                .margin(12)
                .x_label_area_size(44)
                .y_label_area_size(110)
                .build_cartesian_2d(0f64..widest as f64, (0..rows.len()).into_segmented()),
        )?;
        let y_name = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        };
        drawing(
            chart
                .configure_mesh()
                .disable_mesh()
                .x_desc("bit position, most significant first (bits)")
                .x_labels(widest as usize / 4 + 1)
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&y_name)
                .label_style(text_style(13))
                .axis_desc_style(text_style(14))
                .axis_style(FG.mix(0.6))
                .draw(),
        )?;
        for (i, row) in rows.iter().enumerate() {
            let fields = [("sign", "s", row.sign, SIGN), ("exponent", "e", row.exponent, EXPONENT), ("mantissa", "m", row.mantissa, MANTISSA)];
            let mut at = 0u32;
            for (long, short, bits, color) in fields {
                for b in at..at + bits {
                    let mut cell = Rectangle::new([(b as f64, SegmentValue::Exact(i)), ((b + 1) as f64, SegmentValue::Exact(i + 1))], color.filled());
                    cell.set_margin(7, 7, 1, 1);
                    drawing(chart.draw_series(std::iter::once(cell)))?;
                }
                if bits > 0 {
                    let label = if bits >= 6 { format!("{long} {bits}") } else { format!("{short}{bits}") };
                    let center = (at as f64 + bits as f64 / 2.0, SegmentValue::CenterOf(i));
                    let style = ("sans-serif", 13).into_font().color(&WHITE).pos(Pos::new(HPos::Center, VPos::Center));
                    drawing(chart.draw_series(std::iter::once(Text::new(label, center, style))))?;
                }
                at += bits;
            }
        }
        Ok(())
    })
}

/// A format's range: smallest subnormal, smallest normal and largest finite magnitude.
struct Range {
    name: String,
    subnormal: f64,
    normal: f64,
    max: f64,
}

fn ranges(data: &ChartData) -> Result<Vec<Range>, Cause> {
    let names: Vec<String> = data.names().filter(|n| n.ends_with("_info")).map(String::from).collect();
    if names.is_empty() {
        return Err(data.bad("*_info", "no format tables recorded".into()));
    }
    names
        .iter()
        .map(|n| {
            Ok(Range {
                name: n.trim_end_matches("_info").to_string(),
                subnormal: data.number(&format!("{n}.smallest_subnormal"))?,
                normal: data.number(&format!("{n}.smallest_normal"))?,
                max: data.number(&format!("{n}.max"))?,
            })
        })
        .collect()
}

/// The magnitude the lecture tries to store in float16 and bfloat16 (`fp16_1e_8`, `bf16_1e_8`).
const PROBE: f64 = 1e-8;

/// Horizontal bars on a log scale: faded over the subnormal range, solid from the smallest normal
/// number to the largest, with a line at the lecture's probe value.
pub fn dynamic_ranges(data: &ChartData) -> Result<String, Cause> {
    let rows = ranges(data)?;
    for r in &rows {
        if !(r.subnormal > 0.0 && r.normal >= r.subnormal && r.max > r.normal && r.max.is_finite()) {
            return Err(data.bad(&format!("{}_info", r.name), "smallest_subnormal ≤ smallest_normal < max must hold".into()));
        }
    }
    let lo = rows.iter().map(|r| r.subnormal.log10()).fold(f64::INFINITY, f64::min).floor() - 2.0;
    let hi = rows.iter().map(|r| r.max.log10()).fold(f64::NEG_INFINITY, f64::max).ceil() + 8.0;
    let names: Vec<String> = rows.iter().map(|r| r.name.clone()).collect();
    let height = 80 + 46 * rows.len() as u32;
    svg(760, height, "dynamic ranges of the floating-point formats", |root| {
        let mut chart = drawing(
            ChartBuilder::on(root)
                .margin(12)
                .x_label_area_size(44)
                .y_label_area_size(110)
                .build_cartesian_2d(lo..hi, (0..rows.len()).into_segmented()),
        )?;
        let y_name = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        };
        let x_tick = |v: &f64| tick(*v, true);
        drawing(
            chart
                .configure_mesh()
                .disable_y_mesh()
                .x_desc("magnitude, log scale (unitless)")
                .x_labels(10)
                .x_label_formatter(&x_tick)
                .y_label_formatter(&y_name)
                .label_style(text_style(13))
                .axis_desc_style(text_style(14))
                .axis_style(FG.mix(0.6))
                .bold_line_style(FG.mix(0.12))
                .light_line_style(FG.mix(0.0))
                .draw(),
        )?;
        for (i, r) in rows.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let bar = |from: f64, to: f64, style: ShapeStyle| {
                let mut rect = Rectangle::new([(from.log10(), SegmentValue::Exact(i)), (to.log10(), SegmentValue::Exact(i + 1))], style);
                rect.set_margin(9, 9, 0, 0);
                rect
            };
            drawing(chart.draw_series([bar(r.subnormal, r.normal, color.mix(0.35).filled()), bar(r.normal, r.max, color.filled())]))?;
            let style = text_style(12).pos(Pos::new(HPos::Left, VPos::Center));
            let label = format!("max {}", format_value(&json_number(r.max), Unit::None, Format::Auto).unwrap_or_default());
            drawing(chart.draw_series(std::iter::once(Text::new(label, (r.max.log10() + 0.8, SegmentValue::CenterOf(i)), style))))?;
        }
        let probe = PROBE.log10();
        let line = PathElement::new(vec![(probe, SegmentValue::Exact(0)), (probe, SegmentValue::Exact(rows.len()))], FG.mix(0.7).stroke_width(1));
        drawing(chart.draw_series(std::iter::once(line)))?;
        let style = text_style(12).pos(Pos::new(HPos::Left, VPos::Top));
        drawing(chart.draw_series(std::iter::once(Text::new("1e-8 (probe)", (probe + 0.6, SegmentValue::Exact(0)), style))))?;
        Ok(())
    })
}
