//! `bench elementwise`'s run, table and JSON (the measurements are in `elementwise.rs`).

use std::cell::RefCell;
use std::collections::BTreeMap;

use super::elementwise::{self as ew, Case, LIBRARIES, Op, Row};
use super::reference::{self, Server};
use crate::host::Caches;
use crate::outln;
use crate::timing::{Budget, RatioInterval, Timing, geometric_mean};

/// Where the cache sizes are unknown: a common laptop's, said as assumed in the output.
const ASSUMED: Caches = Caches {
    l1_bytes: None,
    l2_bytes: 1 << 20,
    llc_bytes: 32 << 20,
    llc_level: 3,
};

/// How many times its largest case's bytes the run may hold at once: our inputs, output and
/// baseline, the float32 values the bfloat16 inputs are rounded from, and the script's own copies.
const MEMORY_FACTOR: u64 = 6;

pub struct Report {
    pub rows: Vec<Row>,
    pub caches: Caches,
    /// The levels each size was set in.
    pub levels: ew::Levels,
    /// Whether the OS told the cache sizes (else `ASSUMED`).
    pub caches_from_os: bool,
    /// The references' versions (`torch`, `numpy`), when they ran.
    pub libraries: BTreeMap<String, String>,
}

/// This machine's caches, or the assumed ones.
pub fn caches() -> (Caches, bool) {
    match crate::host::caches() {
        Some(c) => (c, true),
        None => (ASSUMED, false),
    }
}

fn human_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

fn gb_per_sec(bytes: u64, t: Timing) -> f64 {
    bytes as f64 / t.median_s / 1e9
}

/// Our speed over theirs: their median time over ours.
fn speedup(ours: Timing, theirs: Option<Timing>) -> Option<f64> {
    theirs.map(|t| t.median_s / ours.median_s)
}

fn cell(x: Option<f64>, precision: usize, suffix: &str, width: usize) -> String {
    let text = x.map_or("—".to_string(), |v| format!("{v:.precision$}{suffix}"));
    format!("{text:>width$}")
}

pub fn print_table(rows: &[Row]) -> anyhow::Result<()> {
    outln!(
        "{:<7} {:<9} {:>16} │ {:>10} {:>8} {:>8} │ {:>10} {:>10} │ {:>22} {:>22}",
        "op",
        "dtype",
        "bytes moved",
        "ours µs",
        "GB/s",
        "% base",
        "PyTorch µs",
        "numpy µs",
        "/PyTorch",
        "/numpy"
    )?;
    for r in rows {
        let c = r.case;
        let (ours_gbs, base_gbs) = (
            gb_per_sec(c.bytes(), r.ours),
            gb_per_sec(c.baseline_bytes(), r.baseline),
        );
        let [pt, np] = r.references;
        let us = |t: Option<Timing>| t.map(|t| t.median_s * 1e6);
        outln!(
            "{:<7} {:<9} {:>16} │ {} {} {} │ {} {} │ {:>22} {:>22}",
            c.op.name(),
            c.dtype.name(),
            format!("{} {}", human_bytes(c.bytes()), c.level),
            cell(us(Some(r.ours)), 1, "", 10),
            cell(Some(ours_gbs), 1, "", 8),
            cell(Some(100.0 * ours_gbs / base_gbs), 0, " %", 8),
            cell(us(pt), 1, "", 10),
            cell(us(np), 1, "", 10),
            interval_cell(r.intervals[0]),
            interval_cell(r.intervals[1]),
        )?;
    }
    for (i, (library, _)) in LIBRARIES.iter().enumerate() {
        let ratios: Vec<&RatioInterval> = rows.iter().filter_map(|r| r.intervals[i].as_ref()).collect();
        if let Some(mean) = geometric_mean(ratios.iter().map(|r| r.ratio)) {
            let misses: Vec<String> = rows
                .iter()
                .filter(|r| r.intervals[i].is_some_and(|x| x.misses()))
                .map(|r| format!("{} {} {}", r.case.op.name(), r.case.dtype.name(), r.case.level))
                .collect();
            outln!(
                "ours over {library}: geometric mean {mean:.2}× over {} shapes; {}",
                ratios.len(),
                misses_line(&misses)
            )?;
        }
    }
    let counts: Vec<usize> = rows
        .iter()
        .flat_map(|r| {
            [Some(r.ours), Some(r.baseline)]
                .into_iter()
                .chain(r.references)
                .flatten()
        })
        .map(|t| t.reps)
        .collect();
    outln!(
        "\nbytes moved: inputs read + output written; the level: the first that holds them (the levels above), else DRAM.\n\
         % base: our GB/s over our baseline's at the same size. relu, gelu, add, mul against a copy \
         (deep_clone) into a fresh tensor of the output's size;\n\
         sum, dot, matvec against a read (sum_all) of as many elements as they read (sum is its own \
         baseline: ≈100 % shows the noise).\n\
         /PyTorch, /numpy: our speed over theirs (> 1: we are faster), from medians, with its 95 % interval \
         (a bootstrap of the medians' ratio); a shape misses (marked !) only when its whole interval lies below 1;\n\
         — where not timed (numpy has no bfloat16 and no GeLU).\nsamples per entry: {}–{}",
        counts.iter().min().unwrap_or(&0),
        counts.iter().max().unwrap_or(&0)
    )?;
    Ok(())
}

/// The table as JSON: per case, the bytes, the FLOPs counted, and each contender's timing
/// (seconds, with the quartiles) and GB/s; `kind` tells it apart from `cpu-matmul`'s table.
pub fn report_json(report: &Report, threads: usize) -> serde_json::Value {
    let entry = |bytes: u64, t: Option<Timing>| {
        t.map_or(
            serde_json::Value::Null,
            |t| serde_json::json!({"timing": t, "gb_per_sec": gb_per_sec(bytes, t)}),
        )
    };
    let rows: Vec<_> = report
        .rows
        .iter()
        .map(|r| {
            let c = r.case;
            let baseline = c.op.baseline(c.n);
            let mut o = serde_json::json!({
                "op": c.op.name(), "dtype": c.dtype.name(), "level": c.level, "n": c.n,
                "bytes": c.bytes(), "flops": r.flops,
                "ours": entry(c.bytes(), Some(r.ours)),
                "baseline": {"kind": baseline.kind(), "elements": baseline.elements(),
                    "bytes": c.baseline_bytes(), "timing": r.baseline,
                    "gb_per_sec": gb_per_sec(c.baseline_bytes(), r.baseline)},
                "of_baseline": gb_per_sec(c.bytes(), r.ours) / gb_per_sec(c.baseline_bytes(), r.baseline),
            });
            for ((library, _), t) in LIBRARIES.iter().zip(r.references) {
                o[*library] = entry(c.bytes(), t);
                o[format!("ours_over_{library}")] = speedup(r.ours, t).into();
            }
            for ((library, _), x) in LIBRARIES.iter().zip(r.intervals) {
                o[format!("ours_over_{library}_interval")] = serde_json::json!(x);
            }
            o
        })
        .collect();
    let c = report.caches;
    serde_json::json!({
        "kind": "elementwise",
        "threads": threads,
        "caches": {"l2_bytes": c.l2_bytes, "llc_bytes": c.llc_bytes, "llc_level": c.llc_level,
            "from_os": report.caches_from_os},
        "levels": {
            "measured": report.levels.measured,
            "caches": report.levels.caches.iter().map(|(name, holds)| serde_json::json!({"name": name, "holds_bytes": holds})).collect::<Vec<_>>(),
        },
        "libraries": report.libraries,
        "geometric_mean": LIBRARIES.iter().enumerate().map(|(i, (library, _))| {
            (format!("ours_over_{library}"), serde_json::json!(geometric_mean(report.rows.iter().filter_map(|r| r.intervals[i].map(|x| x.ratio)))))
        }).collect::<serde_json::Map<_, _>>(),
        "rows": rows,
    })
}

/// The levels of this CPU's memory as its curve shows them, measured on `threads` threads; where
/// that fails, the OS's sizes, with a word on why.
fn levels(threads: usize, caches: &Caches) -> ew::Levels {
    match ew::Levels::measure(threads) {
        Ok(levels) => levels,
        Err(why) => {
            crate::console::warn(format_args!(
                "note: the memory's levels could not be measured ({why}); taking the OS's cache sizes"
            ));
            ew::Levels::from_caches(caches)
        }
    }
}

/// About how long timing `cases` takes: each case's contenders (ours, our baseline and the
/// references that have the op) each get `min_time` of samples in blocks, with a pause after each.
fn estimate_s(cases: &[Case], budget: &Budget, available: &[bool; 2]) -> f64 {
    let blocks = (budget.min_time.as_secs_f64() / budget.block.as_secs_f64().max(1e-3)).ceil();
    let per_contender = budget.min_time.as_secs_f64() + blocks * budget.settle.as_secs_f64();
    let contenders: usize = (cases.iter())
        .map(|c| {
            2 + (LIBRARIES.iter().zip(available))
                .filter(|((lib, _), on)| **on && c.op.in_library(lib, c.dtype))
                .count()
        })
        .sum();
    contenders as f64 * per_contender
}

/// Times `ops` at each of `sizes` (bytes moved; when empty, one size in each level of the memory
/// as measured here, and main memory).
pub fn run(budget: Budget, threads: usize, with_reference: bool, ops: &[Op], sizes: &[u64]) -> anyhow::Result<Report> {
    let (caches, caches_from_os) = caches();
    let levels = levels(threads, &caches);
    let sizes = if sizes.is_empty() {
        levels.standard_bytes()
    } else {
        sizes.to_vec()
    };
    let ops = if ops.is_empty() { &ew::OPS[..] } else { ops };
    let cases = ew::cases(ops, &sizes, &levels);
    // Refused before anything is allocated (or a virtual environment made).
    let largest = cases.iter().map(Case::bytes).max().unwrap_or(0);
    if let Some(available) = crate::host::available_memory_bytes()
        && largest.saturating_mul(MEMORY_FACTOR) > available
    {
        anyhow::bail!(
            "a case moving {} needs about {} of host memory, and {} is available: give smaller --bytes",
            human_bytes(largest),
            human_bytes(largest.saturating_mul(MEMORY_FACTOR)),
            human_bytes(available)
        );
    }
    let (server, info) = if with_reference {
        let python = reference::ensure_venv(&reference::venv_dir())?;
        let mut server = Server::start(&python, threads)?;
        let info = server.info()?;
        (Some(RefCell::new(server)), Some(info))
    } else {
        (None, None)
    };
    let available = LIBRARIES.map(|(library, _)| info.as_ref().is_some_and(|i| i.libraries.contains_key(library)));
    outln!(
        "CPU elementwise ops, {threads} threads; medians of samples taken in turns (≥{} samples and ≥{:.1} s per entry)",
        budget.min_samples,
        budget.min_time.as_secs_f64()
    )?;
    outln!(
        "caches{}: L2 {} per core, L{} {}",
        if caches_from_os {
            ""
        } else {
            " (assumed: the OS does not say)"
        },
        human_bytes(caches.l2_bytes),
        caches.llc_level,
        human_bytes(caches.llc_bytes)
    )?;
    let found: Vec<String> = (levels.caches.iter())
        .map(|(name, holds)| format!("{name} up to {}", human_bytes(*holds)))
        .collect();
    outln!(
        "levels{}: {}, then DRAM",
        if levels.measured {
            " (where the bandwidth curve falls, on these threads)"
        } else {
            " (from the OS's sizes)"
        },
        found.join(", ")
    )?;
    outln!(
        "{} cases; about {:.1} minutes",
        cases.len(),
        estimate_s(&cases, &budget, &available) / 60.0
    )?;
    match &info {
        Some(info) => {
            info.describe()?;
            outln!(
                "  numpy's elementwise ops and sums run on one thread whatever the setting; its dot and matvec go to BLAS"
            )?;
        }
        None => outln!(
            "references: not run (pass --with-reference to install numpy and PyTorch into {} and time them)",
            reference::venv_dir().display()
        )?,
    }
    let mut rows = Vec::new();
    for case in cases {
        crate::console::warn(format_args!(
            "timing {} {} n={} ({})",
            case.op.name(),
            case.dtype.name(),
            case.n,
            case.level
        ));
        rows.push(ew::measure(case, budget, server.as_ref(), &available)?);
    }
    outln!()?;
    print_table(&rows)?;
    Ok(Report {
        rows,
        caches,
        levels,
        caches_from_os,
        libraries: info.map(|i| i.libraries).unwrap_or_default(),
    })
}

/// A ratio with its interval, or a dash where the reference was not timed.
fn interval_cell(x: Option<RatioInterval>) -> String {
    x.map_or("—".to_string(), |x| x.label())
}

/// "no shape misses", or the shapes whose whole interval lies below one.
pub(super) fn misses_line(misses: &[String]) -> String {
    match misses {
        [] => "no shape misses (none has its whole interval below 1)".to_string(),
        _ => format!("{} miss (whole interval below 1): {}", misses.len(), misses.join(", ")),
    }
}
