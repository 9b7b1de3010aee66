//! Figures of how tensors are laid out, drawn from the shapes, strides and storage a section
//! recorded: the row and column steps of a matrix over its flat storage (`tensor_storage`), and
//! a batch of sequences multiplied by one weight matrix (`tensor_matmul`). Every number drawn is
//! read from the trace; values that contradict each other fail the build instead of drawing a
//! figure that lies.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

mod batch;
mod machine;
mod strides;

pub use batch::batch_sequence;
pub use machine::cpu_gpu;
pub use strides::tensor_strides;

use super::ChartData;
use super::plot::{FG, PALETTE, drawing, text_style};
use crate::problem::Cause;

pub(super) type Area<'a, 'b> = DrawingArea<SVGBackend<'b>, Shift>;

pub(super) const ELEMENT: RGBColor = PALETTE[0];
pub(super) const COLUMN_STEP: RGBColor = PALETTE[1];
pub(super) const ROW_STEP: RGBColor = PALETTE[2];

/// The most storage positions the strides figure draws in one row.
pub const MAX_STORAGE: usize = 32;
/// The most rows or columns of the matrix it draws.
pub const MAX_SIDE: usize = 8;
/// The most batch elements or sequence positions the batch figure draws.
pub const MAX_GRID: usize = 32;

pub(super) fn text(
    area: &Area,
    s: &str,
    at: (i32, i32),
    size: u32,
    anchor: (HPos, VPos),
    color: RGBAColor,
) -> Result<(), Cause> {
    let style = text_style(size).color(&color).pos(Pos::new(anchor.0, anchor.1));
    drawing(area.draw(&Text::new(s.to_string(), at, style)))
}

pub(super) fn boxed(area: &Area, from: (i32, i32), to: (i32, i32), fill: RGBAColor) -> Result<(), Cause> {
    drawing(area.draw(&Rectangle::new([from, to], fill.filled())))?;
    drawing(area.draw(&Rectangle::new([from, to], FG.mix(0.55).stroke_width(1))))
}

/// A number as a cell shows it: whole numbers without a point.
pub(super) fn short(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e6 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// An arrow from `a` to `b` along a path bulging `lift` pixels up (negative: down), with its head.
pub(super) fn arc(area: &Area, a: (i32, i32), b: (i32, i32), lift: i32, color: RGBColor) -> Result<(), Cause> {
    let steps = 24;
    let points: Vec<(i32, i32)> = (0..=steps)
        .map(|i| {
            let t = i as f64 / steps as f64;
            let x = a.0 as f64 + (b.0 - a.0) as f64 * t;
            let y = a.1 as f64 + (b.1 - a.1) as f64 * t - lift as f64 * 4.0 * t * (1.0 - t);
            (x.round() as i32, y.round() as i32)
        })
        .collect();
    drawing(area.draw(&PathElement::new(points.clone(), color.stroke_width(2))))?;
    head(area, points[steps - 2], b, color)
}

/// A filled arrow head at `to`, pointing away from `from`.
pub(super) fn head(area: &Area, from: (i32, i32), to: (i32, i32), color: RGBColor) -> Result<(), Cause> {
    let (dx, dy) = ((to.0 - from.0) as f64, (to.1 - from.1) as f64);
    let len = (dx * dx + dy * dy).sqrt().max(1e-9);
    let (ux, uy) = (dx / len, dy / len);
    let (size, half) = (9.0, 4.5);
    let base = (to.0 as f64 - ux * size, to.1 as f64 - uy * size);
    let corner = |s: f64| {
        (
            (base.0 - uy * half * s).round() as i32,
            (base.1 + ux * half * s).round() as i32,
        )
    };
    drawing(area.draw(&Polygon::new(vec![to, corner(1.0), corner(-1.0)], color.filled())))
}

/// A whole number from `0` to `max` at `name`.
pub(super) fn count(data: &ChartData, name: &str, max: usize) -> Result<usize, Cause> {
    let x = data.number(name)?;
    if x.fract() == 0.0 && (0.0..=max as f64).contains(&x) {
        Ok(x as usize)
    } else {
        Err(data.bad(name, format!("expected a whole number from 0 to {max}, found {x}")))
    }
}

/// A shape or index list: whole numbers, each at most `max`.
pub(super) fn counts(data: &ChartData, name: &str, max: usize) -> Result<Vec<usize>, Cause> {
    let n = data.list(name, 8)?.len();
    (0..n).map(|i| count(data, &format!("{name}.{i}"), max)).collect()
}
