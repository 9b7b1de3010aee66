//! `tensor_storage`'s figure: a matrix over its flat storage, with the row and column steps.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{COLUMN_STEP, ELEMENT, ROW_STEP, arc, boxed, count, counts, head, short, text};
use crate::chart::ChartData;
use crate::chart::hover::{self, Hover, Shape};
use crate::chart::plot::{FG, drawing, svg};
use crate::problem::Cause;
use crate::trace::Unit;
use crate::trace::number_from_json;

use super::{MAX_SIDE, MAX_STORAGE};

/// What the strides figure draws: x as indexed, its strides, the storage they imply, and the
/// element whose steps it shows.
struct Strides {
    grid: Vec<Vec<f64>>,
    stride: [usize; 2],
    /// Position by position: the element of x stored there (`None`: a gap no element uses).
    storage: Vec<Option<(usize, usize)>>,
    element: [usize; 2],
}

impl Strides {
    /// Where x[r, c] sits: a fresh tensor starts at position 0 of its storage, as the section's
    /// own `index` assumes.
    fn position(&self, r: usize, c: usize) -> usize {
        r * self.stride[0] + c * self.stride[1]
    }
}

fn read_strides(data: &ChartData) -> Result<Strides, Cause> {
    let rows = data.list("x", MAX_SIDE)?.len();
    let mut grid: Vec<Vec<f64>> = Vec::new();
    for i in 0..rows {
        let row = data.list(&format!("x.{i}"), MAX_SIDE)?;
        let numbers: Vec<f64> = row.iter().filter_map(number_from_json).collect();
        if numbers.len() != row.len() || grid.first().is_some_and(|first| first.len() != numbers.len()) {
            return Err(data.bad("x", "expected a matrix: rows of numbers, all of one length".into()));
        }
        grid.push(numbers);
    }
    if grid.is_empty() || grid[0].is_empty() {
        return Err(data.bad("x", "expected a matrix with at least one element".into()));
    }
    let stride: [usize; 2] = counts(data, "stride", MAX_STORAGE)?
        .try_into()
        .map_err(|s: Vec<usize>| data.bad("stride", format!("x is a matrix, so 2 strides; found {}", s.len())))?;
    let mut s = Strides {
        grid,
        stride,
        storage: Vec::new(),
        element: [0, 0],
    };
    let (rows, cols) = (s.grid.len(), s.grid[0].len());
    let last = s.position(rows - 1, cols - 1);
    if last >= MAX_STORAGE {
        return Err(data.bad(
            "stride",
            format!(
                "strides {stride:?} spread x over {} positions, more than the {MAX_STORAGE} the figure draws",
                last + 1
            ),
        ));
    }
    s.storage = vec![None; last + 1];
    for r in 0..rows {
        for c in 0..cols {
            let p = s.position(r, c);
            if let Some((r0, c0)) = s.storage[p] {
                return Err(data.bad(
                    "stride",
                    format!("strides {stride:?} put x[{r0}, {c0}] and x[{r}, {c}] at the same position {p}"),
                ));
            }
            s.storage[p] = Some((r, c));
        }
    }
    // The element the section looked up two ways: by (row, column) and by storage position.
    let index = count(data, "index", MAX_STORAGE)?;
    let [r, c] = match s.storage.get(index).copied().flatten() {
        Some((r, c)) => [r, c],
        None => {
            return Err(data.bad(
                "index",
                format!("no element of x sits at position {index} with strides {stride:?}"),
            ));
        }
    };
    s.element = [r, c];
    for name in ["element", "element_at_index"] {
        let value = data.number(name)?;
        if value != s.grid[r][c] {
            return Err(data.bad(
                name,
                format!(
                    "strides {stride:?} put x[{r}, {c}] = {} at position {index}, but the trace holds {}",
                    short(s.grid[r][c]),
                    short(value)
                ),
            ));
        }
    }
    Ok(s)
}

/// `tensor_storage`: the matrix as indexed, the flat storage under it, and the steps one row and
/// one column take in storage from the recorded element.
pub fn tensor_strides(data: &ChartData) -> Result<String, Cause> {
    let s = read_strides(data)?;
    let wide = draw(data, &s, false)?;
    let narrow = draw(data, &s, true)?;
    Ok(crate::chart::fit::pair(&wide, &narrow, &[]))
}

/// One drawing of the figure. Wide: the notes right of the matrix, the storage rows labelled on
/// the left. Narrow (a phone's column, `chart::fit`): the notes under the matrix, the storage
/// across the whole width with a line saying what its rows are, text at the narrow size.
fn draw(data: &ChartData, s: &Strides, narrow: bool) -> Result<String, Cause> {
    let (rows, cols) = (s.grid.len(), s.grid[0].len());
    let [r, c] = s.element;
    let width = if narrow {
        crate::chart::fit::NARROW_WIDTH as i32
    } else {
        760
    };
    let px = |wide: u32| crate::chart::fit::text_px(narrow, wide);
    let cell = 36;
    let n = s.storage.len();
    // Room on the left for the row labels ("position", "x index"), which the narrow drawing
    // says in a line above the storage instead.
    let row_left = if narrow { 8 } else { 76 };
    let slot = ((width - row_left - 12) / n as i32).min(42);
    let (grid_top, grid_left) = (34, if narrow { 8 } else { 40 });
    let grid_bottom = grid_top + cell * rows as i32;
    // The notes: right of the matrix, or under it.
    let (notes_left, notes_top) = match narrow {
        true => (grid_left, grid_bottom + 14),
        false => (grid_left + cell * cols as i32 + 40, grid_top + 8),
    };
    let notes_bottom = notes_top + 4 * 24;
    let store_top = if narrow { notes_bottom + 104 } else { grid_bottom + 96 };
    let height = (store_top + 100) as u32;
    let label = format!("a {rows}×{cols} matrix over its flat storage, strides {:?}", s.stride);
    svg(width as u32, height, &label, |area, hovers| {
        let muted = FG.mix(0.7);
        text(
            area,
            "x, as indexed",
            (grid_left, grid_top - 10),
            px(15),
            (HPos::Left, VPos::Bottom),
            muted,
        )?;
        let center = |row: usize, col: usize| {
            (
                grid_left + cell * col as i32 + cell / 2,
                grid_top + cell * row as i32 + cell / 2,
            )
        };
        for (i, line) in s.grid.iter().enumerate() {
            for (j, v) in line.iter().enumerate() {
                let (x0, y0) = (grid_left + cell * j as i32, grid_top + cell * i as i32);
                let fill = match (i, j) {
                    _ if (i, j) == (r, c) => ELEMENT.mix(0.45),
                    _ if (i, j) == (r, c + 1) => COLUMN_STEP.mix(0.4),
                    _ if (i, j) == (r + 1, c) => ROW_STEP.mix(0.4),
                    _ => FG.mix(0.04),
                };
                boxed(area, (x0, y0), (x0 + cell, y0 + cell), fill)?;
                hovers.push(Hover {
                    shape: Shape::Bar {
                        from: (x0, y0),
                        to: (x0 + cell, y0 + cell),
                    },
                    title: hover::title(
                        &format!("x[{i}, {j}], at storage position {}", s.position(i, j)),
                        *v,
                        Unit::None,
                        &data.decided(&format!("x.{i}.{j}")),
                    ),
                });
                text(
                    area,
                    &short(*v),
                    center(i, j),
                    px(15),
                    (HPos::Center, VPos::Center),
                    FG.mix(1.0),
                )?;
            }
        }
        // Steps in the matrix, with what they cost in storage.
        let (ex, ey) = center(r, c);
        let mut line_y = notes_top;
        let mut note = |s: String, color: RGBAColor| -> Result<(), Cause> {
            text(area, &s, (notes_left, line_y), px(15), (HPos::Left, VPos::Top), color)?;
            line_y += 24;
            Ok(())
        };
        note(format!("shape {rows} × {cols}, strides {:?}", s.stride), FG.mix(1.0))?;
        note(
            format!(
                "x[{r}, {c}] is at position {r}·{} + {c}·{} = {}",
                s.stride[0],
                s.stride[1],
                s.position(r, c)
            ),
            ELEMENT.mix(1.0),
        )?;
        if c + 1 < cols {
            note(
                format!("one column right: {:+} in storage", s.stride[1]),
                COLUMN_STEP.mix(1.0),
            )?;
            drawing(area.draw(&PathElement::new(
                vec![(ex + 8, ey + 11), (ex + cell - 8, ey + 11)],
                COLUMN_STEP.stroke_width(2),
            )))?;
            head(area, (ex, ey + 11), (ex + cell - 4, ey + 11), COLUMN_STEP)?;
        }
        if r + 1 < rows {
            note(format!("one row down: {:+} in storage", s.stride[0]), ROW_STEP.mix(1.0))?;
            drawing(area.draw(&PathElement::new(
                vec![(ex - 11, ey + 8), (ex - 11, ey + cell - 8)],
                ROW_STEP.stroke_width(2),
            )))?;
            head(area, (ex - 11, ey), (ex - 11, ey + cell - 4), ROW_STEP)?;
        }

        // The storage: one row of positions, each holding one number.
        text(
            area,
            "flat storage (positions counted in elements)",
            (row_left, store_top - if narrow { 86 } else { 62 }),
            px(15),
            (HPos::Left, VPos::Bottom),
            muted,
        )?;
        let slot_center = |p: usize| row_left + slot * p as i32 + slot / 2;
        // Positions and indices are told apart from the values by colour, not size: smaller text
        // would fall below 10 px where the chart scales down on a phone.
        for (p, owner) in s.storage.iter().enumerate() {
            let x0 = row_left + slot * p as i32;
            let fill = match *owner {
                Some(at) if at == (r, c) => ELEMENT.mix(0.45),
                Some(at) if at == (r, c + 1) => COLUMN_STEP.mix(0.4),
                Some(at) if at == (r + 1, c) => ROW_STEP.mix(0.4),
                Some((i, _)) if i % 2 == 0 => FG.mix(0.04),
                Some(_) => FG.mix(0.12),
                None => FG.mix(0.0),
            };
            boxed(area, (x0, store_top), (x0 + slot, store_top + 34), fill)?;
            // A position holds an element of x (its value is x's, so is its key) or nothing.
            let title = match *owner {
                Some((i, j)) => hover::title(
                    &format!(
                        "storage position {p}, x[{i}, {j}] = {i}·{} + {j}·{}",
                        s.stride[0], s.stride[1]
                    ),
                    s.grid[i][j],
                    Unit::None,
                    &data.decided(&format!("x.{i}.{j}")),
                ),
                None => format!(
                    "storage position {p}: no element of x lives here\nthe strides {}",
                    data.decided("stride")
                ),
            };
            hovers.push(Hover {
                shape: Shape::Bar {
                    from: (x0, store_top),
                    to: (x0 + slot, store_top + 34),
                },
                title,
            });
            let shown = owner.map_or("·".to_string(), |(i, j)| short(s.grid[i][j]));
            text(
                area,
                &shown,
                (slot_center(p), store_top + 17),
                px(14),
                (HPos::Center, VPos::Center),
                FG.mix(1.0),
            )?;
            text(
                area,
                &p.to_string(),
                (slot_center(p), store_top + 40),
                px(14),
                (HPos::Center, VPos::Top),
                muted,
            )?;
            if let Some((i, j)) = owner {
                text(
                    area,
                    &format!("{i},{j}"),
                    (slot_center(p), store_top + 58),
                    px(14),
                    (HPos::Center, VPos::Top),
                    FG.mix(0.5),
                )?;
            }
        }
        if narrow {
            let rows_said = "each box: its value; under it, its position and x's index";
            text(
                area,
                rows_said,
                (row_left, store_top - 66),
                px(14),
                (HPos::Left, VPos::Bottom),
                muted,
            )?;
        } else {
            for (name, depth, colour) in [("position", 40, muted), ("x index", 58, FG.mix(0.5))] {
                let at = (row_left - 6, store_top + depth);
                text(area, name, at, 14, (HPos::Right, VPos::Top), colour)?;
            }
        }
        // The same two steps, as jumps along the storage.
        let from = (slot_center(s.position(r, c)), store_top - 2);
        if c + 1 < cols {
            let to = (slot_center(s.position(r, c + 1)), store_top - 2);
            arc(area, from, to, 18 + 2 * (s.stride[1] as i32).min(8), COLUMN_STEP)?;
        }
        if r + 1 < rows {
            let to = (slot_center(s.position(r + 1, c)), store_top - 2);
            arc(area, from, to, 18 + 6 * (s.stride[0] as i32).min(8), ROW_STEP)?;
        }
        Ok(())
    })
}
