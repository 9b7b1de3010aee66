//! A recorded tensor of one to three dimensions drawn as a small grid beside the code that
//! recorded it, as the original lecture's viewer draws one: its dtype and shape above it, each
//! number in its own cell with its full value on hover, shaded by sign and size relative to the
//! largest magnitude shown. A large dimension shows its first and last few entries around an
//! ellipsis; a 3-D tensor is a stack of matrices, each labelled with its first index. The trace
//! decides how much there is to draw: a tensor of more than `MAX_RECORDED_ELEMENTS` is kept as a
//! summary of exactly the entries shown here, drawn the same way with its statistics below.

use serde_json::Value;

use super::html::escape;
use crate::trace::{Layout, number_from_json, summary};

/// The indices of a dimension of `n` that are shown, `None` standing for the ellipsis: the ones a
/// summary keeps of a tensor too large to record whole.
fn shown_indices(n: usize) -> Vec<Option<usize>> {
    summary::shown(n)
}

/// The element of `value` at `index`: nested arrays, or a summary's objects keyed by index.
fn at<'a>(value: &'a Value, index: &[usize]) -> Option<&'a Value> {
    index.iter().try_fold(value, |v, &i| match v {
        Value::Object(map) => map.get(&i.to_string()),
        _ => v.as_array()?.get(i),
    })
}

/// Whether `value` is nested arrays of exactly `shape`.
fn has_shape(value: &Value, shape: &[usize]) -> bool {
    match shape.split_first() {
        None => !value.is_array(),
        Some((&n, rest)) => value
            .as_array()
            .is_some_and(|items| items.len() == n && items.iter().all(|v| has_shape(v, rest))),
    }
}

/// Where a cell's element is: its index, as the reader writes it, and its position in storage.
struct Place {
    index: String,
    position: usize,
}

/// A recorded tensor's layout (`trace::Layout`), read for its cells.
trait Positions {
    fn place(&self, index: &[usize]) -> Option<Place>;
    fn is_fresh(&self, shape: &[usize]) -> bool;
}

impl Positions for Layout {
    /// Element `index`'s position in storage: the offset plus each index times its stride.
    fn place(&self, index: &[usize]) -> Option<Place> {
        (self.strides.len() == index.len()).then(|| Place {
            index: format!(
                "[{}]",
                index.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
            ),
            position: self.offset + index.iter().zip(&self.strides).map(|(i, s)| i * s).sum::<usize>(),
        })
    }

    /// Whether it is the row-major layout a fresh tensor of `shape` has, from position 0.
    fn is_fresh(&self, shape: &[usize]) -> bool {
        let mut want = 1;
        let mut row_major = vec![0; shape.len()];
        for (d, &n) in shape.iter().enumerate().rev() {
            row_major[d] = want;
            want *= n;
        }
        self.offset == 0 && self.strides == row_major
    }
}

/// One cell: the number shortened by `short`, the full value on hover, and a shade from -1 to 1
/// (its value over the largest magnitude shown) as a CSS variable the style sheet colours.
fn cell(value: &Value, largest: f64, short: &dyn Fn(f64) -> String, place: Option<&Place>) -> String {
    let title = match place {
        Some(p) => format!("{value}\n{} at storage position {}", p.index, p.position),
        None => value.to_string(),
    };
    let storage = place.map_or_else(String::new, |p| format!(" data-storage=\"{}\"", p.position));
    match number_from_json(value) {
        Some(x) if x.is_finite() && largest > 0.0 => {
            let shade = x / largest;
            let sign = if x < 0.0 {
                "lecture-tensor-neg"
            } else {
                "lecture-tensor-pos"
            };
            format!(
                "<span class=\"{sign}\" style=\"--shade: {:.2}\" title=\"{}\"{storage}>{}</span>",
                shade.abs(),
                escape(&title),
                escape(&short(x))
            )
        }
        Some(x) => format!(
            "<span title=\"{}\"{storage}>{}</span>",
            escape(&title),
            escape(&short(x))
        ),
        None => format!("<span{storage}>{}</span>", escape(&value.to_string())),
    }
}

/// How every cell of a grid is drawn: shaded against the largest magnitude shown, its number
/// written by `short`, its storage position from `layout` where the trace has it.
struct Cells<'a> {
    largest: f64,
    short: &'a dyn Fn(f64) -> String,
    layout: Option<&'a Layout>,
}

/// One matrix (or a row, for 1-D) of the grid: `rows` × `columns` shown indices under `prefix`.
fn matrix(
    value: &Value,
    prefix: &[usize],
    rows: &[Option<usize>],
    columns: &[Option<usize>],
    how: &Cells,
    one_row: bool,
) -> String {
    let mut html = format!(
        "<span class=\"lecture-tensor-grid\" style=\"grid-template-columns: repeat({}, auto)\">",
        columns.len()
    );
    for row in rows {
        for column in columns {
            html.push_str(&match (row, column) {
                (Some(r), Some(c)) => {
                    let index: Vec<usize> = prefix.iter().copied().chain([*r, *c]).collect();
                    // A 1-D tensor is drawn as one row of a matrix: its own index is the column.
                    let own = if one_row { &index[1..] } else { &index[..] };
                    let place = how.layout.and_then(|l| l.place(own));
                    at(value, &index).map_or_else(String::new, |v| cell(v, how.largest, how.short, place.as_ref()))
                }
                _ => "<span class=\"lecture-tensor-gap\">…</span>".to_string(),
            });
        }
    }
    html.push_str("</span>");
    html
}

/// The grid for a recorded tensor, or `None` where it is not one to draw: no dimensions (a
/// scalar reads better as text), more than three, or values that are not nested arrays of its
/// shape. `short` writes a number as the cell shows it.
/// With the tensor's `layout`, each cell's hover also gives its storage position (and the head
/// the strides, where they are not a fresh tensor's): the storage order, as the strides chart
/// draws it.
pub fn grid(
    value: &Value,
    dtype: &str,
    shape: &[usize],
    layout: Option<&Layout>,
    short: &dyn Fn(f64) -> String,
) -> Option<String> {
    let stats = summary::statistics_of(value);
    if shape.is_empty() || shape.len() > 3 || shape.contains(&0) || !(stats.is_some() || has_shape(value, shape)) {
        return None;
    }
    // As a stack of matrices: 1-D is one row, 2-D one matrix.
    let (stack, rows, columns) = match *shape {
        [n] => (1, 1, n),
        [r, c] => (1, r, c),
        [s, r, c] => (s, r, c),
        _ => return None,
    };
    let (row_ix, column_ix) = (shown_indices(rows), shown_indices(columns));
    let stack_ix = if shape.len() == 3 {
        shown_indices(stack)
    } else {
        vec![None]
    };
    // The largest magnitude among the cells shown sets the shading.
    let index_of = |s: Option<usize>, r: usize, c: usize| -> Vec<usize> {
        match shape.len() {
            1 => vec![c],
            2 => vec![r, c],
            _ => vec![s.unwrap_or(0), r, c],
        }
    };
    let mut largest = 0.0f64;
    for &s in &stack_ix {
        for &r in row_ix.iter().flatten() {
            for &c in column_ix.iter().flatten() {
                if let Some(x) = at(value, &index_of(s, r, c))
                    .and_then(number_from_json)
                    .filter(|x| x.is_finite())
                {
                    largest = largest.max(x.abs());
                }
            }
        }
    }
    let list = |xs: &[usize]| xs.iter().map(usize::to_string).collect::<Vec<_>>().join(", ");
    let layout = layout.filter(|l| l.strides.len() == shape.len());
    // The strides in view where they are the lesson: a view's, not a fresh tensor's.
    let strides = match layout {
        Some(l) if !l.is_fresh(shape) => format!(
            " <span class=\"lecture-tensor-strides\">strides ({}){}</span>",
            escape(&list(&l.strides)),
            if l.offset == 0 {
                String::new()
            } else {
                format!(", offset {}", l.offset)
            }
        ),
        _ => String::new(),
    };
    let how = Cells { largest, short, layout };
    let mut html = format!(
        "<span class=\"lecture-tensor\"><span class=\"lecture-tensor-head\">{} [{}]{strides}</span><span class=\"lecture-tensor-scroll\">",
        escape(dtype),
        escape(&list(shape))
    );
    match shape.len() {
        1 => html.push_str(&matrix(
            &Value::Array(vec![value.clone()]),
            &[],
            &[Some(0)],
            &column_ix,
            &how,
            true,
        )),
        2 => html.push_str(&matrix(value, &[], &row_ix, &column_ix, &how, false)),
        _ => {
            for s in &stack_ix {
                match s {
                    Some(s) => {
                        html.push_str(&format!("<span class=\"lecture-tensor-index\">[{s}]</span>"));
                        html.push_str(&matrix(value, &[*s], &row_ix, &column_ix, &how, false));
                    }
                    None => html.push_str("<span class=\"lecture-tensor-index\">…</span>"),
                }
            }
        }
    }
    html.push_str("</span>");
    if let Some(stats) = stats {
        html.push_str(&statistics_line(stats, short));
    }
    html.push_str("</span>");
    Some(html)
}

/// Below a summary's grid: that it is one, and its statistics over every element.
fn statistics_line(stats: &serde_json::Map<String, Value>, short: &dyn Fn(f64) -> String) -> String {
    let elements = stats
        .get("elements")
        .and_then(number_from_json)
        .map_or("?".into(), short);
    format!(
        "<span class=\"lecture-tensor-summary\">a summary: {} elements, too many to record each; {}</span>",
        escape(&elements),
        escape(&summary::statistics_words(stats, short))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn short(x: f64) -> String {
        format!("{x}")
    }

    fn cells(html: &str) -> usize {
        html.matches("title=").count()
    }

    #[test]
    fn a_matrix_shows_every_entry_with_its_dtype_shape_and_shade() {
        let g = grid(
            &json!([[1.0, -2.0, 3.0], [4.0, 5.0, 6.0]]),
            "float32",
            &[2, 3],
            None,
            &short,
        )
        .expect("a grid");
        assert!(g.contains("float32 [2, 3]"), "{g}");
        assert_eq!(cells(&g), 6);
        assert!(g.contains("repeat(3, auto)"));
        // -2 is a third of the largest magnitude, 6, and shaded as negative.
        assert!(
            g.contains("class=\"lecture-tensor-neg\" style=\"--shade: 0.33\" title=\"-2.0\">-2<"),
            "{g}"
        );
        assert!(g.contains("style=\"--shade: 1.00\" title=\"6.0\">6<"), "{g}");
    }

    #[test]
    fn large_dimensions_show_corners_around_an_ellipsis() {
        let row: Vec<f64> = (0..20).map(f64::from).collect();
        let g = grid(&json!(row), "bfloat16", &[20], None, &short).expect("a grid");
        // 0, 1, 2, …, 17, 18, 19.
        assert_eq!(cells(&g), 2 * summary::CORNER);
        assert!(g.contains("title=\"2.0\"") && g.contains("title=\"17.0\"") && !g.contains("title=\"10.0\""));
        assert_eq!(g.matches("lecture-tensor-gap").count(), 1);
        assert!(g.contains("repeat(7, auto)"));
    }

    #[test]
    fn a_three_dimensional_tensor_is_a_stack_of_labelled_matrices() {
        let t = json!([[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]]]);
        let g = grid(&t, "int64", &[3, 2, 2], None, &short).expect("a grid");
        assert_eq!(g.matches("lecture-tensor-index").count(), 3);
        assert!(g.contains(">[2]<"));
        assert_eq!(cells(&g), 12);
    }

    #[test]
    fn scalars_mismatched_shapes_and_four_dimensions_stay_text() {
        assert_eq!(grid(&json!(3.0), "float32", &[], None, &short), None);
        assert_eq!(grid(&json!([1.0, 2.0]), "float32", &[3], None, &short), None);
        assert_eq!(
            grid(&json!([[1.0], [2.0, 3.0]]), "float32", &[2, 1], None, &short),
            None
        );
        assert_eq!(grid(&json!([[[[1.0]]]]), "float32", &[1, 1, 1, 1], None, &short), None);
        assert_eq!(grid(&json!([]), "float32", &[0], None, &short), None);
    }

    #[test]
    fn a_summary_draws_the_same_corners_with_its_statistics() {
        // A 20 × 10 matrix kept as a summary, beside the same matrix whole: the same cells.
        let flat: Vec<f64> = (0..200).map(f64::from).collect();
        let whole: Vec<Vec<f64>> = flat.chunks(10).map(<[f64]>::to_vec).collect();
        let kept = summary::summarise(&[20, 10], &flat, &crate::trace::json_number);
        let g = grid(&kept, "float32", &[20, 10], None, &short).expect("a grid");
        let w = grid(&json!(whole), "float32", &[20, 10], None, &short).expect("a grid");
        assert_eq!(cells(&g), 36);
        assert!(g.starts_with(&w[..w.len() - "</span>".len()]), "{g}\n{w}");
        assert!(
            g.contains("a summary: 200 elements") && g.contains("max 199") && g.contains("mean 99.5"),
            "{g}"
        );
        // A 1-D one too, its corners 0, 1, 2 and 9997, 9998, 9999.
        let flat: Vec<f64> = (0..10_000).map(f64::from).collect();
        let kept = summary::summarise(&[10_000], &flat, &crate::trace::json_number);
        let g = grid(&kept, "float32", &[10_000], None, &short).expect("a grid");
        assert!(g.contains("title=\"9997.0\"") && g.contains("title=\"2.0\""), "{g}");
        assert_eq!(cells(&g), 6);
    }

    #[test]
    fn text_from_the_trace_is_escaped() {
        let g = grid(&json!(["<b>", "a\"b"]), "x<y", &[2], None, &short).expect("a grid");
        assert!(!g.contains("<b>") && g.contains("x&lt;y"), "{g}");
    }

    #[test]
    fn a_view_shows_its_strides_and_each_cell_its_storage_position() {
        // The transpose of a 2 × 3 matrix: 3 × 2, strides (1, 3), each element where it was.
        let t = json!([[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]);
        let layout = Layout {
            strides: vec![1, 3],
            offset: 0,
        };
        let g = grid(&t, "float32", &[3, 2], Some(&layout), &short).expect("a grid");
        assert!(g.contains("strides (1, 3)</span>"), "{g}");
        // Element [2, 1] is 5.0, at 2·1 + 1·3 = 5 in storage: the value is its own position.
        assert!(
            g.contains("title=\"5.0&#10;[2, 1] at storage position 5\" data-storage=\"5\""),
            "{g}"
        );
        for k in 0..6 {
            assert!(
                g.contains(&format!("title=\"{k}.0&#10;")) && g.contains(&format!("data-storage=\"{k}\"")),
                "{g}"
            );
        }
        // A fresh tensor's strides are no lesson: only the hover has its positions; an offset is
        // named, and a 1-D tensor's position comes from its own index.
        let fresh = Layout {
            strides: vec![2, 1],
            offset: 0,
        };
        let g = grid(
            &json!([[0.0, 1.0], [2.0, 3.0]]),
            "float32",
            &[2, 2],
            Some(&fresh),
            &short,
        )
        .expect("a grid");
        assert!(
            !g.contains("strides") && g.contains("[1, 0] at storage position 2"),
            "{g}"
        );
        let row = Layout {
            strides: vec![1],
            offset: 4,
        };
        let g = grid(&json!([4.0, 5.0]), "float32", &[2], Some(&row), &short).expect("a grid");
        assert!(
            g.contains("strides (1), offset 4") && g.contains("[1] at storage position 5"),
            "{g}"
        );
    }
}
