//! The Devices chapter's benchmark tables, kept beside the traces in `trace/bench/`, one of each
//! kind per kind of CPU measured: `bench cpu-matmul --json`'s (`<trace name>.json`, our matrix
//! products against numpy's and PyTorch's) and `bench elementwise --json`'s
//! (`<trace name>-elementwise.json`, marked `"kind": "elementwise"`: our memory-bound ops in
//! GB/s). Every rate and ratio is computed here from the medians and sizes the file holds. A table
//! that cannot be read fails the build with its file named; a folder without tables shows nothing.

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

/// A ratio with the 95 % interval the benchmark wrote beside it (newer tables), else the ratio
/// the medians give (`fallback`). A ratio whose whole interval lies below one is a miss, and says
/// so.
fn with_interval(interval: &Value, fallback: String) -> String {
    let at = |k: &str| interval[k].as_f64();
    match (at("ratio"), at("low"), at("high")) {
        (Some(r), Some(lo), Some(hi)) => {
            let miss = if hi < 1.0 { ", a miss" } else { "" };
            format!(
                "{r:.2}× <span class=\"lecture-muted\" title=\"95 % interval of the ratio\">({lo:.2}–{hi:.2}{miss})</span>"
            )
        }
        _ => fallback,
    }
}

fn bad(path: &Path, why: String) -> Cause {
    Cause::BadTrace(format!("benchmark table {}: {why}", path.display()))
}

/// The table's CPU as a reader says it (its trace name stays on hover).
fn spoken(model: &str, trace_name: &str) -> String {
    super::device_names::spoken(&crate::trace::DeviceInfo {
        kind: "cpu".into(),
        name: model.into(),
        slug: trace_name.into(),
        memory_bytes: None,
        cuda_unavailable_reason: None,
        details: Default::default(),
    })
}

/// The kinds of table, in the order the chapter shows them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Matmul,
    Elementwise,
}

/// A file's kind: `cpu-matmul`'s tables were written before there was a `kind` field.
fn kind(path: &Path, t: &Value) -> Result<Kind, Cause> {
    match t.get("kind").map(|k| k.as_str()) {
        None | Some(Some("cpu-matmul")) => Ok(Kind::Matmul),
        Some(Some("elementwise")) => Ok(Kind::Elementwise),
        Some(_) => Err(bad(
            path,
            format!("unknown kind {}: expected \"cpu-matmul\" or \"elementwise\"", t["kind"]),
        )),
    }
}

/// GB/s of `column` in an elementwise row: its bytes over its median.
fn gb_per_sec(row: &Value, column: &str) -> Option<f64> {
    let bytes = row[column]["bytes"].as_f64().or_else(|| row["bytes"].as_f64())?;
    let median = row[column]["timing"]["median_s"].as_f64().filter(|&s| s > 0.0)?;
    Some(bytes / median / 1e9)
}

fn median(row: &Value, column: &str) -> Option<f64> {
    row[column]["timing"]["median_s"].as_f64().filter(|&s| s > 0.0)
}

/// One `bench elementwise` table: per op, dtype and size, our GB/s, its share of our baseline's
/// (a copy or a read at the same size) and our speed over PyTorch's.
fn elementwise_table(path: &Path, t: &Value) -> Result<String, Cause> {
    let rows = t["rows"].as_array().ok_or_else(|| bad(path, "no `rows` list".into()))?;
    let words = |key: &str| t[key].as_str().unwrap_or("?").to_string();
    let mut body = String::new();
    for row in rows {
        let text = |key: &str| escape(row[key].as_str().unwrap_or("?"));
        let (ours, base) = (gb_per_sec(row, "ours"), gb_per_sec(row, "baseline"));
        let share = match (ours, base) {
            (Some(o), Some(b)) => format!(
                "{:.0} % of a {}",
                100.0 * o / b,
                escape(row["baseline"]["kind"].as_str().unwrap_or("?"))
            ),
            _ => "–".into(),
        };
        body.push_str(&format!(
            "<tr><th>{} {}</th><td>{}</td><td>{}</td><td>{share}</td><td>{}</td></tr>",
            text("op"),
            text("dtype"),
            text("level"),
            cell(ours),
            with_interval(
                &row["ours_over_torch_interval"],
                ratio(median(row, "torch"), median(row, "ours"))
            ),
        ));
    }
    Ok(format!(
        "<p><strong title=\"{}\">The {}</strong>, {} threads, recorded {}:</p>\
         <div class=\"lecture-devices\"><table><thead><tr><th>op</th><th>fits in</th>\
         <th>our GB/s</th><th>of our baseline</th><th>ours / PyTorch</th></tr></thead>\
         <tbody>{body}</tbody></table></div>",
        escape(&words("trace_name")),
        escape(&spoken(&words("cpu_model"), &words("trace_name"))),
        t["threads"].as_u64().map_or("?".into(), |n| n.to_string()),
        escape(&words("recorded_at")),
    ))
}

/// What a trace of the same CPU timed at the lecture's shape, for setting beside its table.
pub struct TraceTiming {
    /// The trace's name, as a table's `trace_name` gives it.
    pub slug: String,
    /// The product's sizes: B × D by D × K.
    pub shape: (f64, f64, f64),
    /// Its float32 product's first quartile, median and third quartile, in seconds.
    pub quartiles: (f64, f64, f64),
    /// Whether the trace marks the section as timed on a busy machine.
    pub disturbed: bool,
}

/// First quartile, median, third quartile of a timing.
fn quartiles(timing: &Value) -> Option<(f64, f64, f64)> {
    let at = |k: &str| timing[k].as_f64().filter(|&s| s > 0.0);
    Some((at("q1_s")?, at("median_s")?, at("q3_s")?))
}

/// The trace of the table's CPU among `traces`, the table's row at that trace's shape and the
/// quartiles of the row's float32 product, where the table has that shape.
fn same_product<'a>(t: &'a Value, traces: &'a [TraceTiming]) -> Option<(&'a TraceTiming, &'a Value, (f64, f64, f64))> {
    let name = t["trace_name"].as_str().unwrap_or_default();
    let trace = traces.iter().find(|x| x.slug == name)?;
    let (b, d, k) = trace.shape;
    let same_shape =
        |r: &&Value| r["m"].as_f64() == Some(b) && r["k"].as_f64() == Some(d) && r["n"].as_f64() == Some(k);
    let row = t["rows"].as_array().and_then(|rows| rows.iter().find(same_shape))?;
    let bench = quartiles(&row["our f32"]["timing"])?;
    Some((trace, row, bench))
}

/// The trace slugs in `traces` whose float32 product a benchmark table of the same CPU ran faster
/// than beyond both spreads (the table's third quartile
/// below the trace's first): those traces were timed on a busier machine than their CPU allows,
/// and their columns say so. A table that cannot be read marks nothing (the tables themselves
/// report it).
pub fn beaten_by_a_table(tables: &Tables, traces: &[TraceTiming]) -> Vec<String> {
    tables
        .0
        .iter()
        .filter_map(|(_, t)| same_product(t, traces))
        .filter(|(trace, _, bench)| bench.2 < trace.quartiles.0)
        .map(|(trace, ..)| trace.slug.clone())
        .collect()
}

/// The benchmark tables beside the traces in `lecture_dir` (`trace/bench/*.json`), each read and
/// parsed once per build, in file-name order; none where the folder is missing.
pub struct Tables(Vec<(std::path::PathBuf, Value)>);

impl Tables {
    /// Reads every table; one that cannot be read or parsed fails the build with its file named.
    pub fn load(lecture_dir: &Path) -> Result<Tables, Cause> {
        let Some(Ok(entries)) = folder(lecture_dir).map(std::fs::read_dir) else {
            return Ok(Tables(Vec::new()));
        };
        let mut files: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        files
            .into_iter()
            .map(|path| {
                let text = crate::trace::io::read_limited(&path, MAX_BYTES, "a benchmark table")
                    .map_err(|e| bad(&path, e.to_string()))?;
                let t: Value = serde_json::from_str(&text).map_err(|e| bad(&path, e.to_string()))?;
                Ok((path, t))
            })
            .collect::<Result<_, Cause>>()
            .map(Tables)
    }
}

/// A table and a trace of one CPU timed the same product: whether they agree is decided here, from
/// their spreads, so the chapter never sets two disagreeing rates side by side as if they matched.
fn agreement(t: &Value, traces: &[TraceTiming]) -> String {
    let Some((trace, row, bench)) = same_product(t, traces) else {
        return String::new();
    };
    let (b, d, k) = trace.shape;
    let flop = 2.0 * b * d * k;
    let gflops = |q: (f64, f64, f64)| flop / q.1 / 1e9;
    // The middle half of the samples, as a share of the median: the narrower, the quieter.
    let width = |q: (f64, f64, f64)| 100.0 * (q.2 - q.0) / q.1;
    let (tr, shape) = (trace.quartiles, escape(row["shape"].as_str().unwrap_or("?")));
    let agree = bench.0 <= tr.2 && tr.0 <= bench.2;
    let head = format!(
        "At the lecture's shape ({shape}) this table's float32 product ran at {:.1} GFLOP/s and the trace of the same \
         CPU (the Devices table's column) at {:.1} GFLOP/s",
        gflops(bench),
        gflops(tr)
    );
    let text = if agree {
        format!("{head}: they agree within their spreads (the middle halves of their samples overlap).")
    } else {
        let quieter = match (trace.disturbed, bench.1 <= tr.1) {
            (true, _) | (false, true) => "this table's, the faster",
            (false, false) => "the trace's, the faster",
        };
        let busy = if trace.disturbed {
            " The trace marks that section as timed on a busy machine."
        } else {
            ""
        };
        format!(
            "{head}: they disagree beyond their spreads (the middle half of the table's samples spans {:.1} % of \
             its median, the trace's {:.1} %), so the machine was not equally quiet for both. The quieter run is \
             {quieter}: other work only slows a product down.{busy}",
            width(bench),
            width(tr)
        )
    };
    format!("<p class=\"lecture-bench-agreement\">{text}</p>")
}

/// One `bench cpu-matmul` table.
fn matmul_table(path: &Path, t: &Value) -> Result<String, Cause> {
    let rows = t["rows"].as_array().ok_or_else(|| bad(path, "no `rows` list".into()))?;
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
            with_interval(&row["ratios"]["f32/np"], ratio(ours_f32, np_f32)),
            cell(ours_bf16),
            cell(pt_bf16),
            with_interval(&row["ratios"]["bf16/pt"], ratio(ours_bf16, pt_bf16)),
        ));
    }
    Ok(format!(
        "<p><strong title=\"{}\">The {}</strong>, {} threads, bfloat16 {}, recorded {}:</p>\
         <div class=\"lecture-bench\"><table><thead><tr><th>GFLOP/s</th><th>ours f32</th><th>numpy f32</th>\
         <th>ours / numpy</th><th>ours bf16</th><th>PyTorch bf16</th><th>ours / PyTorch</th></tr></thead>\
         <tbody>{body}</tbody></table></div>",
        escape(&words("trace_name")),
        escape(&spoken(&words("cpu_model"), &words("trace_name"))),
        t["threads"].as_u64().map_or("?".into(), |n| n.to_string()),
        bf16_kernel(t),
        escape(&words("recorded_at")),
    ))
}

/// Which bfloat16 kernel the table's products took: the route where the table records one (the
/// CPU may offer a faster-looking instruction it did not take), else the kernel it names.
fn bf16_kernel(t: &Value) -> String {
    let isa = escape(t["bf16_isa"].as_str().unwrap_or("?"));
    match t["bf16_route"].as_str() {
        Some(route) if route != t["bf16_isa"].as_str().unwrap_or("?") => format!(
            "on the <code>{}</code> kernel (this CPU offers <code>{isa}</code>, the slower unit here)",
            escape(route)
        ),
        _ => format!("kernel <code>{isa}</code>"),
    }
}

/// Every benchmark table, in file-name order, or nothing; a matrix product table of a CPU in
/// `traces` says whether the two agree.
pub fn render(tables: &Tables, traces: &[TraceTiming]) -> Result<String, Cause> {
    let (mut matmul, mut elementwise) = (String::new(), String::new());
    for (path, t) in &tables.0 {
        match kind(path, t)? {
            Kind::Matmul => {
                matmul.push_str(&matmul_table(path, t)?);
                matmul.push_str(&agreement(t, traces));
            }
            Kind::Elementwise => elementwise.push_str(&elementwise_table(path, t)?),
        }
    }
    let mut out = String::new();
    if !matmul.is_empty() {
        out.push_str(&format!(
            "\n\n<p>The matrix products against the libraries a PyTorch user runs, timed by the repository's matrix \
             benchmark (the <a href=\"reference.html\">Reference</a> says how) and kept beside the traces, one table per kind \
             of CPU measured. A ratio above one means ours ran faster, in the same run; in the newer tables, the range \
             beside it is its 95 % interval, and a shape misses only when the whole interval lies below one.</p>{matmul}"
        ));
    }
    if !elementwise.is_empty() {
        out.push_str(&format!(
            "\n\n<p>The memory-bound ops, timed by the repository's elementwise benchmark, in GB/s (bytes \
             read and written over the median time) at one size in each level of the memory (found where the \
             bandwidth curve falls, in the newer tables; L2 and the last-level cache, LLC, by the sizes the OS reports, in \
             the older ones) and at one beyond them all (DRAM). Beside each, its share of our own baseline at the same size: a copy into a fresh tensor \
             for the ops that make one, a read for those that reduce; and our speed over PyTorch's in the same run.</p>{elementwise}"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_shows_its_interval_and_a_miss_says_so() {
        let held = serde_json::json!({"ratio": 1.234, "low": 0.95, "high": 1.5});
        let shown = with_interval(&held, "unused".into());
        assert!(shown.starts_with("1.23× "), "{shown}");
        assert!(shown.contains("(0.95–1.50)"), "{shown}");
        assert!(!shown.contains("miss"), "{shown}");
        let missed = serde_json::json!({"ratio": 0.8, "low": 0.7, "high": 0.9});
        assert!(with_interval(&missed, "unused".into()).contains("(0.70–0.90, a miss)"));
        // An older table has no interval: the medians' ratio stands alone.
        assert_eq!(with_interval(&Value::Null, "1.10×".into()), "1.10×");
        assert_eq!(
            with_interval(&serde_json::json!({"ratio": 1.0}), "1.00×".into()),
            "1.00×"
        );
    }

    #[test]
    fn a_trace_a_table_of_its_cpu_beat_beyond_both_spreads_is_marked() {
        let tmp = tempfile::tempdir().expect("a temporary folder");
        let dir = tmp.path();
        let lecture_dir = dir.join("lecture_02");
        std::fs::create_dir_all(dir.join("bench")).expect("a folder");
        let table = |median: f64| {
            serde_json::json!({"kind": "cpu-matmul", "trace_name": "cpu-x", "rows": [{"m": 4.0, "k": 2.0, "n": 1.0,
                "our f32": {"timing": {"q1_s": 0.9 * median, "median_s": median, "q3_s": 1.1 * median}}}]})
        };
        let trace = |q1: f64| TraceTiming {
            slug: "cpu-x".into(),
            shape: (4.0, 2.0, 1.0),
            quartiles: (q1, 1.2 * q1, 1.4 * q1),
            disturbed: false,
        };
        let write = |t: Value| std::fs::write(dir.join("bench/cpu-x.json"), t.to_string()).expect("written");
        // The table's slowest quarter (1.1 s) is faster than the trace's fastest (2 s): beaten.
        let beaten = |trace: TraceTiming| beaten_by_a_table(&Tables::load(&lecture_dir).expect("tables"), &[trace]);
        write(table(1.0));
        assert_eq!(beaten(trace(2.0)), vec!["cpu-x".to_string()]);
        // Their middle halves overlap: nothing to mark.
        assert!(beaten(trace(1.05)).is_empty());
        // A slower table never marks the trace.
        write(table(3.0));
        assert!(beaten(trace(2.0)).is_empty());
    }

    #[test]
    fn a_table_names_the_bf16_kernel_its_products_took() {
        let widened = serde_json::json!({"bf16_isa": "avx512_bf16", "bf16_route": "portable-f32"});
        assert_eq!(
            bf16_kernel(&widened),
            "on the <code>portable-f32</code> kernel (this CPU offers <code>avx512_bf16</code>, the slower unit here)"
        );
        let taken = serde_json::json!({"bf16_isa": "amx_bf16", "bf16_route": "amx_bf16"});
        assert_eq!(bf16_kernel(&taken), "kernel <code>amx_bf16</code>");
        // An older table names the kernel only.
        assert_eq!(
            bf16_kernel(&serde_json::json!({"bf16_isa": "avx512_bf16"})),
            "kernel <code>avx512_bf16</code>"
        );
    }
}
