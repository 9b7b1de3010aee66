//! `tensor_matmul`'s figure: a batch of sequences times one weight matrix.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{COLUMN_STEP, ELEMENT, ROW_STEP, boxed, count, counts, head, text};
use crate::chart::ChartData;
use crate::chart::hover::{Hover, Shape};
use crate::chart::plot::{FG, drawing, svg, text_style};
use crate::problem::Cause;

use super::MAX_GRID;

/// `tensor_matmul`: a batch of sequences times one weight matrix. The grids show which products
/// happen (one per batch element and position); below, one of them drawn to scale.
///
/// The shapes come from what the section recorded of y: `batched_y_shape` gives the batch,
/// sequence, rows and output size; the inner size D is the value of every entry, since x and w
/// are all ones and each entry of y sums D products of ones (`y_0_0`, and `batched_y_max` =
/// `batched_y_min` say that every entry agrees).
pub fn batch_sequence(data: &ChartData) -> Result<String, Cause> {
    let y = counts(data, "batched_y_shape", 1 << 20)?;
    let (b, l, m, k) = match *y.as_slice() {
        [b, l, k] => (b, l, 1, k),
        [b, l, m, k] => (b, l, m, k),
        _ => {
            return Err(data.bad(
                "batched_y_shape",
                format!("expected (batch, sequence, …, outputs) with 3 or 4 sizes, found {y:?}"),
            ));
        }
    };
    let d = count(data, "y_0_0", 1 << 20)?;
    for name in ["batched_y_max", "batched_y_min"] {
        let v = data.number(name)?;
        if v != d as f64 {
            return Err(data.bad(
                name,
                format!("every entry of y sums the same number of ones ({d}, from y_0_0), but this one is {v}"),
            ));
        }
    }
    if d == 0 {
        return Err(data.bad("y_0_0", "an inner size of zero leaves nothing to multiply".into()));
    }
    let mut x = y.clone();
    if let Some(last) = x.last_mut() {
        *last = d;
    }
    let w = vec![d, k];
    for (name, n) in [("batch", b), ("sequence", l)] {
        if !(1..=MAX_GRID).contains(&n) {
            return Err(data.bad(
                "batched_y_shape",
                format!("{name} size {n}: the figure draws 1 to {MAX_GRID}"),
            ));
        }
    }
    if [m, k].contains(&0) {
        return Err(data.bad("batched_y_shape", "a size of zero leaves nothing to draw".into()));
    }
    let dims = |v: &[usize]| v.iter().map(usize::to_string).collect::<Vec<_>>().join(" × ");
    let label = format!("x {} @ w {} = y {}", dims(&x), dims(&w), dims(&y));
    let draw = |narrow: bool| -> Result<String, Cause> {
        // Wide: x left of y, the product arrow across. Narrow (a phone's column, `chart::fit`): x
        // above y, the arrow down, text at the narrow size.
        let font = |wide: u32| crate::chart::fit::text_px(narrow, wide);
        let width: i32 = if narrow {
            crate::chart::fit::NARROW_WIDTH as i32
        } else {
            760
        };
        let cell = ((300 / l as i32).min(120 / b as i32)).clamp(6, if narrow { 28 } else { 30 });
        let gap = (cell / 6).max(2);
        let grid_w = l as i32 * (cell + gap);
        let grid_h = b as i32 * (cell + gap);
        let top = 40;
        let left_x = if narrow { 40 } else { 70 };
        // Where y's grid is: right of x's, or under it.
        let (right_x, y_top) = match narrow {
            true => (left_x, top + grid_h + 112),
            false => (width - 40 - grid_w, top),
        };
        let lower = y_top + grid_h + if narrow { 110 } else { 90 };
        // One product to scale: the longest side gets 160 pixels.
        let unit = 160.0 / m.max(d).max(k) as f64;
        let px = |n: usize| ((n as f64 * unit).round() as i32).max(4);
        let height = (lower + px(m.max(d)) + 60) as u32;
        svg(width as u32, height, &label, |area, hovers| {
            let muted = FG.mix(0.7);
            // Every cell is a (batch, position) pair; y's cells hold m × k entries, each the sum of d
            // products of ones, as recorded.
            let mut grid = |(left, top): (i32, i32), fill: RGBAColor, name: &str, of_y: bool| -> Result<(), Cause> {
                text(
                    area,
                    name,
                    (left, top - 12),
                    font(15),
                    (HPos::Left, VPos::Bottom),
                    FG.mix(1.0),
                )?;
                for i in 0..b {
                    for j in 0..l {
                        let (x0, y0) = (left + j as i32 * (cell + gap), top + i as i32 * (cell + gap));
                        let f = if (i, j) == (0, 0) { ELEMENT.mix(0.55) } else { fill };
                        boxed(area, (x0, y0), (x0 + cell, y0 + cell), f)?;
                        let title = if of_y {
                            format!(
                                "y[{i}, {j}]: a {m} × {k} block, every entry {d} (count of products of ones)\n\
                             the shape {}, the entry {}",
                                data.decided_alone("batched_y_shape"),
                                data.decided("y_0_0")
                            )
                        } else {
                            format!(
                                "x[{i}, {j}]: a {m} × {d} block, times w gives y[{i}, {j}]\nthe shape {}",
                                data.decided("batched_y_shape")
                            )
                        };
                        hovers.push(Hover {
                            shape: Shape::Bar {
                                from: (x0, y0),
                                to: (x0 + cell, y0 + cell),
                            },
                            title,
                        });
                    }
                }
                text(
                    area,
                    &format!("sequence position (L = {l})"),
                    (left + grid_w / 2, top + grid_h + 8),
                    font(13),
                    (HPos::Center, VPos::Top),
                    muted,
                )?;
                Ok(())
            };
            grid((left_x, top), COLUMN_STEP.mix(0.25), &format!("x: {}", dims(&x)), false)?;
            grid(
                (right_x, y_top),
                ROW_STEP.mix(0.25),
                &format!("y = x @ w: {}", dims(&y)),
                true,
            )?;
            let vertical = text_style(font(13))
                .color(&muted)
                .pos(Pos::new(HPos::Center, VPos::Bottom))
                .transform(FontTransform::Rotate270);
            for grid_top in if narrow { vec![top, y_top] } else { vec![top] } {
                drawing(area.draw(&Text::new(
                    format!("batch (B = {b})"),
                    (left_x - 8, grid_top + grid_h / 2),
                    vertical.clone(),
                )))?;
            }
            // The product: across between the grids, or down, its words beside the arrow.
            let (mid_from, mid_to) = match narrow {
                true => ((left_x + 20, top + grid_h + 28), (left_x + 20, y_top - 38)),
                false => (
                    (left_x + grid_w + 16, top + grid_h / 2),
                    (right_x - 16, top + grid_h / 2),
                ),
            };
            drawing(area.draw(&PathElement::new(vec![mid_from, mid_to], FG.mix(0.6).stroke_width(2))))?;
            head(area, mid_from, mid_to, RGBColor(0x80, 0x80, 0x80))?;
            let (said_at, said_pos, more_at, more_pos) = match narrow {
                true => {
                    let (x, y) = (mid_from.0 + 14, (mid_from.1 + mid_to.1) / 2);
                    (
                        (x, y - 2),
                        (HPos::Left, VPos::Bottom),
                        (x, y + 2),
                        (HPos::Left, VPos::Top),
                    )
                }
                false => {
                    let mid = (mid_from.0 + mid_to.0) / 2;
                    (
                        (mid, mid_from.1 - 8),
                        (HPos::Center, VPos::Bottom),
                        (mid, mid_from.1 + 8),
                        (HPos::Center, VPos::Top),
                    )
                }
            };
            text(
                area,
                &format!("@ w ({})", dims(&w)),
                said_at,
                font(14),
                said_pos,
                FG.mix(1.0),
            )?;
            text(area, &format!("{} products", b * l), more_at, font(13), more_pos, muted)?;

            // One of them, to scale.
            let example = "each product, e.g. x[0, 0] @ w = y[0, 0], ";
            let scale = format!("to scale ({m} × {d} times {d} × {k}):");
            if narrow {
                // Two lines: one would pass the column's edge.
                let at = |dy: i32| (8, lower - dy);
                text(area, example, at(52), font(14), (HPos::Left, VPos::Bottom), FG.mix(1.0))?;
                text(area, &scale, at(32), font(14), (HPos::Left, VPos::Bottom), FG.mix(1.0))?;
            } else {
                let caption = format!("{example}{scale}");
                text(
                    area,
                    &caption,
                    (left_x, lower - 30),
                    14,
                    (HPos::Left, VPos::Bottom),
                    FG.mix(1.0),
                )?;
            }
            let mut at = left_x;
            let mut block =
                |rows: usize, cols: usize, fill: RGBAColor, name: String, after: &str| -> Result<(), Cause> {
                    let (w, h) = (px(cols), px(rows));
                    boxed(area, (at, lower), (at + w, lower + h), fill)?;
                    text(
                        area,
                        &name,
                        (at + w / 2, lower + h + 6),
                        font(13),
                        (HPos::Center, VPos::Top),
                        muted,
                    )?;
                    at += w + 34;
                    if !after.is_empty() {
                        text(
                            area,
                            after,
                            (at - 17, lower + h.min(px(m)) / 2),
                            20,
                            (HPos::Center, VPos::Center),
                            FG.mix(1.0),
                        )?;
                    }
                    Ok(())
                };
            block(m, d, ELEMENT.mix(0.55), format!("{m} × {d}"), "@")?;
            block(d, k, FG.mix(0.2), format!("{d} × {k}"), "=")?;
            block(m, k, ROW_STEP.mix(0.55), format!("{m} × {k}"), "")?;
            Ok(())
        })
    };
    Ok(crate::chart::fit::pair(&draw(false)?, &draw(true)?, &[]))
}
