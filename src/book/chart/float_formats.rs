//! The float formats of `tensors_memory`: how each spends its bits, and which magnitudes it holds.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::hover::{self, Hover, Shape};
use super::plot::{FG, PALETTE, Scale, drawing, svg, text_style, tick};
use super::{ChartData, MAX_ROWS};
use crate::format::{Format, format_value};
use crate::problem::Cause;
use crate::trace::{Unit, json_number};

const SIGN: RGBColor = PALETTE[3];
const EXPONENT: RGBColor = PALETTE[0];
const MANTISSA: RGBColor = PALETTE[1];

/// A format's name and field widths, from the recorded `bit_layouts` list.
struct Layout {
    /// Its place in the list, for the trace keys in hover text.
    index: usize,
    name: String,
    sign: u32,
    exponent: u32,
    mantissa: u32,
}

/// The widest field a format here can have (float64's mantissa has 52 bits).
const MAX_BITS: u32 = 64;

fn layouts(data: &ChartData) -> Result<Vec<Layout>, Cause> {
    let list = data.list("bit_layouts", MAX_ROWS)?;
    let field = |i: usize, key: &str| -> Result<u32, Cause> {
        let at = format!("bit_layouts.{i}.{key}");
        let bits = data.number(&at)?;
        if bits.fract() == 0.0 && (0.0..=MAX_BITS as f64).contains(&bits) {
            Ok(bits as u32)
        } else {
            Err(data.bad(
                &at,
                format!("expected a bit count, a whole number from 0 to {MAX_BITS}; found {bits}"),
            ))
        }
    };
    (0..list.len())
        .map(|i| {
            let name = data.value(&format!("bit_layouts.{i}.name"))?;
            let name = name
                .as_str()
                .ok_or_else(|| data.bad(&format!("bit_layouts.{i}.name"), "expected a string".into()))?;
            Ok(Layout {
                index: i,
                name: name.to_string(),
                sign: field(i, "sign")?,
                exponent: field(i, "exponent")?,
                mantissa: field(i, "mantissa")?,
            })
        })
        .collect()
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// One drawing of a rows chart: for a desktop's column, each name left of its row, or for a
/// phone's (`fit`), each name above its row and the text a little smaller, drawn at the size it
/// is shown.
struct RowFit {
    narrow: bool,
}

impl RowFit {
    /// The band row `y`'s bars fill: lower in the narrow drawing, under the row's name.
    fn band(&self, y: f64) -> (f64, f64) {
        if self.narrow {
            (y - 0.4, y + 0.1)
        } else {
            (y - 0.32, y + 0.32)
        }
    }

    /// The size of a text the wide drawing gives `wide` px.
    fn px(&self, wide: u32) -> u32 {
        super::fit::text_px(self.narrow, wide)
    }
}

/// A chart with one horizontal row per name, the first at the top: row `i` is centred on
/// y = `names.len() - 1 - i`. `draw` adds the rows' shapes and their hover targets, once for each
/// drawing (`RowFit`).
fn rows_chart(
    names: &[String],
    x: std::ops::Range<f64>,
    x_desc: &str,
    x_labels: usize,
    x_fmt: &dyn Fn(&f64) -> String,
    label: &str,
    draw: impl Fn(&mut Chart<'_, '_>, &mut Vec<Hover>, &RowFit) -> Result<(), Cause>,
) -> Result<String, Cause> {
    let n = names.len();
    let y_name = |y: &f64| {
        let row = (n as f64 - 1.0 - y).round();
        if (row - (n as f64 - 1.0 - y)).abs() < 1e-6 && row >= 0.0 {
            names.get(row as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let one = |fit: RowFit| {
        let (width, row, names_area) = if fit.narrow {
            (super::fit::NARROW_WIDTH, 64, 10)
        } else {
            (760, 48, 120)
        };
        svg(width, 80 + row * n as u32, label, |root, hovers| {
            let mut chart = drawing(
                ChartBuilder::on(root)
                    .margin(if fit.narrow { 8 } else { 14 })
                    .x_label_area_size(50)
                    .y_label_area_size(names_area)
                    .build_cartesian_2d(x.clone(), -0.5..n as f64 - 0.5),
            )?;
            drawing(
                chart
                    .configure_mesh()
                    .disable_y_mesh()
                    .x_desc(x_desc)
                    .x_labels(if fit.narrow { x_labels.div_ceil(2) } else { x_labels })
                    .y_labels(if fit.narrow { 0 } else { n })
                    .x_label_formatter(x_fmt)
                    .y_label_formatter(&y_name)
                    .label_style(text_style(fit.px(15)))
                    .axis_desc_style(text_style(fit.px(16)))
                    .axis_style(FG.mix(0.6))
                    .bold_line_style(FG.mix(0.12))
                    .light_line_style(FG.mix(0.0))
                    .draw(),
            )?;
            if fit.narrow {
                let above = text_style(fit.px(15)).pos(Pos::new(HPos::Left, VPos::Top));
                let at = |i: usize| (x.start, row_y(i, n) + 0.44);
                let texts = names
                    .iter()
                    .enumerate()
                    .map(|(i, name)| Text::new(name.clone(), at(i), above.clone()));
                drawing(chart.draw_series(texts))?;
            }
            draw(&mut chart, hovers, &fit)
        })
    };
    Ok(super::fit::pair(
        &one(RowFit { narrow: false })?,
        &one(RowFit { narrow: true })?,
        &[],
    ))
}

/// The y of row `i` of `n` (first row on top).
fn row_y(i: usize, n: usize) -> f64 {
    (n - 1 - i) as f64
}

/// One row per format, most significant bit first, each field a bar with faint lines between
/// its bits.
pub fn bit_layouts(data: &ChartData) -> Result<String, Cause> {
    let rows = layouts(data)?;
    let widest = rows.iter().map(|r| r.sign + r.exponent + r.mantissa).max().unwrap_or(0);
    if rows.is_empty() || widest == 0 {
        return Err(data.bad("bit_layouts", "no formats recorded".into()));
    }
    let names: Vec<String> = rows.iter().map(|r| r.name.clone()).collect();
    let x_fmt = |x: &f64| format!("{x:.0}");
    let n = rows.len();
    rows_chart(
        &names,
        0.0..widest as f64,
        "bit position, most significant first (bits)",
        widest as usize / 4 + 1,
        &x_fmt,
        "bit layouts of the floating-point formats",
        |chart, hovers, fit| {
            // Pixels a bit takes in this drawing, for which field names fit inside their bars.
            let bit_px = chart.backend_coord(&(1.0, 0.0)).0 - chart.backend_coord(&(0.0, 0.0)).0;
            for (i, row) in rows.iter().enumerate() {
                let (lo, hi) = fit.band(row_y(i, n));
                let fields = [
                    ("sign", "s", row.sign, SIGN),
                    ("exponent", "e", row.exponent, EXPONENT),
                    ("mantissa", "m", row.mantissa, MANTISSA),
                ];
                let mut at = 0u32;
                for (long, short, bits, color) in fields {
                    if bits == 0 {
                        continue;
                    }
                    let (x0, x1) = (at as f64, (at + bits) as f64);
                    drawing(chart.draw_series(std::iter::once(Rectangle::new([(x0, lo), (x1, hi)], color.filled()))))?;
                    hovers.push(Hover {
                        shape: Shape::Bar {
                            from: chart.backend_coord(&(x0, lo)),
                            to: chart.backend_coord(&(x1, hi)),
                        },
                        title: hover::title(
                            &format!("{} {long} bits", row.name),
                            f64::from(bits),
                            Unit::Count,
                            &data.decided(&format!("bit_layouts.{}.{long}", row.index)),
                        ),
                    });
                    let separators = (at + 1..at + bits)
                        .map(|b| PathElement::new(vec![(b as f64, lo), (b as f64, hi)], WHITE.mix(0.55)));
                    drawing(chart.draw_series(separators))?;
                    // The name where it fits (a character about half the text's size wide), else a letter.
                    let text_px = fit.px(15);
                    let fits = bits as i32 * bit_px >= (long.len() as i32 + 3) * (text_px as i32 * 8 / 15);
                    let label = if fits {
                        format!("{long} {bits}")
                    } else {
                        format!("{short}{bits}")
                    };
                    let style = ("sans-serif", text_px)
                        .into_font()
                        .color(&WHITE)
                        .pos(Pos::new(HPos::Center, VPos::Center));
                    drawing(chart.draw_series(std::iter::once(Text::new(
                        label,
                        ((x0 + x1) / 2.0, (lo + hi) / 2.0),
                        style,
                    ))))?;
                    at += bits;
                }
            }
            Ok(())
        },
    )
}

/// A format's range: smallest subnormal, smallest normal and largest finite magnitude.
struct Range {
    name: String,
    subnormal: f64,
    normal: f64,
    max: f64,
}

fn ranges(data: &ChartData) -> Result<Vec<Range>, Cause> {
    let names: Vec<String> = data
        .names()
        .filter(|n| n.ends_with("_info"))
        .map(String::from)
        .collect();
    if names.is_empty() {
        return Err(data.bad("*_info", "no format tables recorded".into()));
    }
    if names.len() > MAX_ROWS {
        return Err(data.bad(
            "*_info",
            format!(
                "{} format tables, more than the {MAX_ROWS} rows a chart draws",
                names.len()
            ),
        ));
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
            return Err(data.bad(
                &format!("{}_info", r.name),
                "smallest_subnormal ≤ smallest_normal < max must hold".into(),
            ));
        }
    }
    let lo = rows
        .iter()
        .map(|r| r.subnormal.log10())
        .fold(f64::INFINITY, f64::min)
        .floor()
        - 2.0;
    let hi = rows
        .iter()
        .map(|r| r.max.log10())
        .fold(f64::NEG_INFINITY, f64::max)
        .ceil()
        + 12.0;
    let names: Vec<String> = rows.iter().map(|r| r.name.clone()).collect();
    let x_fmt = |v: &f64| tick(*v, Scale::Log10);
    let n = rows.len();
    rows_chart(
        &names,
        lo..hi,
        "magnitude, log scale (unitless)",
        10,
        &x_fmt,
        "dynamic ranges of the floating-point formats",
        |chart, hovers, fit| {
            let top_x = chart.x_range().end;
            for (i, r) in rows.iter().enumerate() {
                let (lo, hi) = fit.band(row_y(i, n));
                let color = PALETTE[i % PALETTE.len()];
                let bar = |from: f64, to: f64, style: ShapeStyle| {
                    Rectangle::new([(from.log10(), lo), (to.log10(), hi)], style)
                };
                drawing(chart.draw_series([
                    bar(r.subnormal, r.normal, color.mix(0.35).filled()),
                    bar(r.normal, r.max, color.filled()),
                ]))?;
                // Each bar says its ends and what decided them.
                let info = data.decided(&format!("{}_info", r.name));
                let spans = [
                    ("subnormal numbers", r.subnormal, r.normal),
                    ("normal numbers", r.normal, r.max),
                ];
                for (what, from, to) in spans {
                    hovers.push(Hover {
                        shape: Shape::Bar {
                            from: chart.backend_coord(&(from.log10(), lo)),
                            to: chart.backend_coord(&(to.log10(), hi)),
                        },
                        title: format!(
                            "{}, {what}: from {} to {} (unitless)\n{info}",
                            r.name,
                            hover::shown(from, Unit::None),
                            hover::shown(to, Unit::None),
                        ),
                    });
                }
                let label = format!(
                    "max {}",
                    format_value(&json_number(r.max), Unit::None, Format::Auto).unwrap_or_default()
                );
                // Right of the bar; in the narrow drawing, where that leaves too little room,
                // at the row's right end above it, across from its name.
                let (at, pos) = match fit.narrow {
                    true => ((top_x, hi + 0.34), Pos::new(HPos::Right, VPos::Top)),
                    false => (
                        (r.max.log10() + 1.0, (lo + hi) / 2.0),
                        Pos::new(HPos::Left, VPos::Center),
                    ),
                };
                let style = text_style(fit.px(14)).pos(pos);
                drawing(chart.draw_series(std::iter::once(Text::new(label, at, style))))?;
            }
            let probe = PROBE.log10();
            let top = n as f64 - 0.5;
            drawing(chart.draw_series(std::iter::once(PathElement::new(
                vec![(probe, -0.5), (probe, top)],
                FG.mix(0.7).stroke_width(1),
            ))))?;
            let style = text_style(fit.px(14)).pos(Pos::new(HPos::Left, VPos::Top));
            drawing(chart.draw_series(std::iter::once(Text::new(
                "1e-8, the probe value",
                (probe + 0.8, top),
                style,
            ))))?;
            Ok(())
        },
    )
}
