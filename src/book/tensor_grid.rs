//! A recorded tensor of one to three dimensions drawn as a small grid beside the code that
//! recorded it, as the original lecture's viewer draws one: its dtype and shape above it, each
//! number in its own cell with its full value on hover, shaded by sign and size relative to the
//! largest magnitude shown. A large dimension shows its first and last few entries around an
//! ellipsis; a 3-D tensor is a stack of matrices, each labelled with its first index. The trace
//! decides how much there is to draw (`MAX_RECORDED_ELEMENTS`); this decides only what is shown.

use serde_json::Value;

use super::html::escape;
use crate::trace::number_from_json;

/// Entries shown in full along one dimension; longer ones show `CORNER` at each end.
const SHOWN: usize = 8;
const CORNER: usize = 3;

/// The indices of a dimension of `n` that are shown, `None` standing for the ellipsis.
fn shown_indices(n: usize) -> Vec<Option<usize>> {
    if n <= SHOWN {
        return (0..n).map(Some).collect();
    }
    (0..CORNER)
        .map(Some)
        .chain([None])
        .chain((n - CORNER..n).map(Some))
        .collect()
}

/// The element of nested arrays `value` at `index`.
fn at<'a>(value: &'a Value, index: &[usize]) -> Option<&'a Value> {
    index.iter().try_fold(value, |v, &i| v.as_array()?.get(i))
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

/// One cell: the number shortened by `short`, the full value on hover, and a shade from -1 to 1
/// (its value over the largest magnitude shown) as a CSS variable the style sheet colours.
fn cell(value: &Value, largest: f64, short: &dyn Fn(f64) -> String) -> String {
    match number_from_json(value) {
        Some(x) if x.is_finite() && largest > 0.0 => {
            let shade = x / largest;
            let sign = if x < 0.0 {
                "lecture-tensor-neg"
            } else {
                "lecture-tensor-pos"
            };
            format!(
                "<span class=\"{sign}\" style=\"--shade: {:.2}\" title=\"{}\">{}</span>",
                shade.abs(),
                escape(&value.to_string()),
                escape(&short(x))
            )
        }
        Some(x) => format!(
            "<span title=\"{}\">{}</span>",
            escape(&value.to_string()),
            escape(&short(x))
        ),
        None => format!("<span>{}</span>", escape(&value.to_string())),
    }
}

/// One matrix (or a row, for 1-D) of the grid: `rows` × `columns` shown indices under `prefix`.
fn matrix(
    value: &Value,
    prefix: &[usize],
    rows: &[Option<usize>],
    columns: &[Option<usize>],
    largest: f64,
    short: &dyn Fn(f64) -> String,
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
                    at(value, &index).map_or_else(String::new, |v| cell(v, largest, short))
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
pub fn grid(value: &Value, dtype: &str, shape: &[usize], short: &dyn Fn(f64) -> String) -> Option<String> {
    if shape.is_empty() || shape.len() > 3 || !has_shape(value, shape) || shape.contains(&0) {
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
    let shape_text = shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", ");
    let mut html = format!(
        "<span class=\"lecture-tensor\"><span class=\"lecture-tensor-head\">{} [{}]</span><span class=\"lecture-tensor-scroll\">",
        escape(dtype),
        escape(&shape_text)
    );
    match shape.len() {
        1 => html.push_str(&matrix(
            &Value::Array(vec![value.clone()]),
            &[],
            &[Some(0)],
            &column_ix,
            largest,
            short,
        )),
        2 => html.push_str(&matrix(value, &[], &row_ix, &column_ix, largest, short)),
        _ => {
            for s in &stack_ix {
                match s {
                    Some(s) => {
                        html.push_str(&format!("<span class=\"lecture-tensor-index\">[{s}]</span>"));
                        html.push_str(&matrix(value, &[*s], &row_ix, &column_ix, largest, short));
                    }
                    None => html.push_str("<span class=\"lecture-tensor-index\">…</span>"),
                }
            }
        }
    }
    html.push_str("</span></span>");
    Some(html)
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
        let g = grid(&json!([[1.0, -2.0, 3.0], [4.0, 5.0, 6.0]]), "float32", &[2, 3], &short).expect("a grid");
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
        let g = grid(&json!(row), "bfloat16", &[20], &short).expect("a grid");
        // 0, 1, 2, …, 17, 18, 19.
        assert_eq!(cells(&g), 2 * CORNER);
        assert!(g.contains("title=\"2.0\"") && g.contains("title=\"17.0\"") && !g.contains("title=\"10.0\""));
        assert_eq!(g.matches("lecture-tensor-gap").count(), 1);
        assert!(g.contains("repeat(7, auto)"));
    }

    #[test]
    fn a_three_dimensional_tensor_is_a_stack_of_labelled_matrices() {
        let t = json!([[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, 12]]]);
        let g = grid(&t, "int64", &[3, 2, 2], &short).expect("a grid");
        assert_eq!(g.matches("lecture-tensor-index").count(), 3);
        assert!(g.contains(">[2]<"));
        assert_eq!(cells(&g), 12);
    }

    #[test]
    fn scalars_mismatched_shapes_and_four_dimensions_stay_text() {
        assert_eq!(grid(&json!(3.0), "float32", &[], &short), None);
        assert_eq!(grid(&json!([1.0, 2.0]), "float32", &[3], &short), None);
        assert_eq!(grid(&json!([[1.0], [2.0, 3.0]]), "float32", &[2, 1], &short), None);
        assert_eq!(grid(&json!([[[[1.0]]]]), "float32", &[1, 1, 1, 1], &short), None);
        assert_eq!(grid(&json!([]), "float32", &[0], &short), None);
    }

    #[test]
    fn text_from_the_trace_is_escaped() {
        let g = grid(&json!(["<b>", "a\"b"]), "x<y", &[2], &short).expect("a grid");
        assert!(!g.contains("<b>") && g.contains("x&lt;y"), "{g}");
    }
}
