//! Drawing helpers shared by the charts: an SVG canvas whose foreground follows the page's text
//! colour, a palette for light and dark themes, and a general x–y line chart.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::fit::{Frame, Key};
use super::hover::{self, Hover, Shape};
use super::{MAX_POINTS, MAX_SERIES};
use crate::format::{Format, format_value};
use crate::problem::Cause;
use crate::trace::{Unit, json_number};

/// Stand-in colour for "the page's text colour": replaced by `currentColor` in the SVG text.
pub const FG: RGBColor = RGBColor(0x01, 0x02, 0x03);
const FG_HEX: &str = "#010203";

/// Mid-tone colours that keep contrast on white and on mdbook's dark themes.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(0x3d, 0x8f, 0xd1), // blue
    RGBColor(0xe0, 0x7b, 0x39), // orange
    RGBColor(0x3a, 0xa6, 0x5b), // green
    RGBColor(0xc8, 0x4f, 0x8a), // magenta
    RGBColor(0x9b, 0x7b, 0xd9), // violet
    RGBColor(0xc9, 0xa2, 0x27), // ochre
    RGBColor(0x2a, 0x9d, 0x9f), // teal
    RGBColor(0xd6, 0x45, 0x45), // red
    RGBColor(0x8c, 0x6d, 0x4f), // brown
    RGBColor(0x80, 0x80, 0x80), // grey
];

pub const FONT: &str = "sans-serif";

/// The most SVG one chart may become: a backstop behind the limits on its data.
const MAX_SVG_BYTES: usize = 4 << 20;

pub fn text_style(size: u32) -> TextStyle<'static> {
    (FONT, size).into_font().color(&FG)
}

fn chart_error(e: impl std::fmt::Display) -> Cause {
    Cause::Chart {
        id: String::new(),
        msg: e.to_string(),
    }
}

/// The least size, in CSS pixels, a chart's text may be drawn at when the SVG scales down.
pub const READABLE_TEXT_PX: f64 = 10.0;

/// The smallest `font-size` plotters wrote into `svg` (it scales the sizes it is given).
fn smallest_font(svg: &str) -> Option<f64> {
    svg.split("font-size=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next()?.parse::<f64>().ok())
        .filter(|size| *size > 0.0)
        .min_by(f64::total_cmp)
}

/// The chart inside a box that scrolls sideways: on a narrow screen the SVG stops shrinking at its
/// minimum width (see [`svg`]) and the reader scrolls the chart instead of the page.
pub fn scroll_box(svg: &str) -> String {
    format!("<div class=\"lecture-chart-scroll\">{svg}</div>")
}

/// Draws on a `width`×`height` SVG canvas and returns the SVG as one line of text, sized by the
/// page and coloured by the page's theme. It scales down on narrow screens, but no further than
/// keeps its smallest text at [`READABLE_TEXT_PX`]: below that width it scrolls in its
/// [`scroll_box`].
///
/// `draw` lists what a reader can point at (every point and bar, see [`hover`]); a chart with
/// nothing to point at is an error, so no chart is left without hover text.
pub fn svg(
    width: u32,
    height: u32,
    label: &str,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>, &mut Vec<Hover>) -> Result<(), Cause>,
) -> Result<String, Cause> {
    let mut out = String::new();
    let mut hovers = Vec::new();
    {
        let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        draw(&root, &mut hovers)?;
        root.present().map_err(chart_error)?;
    }
    if hovers.is_empty() {
        return Err(chart_error("nothing in the chart carries hover text (a point, a bar)"));
    }
    let out = hover::append(&out, &hovers).ok_or_else(|| chart_error("unexpected SVG from plotters"))?;
    // One line, so the markdown HTML block it sits in is not ended by a line break (markdown
    // also ends lines at a carriage return, which a label from a trace may hold).
    let out = out.replace(['\n', '\r'], "").replace(FG_HEX, "currentColor");
    let size = format!("width=\"{width}\" height=\"{height}\"");
    let min_width = smallest_font(&out).map_or(0.0, |px| f64::from(width) * READABLE_TEXT_PX / px);
    let attrs = format!(
        "class=\"lecture-chart-svg\" style=\"min-width: {}px\" role=\"img\" aria-label=\"{}\"",
        min_width.ceil().min(f64::from(width)),
        crate::html::escape(label)
    );
    if !out.contains(&size) {
        return Err(chart_error("unexpected SVG header from plotters"));
    }
    if out.len() > MAX_SVG_BYTES {
        return Err(chart_error(format!(
            "{} bytes of SVG, more than the {MAX_SVG_BYTES} a chart may take (labels too long?)",
            out.len()
        )));
    }
    Ok(out.replacen(&size, &attrs, 1))
}

/// Maps plotters' drawing errors into a chart cause.
pub fn drawing<T, E: std::fmt::Display>(r: Result<T, E>) -> Result<T, Cause> {
    r.map_err(chart_error)
}

/// The least distance, in pixels along x, between the hover targets of a curve drawn without
/// markers (a 300-step loss curve): closer targets than this cannot be told apart by a pointer
/// and would only make the page heavier.
const TARGET_SPACING: i32 = 8;

/// How an axis maps numbers to positions. Log axes span whole powers of their base and are
/// labelled at them: powers of two suit sizes, powers of ten suit rates and losses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log10,
    Log2,
}

impl Scale {
    fn base(self) -> Option<f64> {
        match self {
            Scale::Linear => None,
            Scale::Log10 => Some(10.0),
            Scale::Log2 => Some(2.0),
        }
    }
}

/// An axis of a line chart. The label names the quantity and its unit; `name` and `unit` say a
/// point's coordinate in its hover text (`n = 1024`, `5.1e10 FLOP/s`).
#[derive(Debug, Clone)]
pub struct Axis {
    pub label: String,
    pub scale: Scale,
    pub name: String,
    pub unit: Unit,
}

/// One named line of (x, y) points. Non-finite points, and on a log axis non-positive ones, are
/// left out of the drawing (a chapter that shows a diverged run says so in prose).
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed and without markers: a formula or reference to compare with, not a measurement.
    pub reference: bool,
    /// What decided each point's y, as its hover says it (`ChartData::decided`), one per point;
    /// or one for the whole line when its points follow from the same values (a roof).
    pub decided: Vec<String>,
}

impl Series {
    pub fn measured(name: impl Into<String>, points: Vec<(f64, f64)>, decided: Vec<String>) -> Series {
        Series {
            name: name.into(),
            points,
            reference: false,
            decided,
        }
    }

    /// What decided point `i`.
    fn decided_at(&self, i: usize) -> Option<&str> {
        match self.decided.as_slice() {
            [whole] => Some(whole),
            each => each.get(i).map(String::as_str),
        }
    }
}

/// A horizontal line at `y` with a label, e.g. a datasheet peak, and what decided it.
#[derive(Debug, Clone)]
pub struct Reference {
    pub label: String,
    pub y: f64,
    pub decided: String,
}

pub struct LineChart {
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub references: Vec<Reference>,
    /// A dot at every point (off for long curves such as losses per step).
    pub markers: bool,
    /// Where the legend goes: a corner the curves leave free.
    pub legend: SeriesLabelPosition,
    pub width: u32,
    pub height: u32,
}

impl LineChart {
    pub fn new(x: Axis, y: Axis) -> LineChart {
        LineChart {
            x,
            y,
            series: Vec::new(),
            references: Vec::new(),
            markers: true,
            legend: SeriesLabelPosition::UpperLeft,
            width: 720,
            height: 400,
        }
    }
}

/// A value's position on the axis: itself, or its logarithm (non-positive values have none).
fn to_axis(v: f64, scale: Scale) -> Option<f64> {
    match scale.base() {
        _ if !v.is_finite() => None,
        Some(base) if v > 0.0 => Some(v.log(base)),
        Some(_) => None,
        None => Some(v),
    }
}

/// A tick label: on a log axis the power it stands for (`1e-8`, `0.1`, `1000`; `64`, `128`),
/// otherwise the number with four significant digits.
pub fn tick(v: f64, scale: Scale) -> String {
    let x = match scale.base() {
        Some(_) if v.fract() == 0.0 && scale == Scale::Log10 && !(-2.0..=4.0).contains(&v) => return format!("1e{v}"),
        Some(base) => base.powf(v),
        None => v,
    };
    format_value(&json_number(x), Unit::None, Format::Auto).unwrap_or_default()
}

/// A whole power of two on a log₂ axis of bytes, in binary units (`4 KiB`, `1 GiB`): the sizes a
/// memory hierarchy is read in.
fn bytes_tick(v: f64, scale: Scale, unit: Unit) -> Option<String> {
    if scale != Scale::Log2 || unit != Unit::Bytes || v.fract() != 0.0 || !(0.0..70.0).contains(&v) {
        return None;
    }
    let power = v as u32;
    let (name, shift) = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        .iter()
        .zip((0..).step_by(10))
        .take_while(|&(_, shift)| shift <= power)
        .last()?;
    Some(format!("{} {name}", 1u64 << (power - shift)))
}

/// The axis range: padded on a linear axis; whole powers on a log axis, so ticks fall on them.
fn axis_range(lo: f64, hi: f64, scale: Scale) -> std::ops::Range<f64> {
    if scale != Scale::Linear {
        let (lo, hi) = (lo.floor(), hi.ceil());
        return lo..if hi > lo { hi } else { lo + 1.0 };
    }
    if lo == hi {
        return lo - 1.0..hi + 1.0;
    }
    // Halves first: the difference of the largest floats overflows.
    let pad = (hi / 2.0 - lo / 2.0) * 0.1;
    lo - pad..hi + pad
}

/// On a log axis one label per power (plotters then picks whole powers), fewer when the range is
/// wide; `frame` says how many it has room for.
fn label_count(range: &std::ops::Range<f64>, scale: Scale, frame: &Frame) -> usize {
    if scale == Scale::Linear {
        frame.linear_ticks
    } else {
        ((range.end - range.start).round() as usize + 1).clamp(2, frame.log_ticks)
    }
}

/// Draws a line chart: every series as a line with markers, references as dashed-looking faint
/// lines with their labels, a legend, and axes labelled with their units; twice, for a desktop's
/// column and a phone's (`fit`).
pub fn line_chart(spec: &LineChart) -> Result<String, Cause> {
    let (xl, yl) = (spec.x.scale, spec.y.scale);
    for s in &spec.series {
        if s.decided.len() != 1 && s.decided.len() != s.points.len() {
            return Err(chart_error(format!(
                "series {:?} has {} points and {} hover sources (one per point, or one for the line)",
                s.name,
                s.points.len(),
                s.decided.len()
            )));
        }
    }
    // Each drawn point on the axes, with the point's index in its series (for its hover text).
    let drawn: Vec<Vec<(usize, (f64, f64))>> = spec
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .enumerate()
                .filter_map(|(i, &(x, y))| Some((i, (to_axis(x, xl)?, to_axis(y, yl)?))))
                .collect()
        })
        .collect();
    let series: Vec<(String, Vec<(f64, f64)>)> = spec
        .series
        .iter()
        .zip(&drawn)
        .map(|(s, d)| (s.name.clone(), d.iter().map(|p| p.1).collect()))
        .collect();
    let references: Vec<(&Reference, f64)> = spec
        .references
        .iter()
        .filter_map(|r| Some((r, to_axis(r.y, yl)?)))
        .collect();
    let xs = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let ys = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .chain(references.iter().map(|r| r.1));
    let (x_lo, x_hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    let (y_lo, y_hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    if !x_lo.is_finite() || !y_lo.is_finite() {
        return Err(chart_error("no finite points to draw"));
    }
    let (x_range, y_range) = (axis_range(x_lo, x_hi, xl), axis_range(y_lo, y_hi, yl));
    for range in [&x_range, &y_range] {
        if !(range.start.is_finite() && range.end.is_finite()) {
            return Err(chart_error(format!(
                "the values span a range too wide to draw ({:e} to {:e})",
                range.start, range.end
            )));
        }
    }
    let points: usize = series.iter().map(|(_, p)| p.len()).sum();
    if points > MAX_POINTS || series.len() > MAX_SERIES || references.len() > MAX_SERIES {
        return Err(chart_error(format!(
            "{points} points in {} series and {} reference lines: more than a chart draws \
             ({MAX_POINTS} points, {MAX_SERIES} lines)",
            series.len(),
            references.len()
        )));
    }
    let label = format!("{} against {}", spec.y.label, spec.x.label);
    let draw = |frame: Frame| {
        svg(frame.width, frame.height, &label, |root, hovers| {
            let mut chart = drawing(
                ChartBuilder::on(root)
                    .margin(frame.margin)
                    .margin_right(frame.margin_right)
                    .x_label_area_size(frame.x_label_area)
                    .y_label_area_size(frame.y_label_area)
                    .build_cartesian_2d(x_range.clone(), y_range.clone()),
            )?;
            let x_fmt = |v: &f64| bytes_tick(*v, xl, spec.x.unit).unwrap_or_else(|| tick(*v, xl));
            let y_fmt = |v: &f64| bytes_tick(*v, yl, spec.y.unit).unwrap_or_else(|| tick(*v, yl));
            drawing(
                chart
                    .configure_mesh()
                    .x_desc(spec.x.label.as_str())
                    .y_desc(spec.y.label.as_str())
                    .x_labels(label_count(&x_range, xl, &frame))
                    .y_labels(label_count(&y_range, yl, &frame))
                    .x_label_formatter(&x_fmt)
                    .y_label_formatter(&y_fmt)
                    .label_style(text_style(frame.label_px))
                    .axis_desc_style(text_style(frame.desc_px))
                    .axis_style(FG)
                    .bold_line_style(FG.mix(0.12))
                    .light_line_style(FG.mix(0.04))
                    .draw(),
            )?;
            for (reference, y) in &references {
                let (lo, hi) = (chart.x_range().start, chart.x_range().end);
                drawing(chart.draw_series(std::iter::once(PathElement::new(
                    vec![(lo, *y), (hi, *y)],
                    FG.mix(0.5).stroke_width(1),
                ))))?;
                hovers.push(Hover {
                    shape: Shape::Line {
                        from: chart.backend_coord(&(lo, *y)),
                        to: chart.backend_coord(&(hi, *y)),
                    },
                    title: hover::title(&reference.label, reference.y, spec.y.unit, &reference.decided),
                });
                let label = &reference.label;
                let style = text_style(frame.reference_px).pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Right,
                    plotters::style::text_anchor::VPos::Bottom,
                ));
                drawing(chart.draw_series(std::iter::once(Text::new(label.clone(), (hi, *y), style))))?;
            }
            for (i, ((name, points), spec_series)) in series.iter().zip(&spec.series).enumerate() {
                let color = PALETTE[i % PALETTE.len()];
                if spec_series.reference {
                    let dashed = DashedLineSeries::new(points.iter().copied(), 6, 4, color.stroke_width(2));
                    drawing(chart.draw_series(dashed))?
                        .label(name.clone())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
                    continue;
                }
                drawing(chart.draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2))))?
                    .label(name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
                // The markers are drawn as hover targets (below), which carry their values.
            }
            for ((s, points), i) in spec.series.iter().zip(&drawn).zip(0..) {
                let color = PALETTE[i % PALETTE.len()];
                let marked = spec.markers && !s.reference;
                let mut last: Option<(i32, i32)> = None;
                for (n, &(at, p)) in points.iter().enumerate() {
                    let pixel = chart.backend_coord(&p);
                    // On a curve without markers (a loss per step) points lie closer than a pointer
                    // can pick: one target per TARGET_SPACING pixels along x, each naming its own
                    // point, and always the last point.
                    let crowded = last.is_some_and(|l| (pixel.0 - l.0).abs() < TARGET_SPACING);
                    if !marked && crowded && n + 1 < points.len() {
                        continue;
                    }
                    last = Some(pixel);
                    let (x, y) = s.points[at];
                    let what = format!("{}, {} = {}", s.name, spec.x.name, hover::shown(x, spec.x.unit));
                    hovers.push(Hover {
                        shape: Shape::Dot {
                            at: pixel,
                            r: if marked { 3 } else { 4 },
                            fill: marked.then_some(color),
                        },
                        title: hover::title(&what, y, spec.y.unit, s.decided_at(at).unwrap_or_default()),
                    });
                }
            }
            if !series.is_empty() && frame.legend_inside {
                drawing(
                    chart
                        .configure_series_labels()
                        .position(spec.legend.clone())
                        .label_font(text_style(frame.label_px))
                        .border_style(FG.mix(0.4))
                        .background_style(TRANSPARENT)
                        .draw(),
                )?;
            }
            Ok(())
        })
    };
    let wide = draw(Frame::wide(spec.width, spec.height))?;
    let narrow = draw(Frame::NARROW)?;
    let keys: Vec<Key> = spec
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let c = PALETTE[i % PALETTE.len()];
            Key {
                name: s.name.clone(),
                colour: (c.0, c.1, c.2),
                dashed: s.reference,
            }
        })
        .collect();
    Ok(super::fit::pair(&wide, &narrow, &keys))
}

#[cfg(test)]
mod tests;
