//! A recorded tensor too large to keep whole (more than `MAX_RECORDED_ELEMENTS` elements), kept
//! as a summary: the elements a grid shows of it (the first and last few along each dimension)
//! and statistics over all of them. The kept elements sit under their own indices, as object
//! keys, so `lecture get custom_model.y.0` and `{{value custom_model.y.0}}` walk to element 0 of
//! a summary as they do of a whole tensor, and an index that was not kept is missing, as one past
//! the end of a shorter tensor is. The statistics sit under `summary`.
//!
//! ```text
//! {"0": 0.12, "1": -0.4, "2": 0.9, "99997": 1.1, "99998": 0.3, "99999": -0.2,
//!  "summary": {"elements": 100000, "min": -3.9, "max": 4.1, "mean": 0.002, "std": 1.0, "non_finite": 0}}
//! ```

use serde_json::{Map, Value};

use crate::json::json_number;

/// The largest tensor recorded element by element; a larger one is recorded as a summary.
pub const MAX_RECORDED_ELEMENTS: usize = 4096;

/// The key of a summary's statistics, beside the kept elements.
pub const KEY: &str = "summary";

/// Entries kept (and shown) whole along one dimension; a longer one keeps `CORNER` at each end.
pub const SHOWN: usize = 8;
pub const CORNER: usize = 3;

/// The indices of a dimension of `n` that a summary keeps and a grid shows: all of them up to
/// `SHOWN`, else the first and last `CORNER`.
pub fn kept(n: usize) -> Vec<usize> {
    if n <= SHOWN {
        return (0..n).collect();
    }
    (0..CORNER).chain(n - CORNER..n).collect()
}

/// `kept(n)` with `None` where indices were skipped: the grid's ellipsis.
pub fn shown(n: usize) -> Vec<Option<usize>> {
    let mut out = Vec::new();
    let mut next = 0;
    for i in kept(n) {
        if i != next {
            out.push(None);
        }
        out.push(Some(i));
        next = i + 1;
    }
    out
}

/// The summary of a tensor of `shape` whose elements, in row-major order, are `flat`; `leaf`
/// writes one element as the trace keeps it (an integer dtype's as an integer). Statistics are
/// over the finite elements (`non_finite` counts the others; with none finite they are null).
/// Where the kept corners of many dimensions would themselves pass the limit, only the
/// statistics are kept.
pub fn summarise(shape: &[usize], flat: &[f64], leaf: &dyn Fn(f64) -> Value) -> Value {
    let corners: usize = shape.iter().map(|&n| kept(n).len()).product();
    let mut top = if corners <= MAX_RECORDED_ELEMENTS && flat.len() == shape.iter().product::<usize>() {
        match nest(shape, flat, leaf) {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    } else {
        Map::new()
    };
    top.insert(KEY.into(), Value::Object(statistics(flat)));
    Value::Object(top)
}

/// The kept elements of `flat` (row-major, of `shape`) as objects keyed by index.
fn nest(shape: &[usize], flat: &[f64], leaf: &dyn Fn(f64) -> Value) -> Value {
    match shape.split_first() {
        None => flat.first().map_or(Value::Null, |&x| leaf(x)),
        Some((&n, rest)) => {
            let chunk: usize = rest.iter().product();
            let map = kept(n)
                .into_iter()
                .map(|i| (i.to_string(), nest(rest, &flat[i * chunk..(i + 1) * chunk], leaf)))
                .collect();
            Value::Object(map)
        }
    }
}

/// Count, extremes, mean and standard deviation (population) of the finite elements.
fn statistics(flat: &[f64]) -> Map<String, Value> {
    let finite: Vec<f64> = flat.iter().copied().filter(|x| x.is_finite()).collect();
    let n = finite.len() as f64;
    let number = |x: Option<f64>| x.map_or(Value::Null, json_number);
    let mean = (n > 0.0).then(|| finite.iter().sum::<f64>() / n);
    let std = mean.map(|m| (finite.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n).sqrt());
    let mut map = Map::new();
    map.insert("elements".into(), Value::from(flat.len()));
    map.insert("min".into(), number(finite.iter().copied().reduce(f64::min)));
    map.insert("max".into(), number(finite.iter().copied().reduce(f64::max)));
    map.insert("mean".into(), number(mean));
    map.insert("std".into(), number(std));
    map.insert("non_finite".into(), Value::from(flat.len() - finite.len()));
    map
}

/// A summary's statistics, where `value` is a summary.
pub fn statistics_of(value: &Value) -> Option<&Map<String, Value>> {
    value.as_object()?.get(KEY)?.as_object()
}

/// A summary's statistics in words, each number written by `number` ("–" where there is none):
/// `min 0, max 4999, mean 2500, std 1443`, and how many elements are not finite where any are.
pub fn statistics_words(stats: &Map<String, Value>, number: &dyn Fn(f64) -> String) -> String {
    let said = |key: &str| {
        stats
            .get(key)
            .and_then(crate::json::number_from_json)
            .map_or("–".to_string(), number)
    };
    let non_finite = match stats.get("non_finite").and_then(Value::as_u64) {
        Some(n) if n > 0 => format!(", {n} not finite"),
        _ => String::new(),
    };
    format!(
        "min {}, max {}, mean {}, std {}{non_finite}",
        said("min"),
        said("max"),
        said("mean"),
        said("std")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::walk;
    use serde_json::json;

    fn steps(path: &str) -> Vec<String> {
        path.split('.').map(String::from).collect()
    }

    #[test]
    fn a_long_row_keeps_its_corners_and_its_statistics() {
        let flat: Vec<f64> = (0..10_000).map(f64::from).collect();
        let s = summarise(&[10_000], &flat, &json_number);
        for (i, want) in [(0, 0.0), (2, 2.0), (9_997, 9_997.0), (9_999, 9_999.0)] {
            assert_eq!(walk(&s, &steps(&i.to_string())), Ok(&json!(want)), "{i}");
        }
        // Index 3 was not kept: missing, as one past the end of a shorter tensor is.
        assert!(walk(&s, &steps("3")).is_err());
        let stats = statistics_of(&s).expect("a summary");
        assert_eq!(stats["elements"], 10_000);
        assert_eq!(stats["min"], json!(0.0));
        assert_eq!(stats["max"], json!(9_999.0));
        assert_eq!(stats["mean"], json!(4_999.5));
        // The population deviation of 0…n−1 is √((n²−1)/12).
        let std = stats["std"].as_f64().expect("a number");
        assert!((std - ((1e8f64 - 1.0) / 12.0).sqrt()).abs() < 1e-6, "{std}");
        assert_eq!(walk(&s, &steps("summary.elements")), Ok(&json!(10_000)));
    }

    #[test]
    fn a_matrix_keeps_the_cells_a_grid_shows_and_counts_what_is_not_finite() {
        // 10 × 3: rows 0, 1, 2, 7, 8, 9 and every column; element (r, c) is 10·r + c.
        let mut flat: Vec<f64> = (0..10)
            .flat_map(|r| (0..3).map(move |c| f64::from(10 * r + c)))
            .collect();
        flat[4] = f64::NAN;
        let s = summarise(&[10, 3], &flat, &|x| Value::from(x as i64));
        assert_eq!(walk(&s, &steps("8.2")), Ok(&json!(82)));
        assert!(walk(&s, &steps("5.0")).is_err());
        let stats = statistics_of(&s).expect("a summary");
        assert_eq!(
            (stats["non_finite"].clone(), stats["max"].clone()),
            (json!(1), json!(92.0))
        );
        assert_eq!(shown(10), [Some(0), Some(1), Some(2), None, Some(7), Some(8), Some(9)]);
        assert_eq!(shown(3), [Some(0), Some(1), Some(2)]);
    }

    #[test]
    fn corners_past_the_limit_leave_the_statistics_alone() {
        // Five dimensions of 9 keep 6⁵ = 7776 corners, more than a trace keeps of one tensor.
        let flat = vec![1.0; 9usize.pow(5)];
        let s = summarise(&[9; 5], &flat, &json_number);
        assert_eq!(s.as_object().map(Map::len), Some(1));
        assert_eq!(statistics_of(&s).expect("a summary")["std"], json!(0.0));
        // Nothing finite: no statistics to give, said as null.
        let s = summarise(&[2], &[f64::NAN, f64::INFINITY], &json_number);
        assert_eq!(statistics_of(&s).expect("a summary")["mean"], Value::Null);
        assert!(statistics_of(&json!([1, 2])).is_none());
    }
}
