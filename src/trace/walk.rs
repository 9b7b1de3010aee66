//! Walking into a recorded value: `lecture get tensors_memory.fp8_e4m3_info.max` and the book's
//! `{{value tensors_memory.fp8_e4m3_info.max}}` follow the same path the same way.

use serde_json::Value;

/// Follows `path` into `value`: object keys by name, list items by index. A key that itself
/// contains dots (a parameter name such as `layers.0.weight`) is matched by joining steps; when
/// several joins name keys, the first (shortest) that leads somewhere wins.
pub fn walk<'v>(value: &'v Value, path: &[String]) -> Result<&'v Value, (String, String)> {
    let Some(step) = path.first() else { return Ok(value) };
    match value {
        Value::Object(map) => {
            let mut first_error = None;
            // Joined steps longer than every key match none: stop there, so a path of a million
            // steps costs a million steps, not a million joins of up to a million steps each.
            let longest = map.keys().map(String::len).max().unwrap_or(0);
            let mut joined_len = 0;
            for end in 1..=path.len() {
                joined_len += path[end - 1].len() + usize::from(end > 1);
                if joined_len > longest {
                    break;
                }
                if let Some(next) = map.get(&path[..end].join(".")) {
                    match walk(next, &path[end..]) {
                        Ok(found) => return Ok(found),
                        Err(e) => first_error = first_error.or(Some(e)),
                    }
                }
            }
            Err(first_error.unwrap_or_else(|| {
                let keys = || map.keys().map(String::as_str).filter(|k| *k != crate::summary::KEY);
                let what = match crate::summary::statistics_of(value) {
                    // A tensor kept as a summary: say so, and which indices it kept.
                    Some(stats) => format!(
                        "a summary of a tensor of {} elements, which keeps indices {} here and its statistics under `{}`",
                        stats.get("elements").map_or_else(|| "?".into(), Value::to_string),
                        keys().collect::<Vec<_>>().join(", "),
                        crate::summary::KEY
                    ),
                    None => format!("keys: {}", map.keys().map(String::as_str).collect::<Vec<_>>().join(", ")),
                };
                (step.clone(), what)
            }))
        }
        Value::Array(items) => {
            // Digits only: `usize`'s parser would take `+1` as 1.
            let digits = !step.is_empty() && step.bytes().all(|b| b.is_ascii_digit());
            let item = step.parse::<usize>().ok().filter(|_| digits).and_then(|i| items.get(i));
            let item = item.ok_or_else(|| {
                (
                    step.clone(),
                    format!("a list of {} item(s), indexed from 0", items.len()),
                )
            })?;
            walk(item, &path[1..])
        }
        other => Err((step.clone(), format!("`{other}` has no parts"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(path: &str) -> Vec<String> {
        path.split('.').map(String::from).collect()
    }

    #[test]
    fn walks_objects_lists_and_dotted_keys() {
        let v =
            serde_json::json!({"max": 448, "rows": [[1, 2], [3, 4]], "layers.0.weight": [[5, 6]], "layers": {"n": 7}});
        assert_eq!(walk(&v, &steps("max")), Ok(&serde_json::json!(448)));
        assert_eq!(walk(&v, &steps("rows.1.0")), Ok(&serde_json::json!(3)));
        assert_eq!(walk(&v, &steps("layers.0.weight.0.1")), Ok(&serde_json::json!(6)));
        assert_eq!(walk(&v, &steps("layers.n")), Ok(&serde_json::json!(7)));
        let (step, what) = walk(&v, &steps("rows.2")).unwrap_err();
        assert_eq!(
            (step.as_str(), what.as_str()),
            ("2", "a list of 2 item(s), indexed from 0")
        );
        assert_eq!(walk(&v, &steps("nope")).unwrap_err().0, "nope");
        assert!(walk(&v, &steps("max.x")).unwrap_err().1.contains("has no parts"));
        // An index is digits: `+1` is no index, though Rust's integer parser would take it.
        assert!(walk(&v, &steps("rows.+1")).unwrap_err().1.contains("indexed from 0"));
        // A path of a million steps is answered at its first step (joining every prefix of it at
        // every level would not end in a test's time).
        let long: Vec<String> = std::iter::repeat_n("x".to_string(), 1_000_000).collect();
        assert_eq!(walk(&v, &long).unwrap_err().0, "x");
        let mut max_then_long = steps("max");
        max_then_long.extend(long);
        assert!(walk(&v, &max_then_long).unwrap_err().1.contains("has no parts"));
    }
}
