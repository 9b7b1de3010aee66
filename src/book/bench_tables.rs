//! The Devices chapter's benchmark tables: `bench cpu-matmul --json` results kept beside the
//! traces (`trace/bench/<trace name>.json`), one table per kind of CPU measured: our matrix
//! products against numpy's and PyTorch's, timed in the same run. Every ratio is computed here
//! from the medians the file holds. A table that cannot be read fails the build with its file
//! named; a folder without tables shows nothing.

use std::path::Path;

use serde_json::Value;

use super::html::escape;
use super::problem::Cause;

/// Bytes a benchmark table may have (one is about 12 KB).
const MAX_BYTES: u64 = 1 << 20;

/// The folder of benchmark tables for the traces in `lecture_dir` (`trace/lecture_02`).
fn folder(lecture_dir: &Path) -> Option<std::path::PathBuf> {
    Some(lecture_dir.parent()?.join("bench"))
}

/// GFLOP/s of `column` in `row`: the shape's FLOPs over the median.
fn rate(row: &Value, column: &str) -> Option<f64> {
    let flop = 2.0 * row["m"].as_f64()? * row["k"].as_f64()? * row["n"].as_f64()?;
    let median = row[column]["timing"]["median_s"].as_f64().filter(|&s| s > 0.0)?;
    Some(flop / median / 1e9)
}

fn cell(x: Option<f64>) -> String {
    x.map_or("not timed".into(), |x| format!("{x:.1}"))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}×", a / b),
        _ => "–".into(),
    }
}

/// One table.
fn table(path: &Path, text: &str) -> Result<String, Cause> {
    let bad = |why: String| Cause::BadTrace(format!("benchmark table {}: {why}", path.display()));
    let t: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    let rows = t["rows"].as_array().ok_or_else(|| bad("no `rows` list".into()))?;
    let words = |key: &str| t[key].as_str().unwrap_or("?").to_string();
    let mut body = String::new();
    for row in rows {
        let (ours_f32, np_f32) = (rate(row, "our f32"), rate(row, "np f32"));
        let (ours_bf16, pt_bf16) = (rate(row, "our bf16"), rate(row, "pt bf16"));
        body.push_str(&format!(
            "<tr><th>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(row["shape"].as_str().unwrap_or("?")),
            cell(ours_f32),
            cell(np_f32),
            ratio(ours_f32, np_f32),
            cell(ours_bf16),
            cell(pt_bf16),
            ratio(ours_bf16, pt_bf16),
        ));
    }
    Ok(format!(
        "<p><strong>{}</strong> (<code>{}</code>), {} threads, bfloat16 kernel <code>{}</code>, recorded {}:</p>\
         <div class=\"lecture-bench\"><table><thead><tr><th>GFLOP/s</th><th>ours f32</th><th>numpy f32</th>\
         <th>ours / numpy</th><th>ours bf16</th><th>PyTorch bf16</th><th>ours / PyTorch</th></tr></thead>\
         <tbody>{body}</tbody></table></div>",
        escape(&words("cpu_model")),
        escape(&words("trace_name")),
        t["threads"].as_u64().map_or("?".into(), |n| n.to_string()),
        escape(&words("bf16_isa")),
        escape(&words("recorded_at")),
    ))
}

/// Every benchmark table beside the traces in `lecture_dir`, in file-name order, or nothing.
pub fn render(lecture_dir: &Path) -> Result<String, Cause> {
    let Some(dir) = folder(lecture_dir) else {
        return Ok(String::new());
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(String::new());
    };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = String::new();
    for path in files {
        let text = crate::trace::io::read_limited(&path, MAX_BYTES, "a benchmark table")
            .map_err(|e| Cause::BadTrace(format!("benchmark table {}: {e}", path.display())))?;
        out.push_str(&table(&path, &text)?);
    }
    if out.is_empty() {
        return Ok(out);
    }
    Ok(format!(
        "\n\n<p>The matrix products against the libraries a PyTorch user runs: <code>bench cpu-matmul \
         --with-reference --json</code>, kept in <code>trace/bench/</code>, one table per kind of CPU measured. A ratio \
         above one means ours ran faster, in the same run.</p>{out}"
    ))
}
