//! This CPU's memory hierarchy, measured: STREAM's kernels at every working-set size on one
//! thread and on all (`stream.rs`), the levels read off the curves (`device::hierarchy`) and
//! named after the cache the OS reports for each, where one matches.

use serde_json::{Value, json};

use super::stream::{self, Curve, Kernel};
use crate::device::hierarchy::{self, Found, Point, Reported};
use crate::error::{Error, Result};

const WHERE: &str = "memory hierarchy";

/// STREAM's kernels on one thread and on all of the run's, and the caches the OS reports.
pub struct Hierarchy {
    pub threads: usize,
    largest: usize,
    one: Vec<Curve>,
    all: Vec<Curve>,
    reported: Vec<(String, u64, bool)>,
}

/// A level found on the curve of all threads.
pub struct Level {
    pub name: String,
    pub found: Found,
    pub copy_bytes_per_sec: f64,
    pub read_bytes_per_sec: f64,
    pub reported: Option<Reported>,
}

impl Hierarchy {
    /// Measures every kernel at every size on one thread and on `threads`.
    pub fn measure(threads: usize) -> Result<Hierarchy> {
        Hierarchy::measure_with(threads, true)
    }

    /// Measures on `threads` only (the one-thread curves are then the same ones): what a
    /// benchmark on that many threads needs to know its levels.
    pub fn measure_on(threads: usize) -> Result<Hierarchy> {
        Hierarchy::measure_with(threads, false)
    }

    fn measure_with(threads: usize, one_thread_too: bool) -> Result<Hierarchy> {
        let caches = crate::host::caches().ok_or_else(|| {
            Error::invalid(
                WHERE,
                "cannot read this CPU's cache sizes (/sys/devices/system/cpu/cpu0/cache)",
            )
        })?;
        // A private cache per core, except where the L2 is the last level (shared).
        let mut reported = Vec::new();
        if let Some(l1) = caches.l1_bytes {
            reported.push(("L1d".to_string(), l1, true));
        }
        reported.push(("L2".to_string(), caches.l2_bytes, caches.llc_level > 2));
        if caches.llc_level > 2 {
            reported.push((format!("L{}", caches.llc_level), caches.llc_bytes, false));
        }
        let largest = stream::largest_size(caches.llc_bytes, crate::host::available_memory_bytes());
        let threads = threads.max(1);
        let counts: Vec<usize> = match threads > 1 && one_thread_too {
            true => vec![1, threads],
            false => vec![threads],
        };
        let curves = stream::measure(&counts, largest, stream::sweep_budget())?;
        let (one, all): (Vec<Curve>, Vec<Curve>) = curves.into_iter().partition(|c| c.threads == 1);
        let (one, all) = match (one.is_empty(), all.is_empty()) {
            (true, _) => (all.clone(), all),
            (_, true) => (one.clone(), one),
            _ => (one, all),
        };
        Ok(Hierarchy {
            threads,
            largest,
            one,
            all,
            reported,
        })
    }

    /// The largest working set measured, bytes.
    pub fn largest(&self) -> usize {
        self.largest
    }

    fn curves(&self, all: bool) -> &[Curve] {
        if all { &self.all } else { &self.one }
    }

    /// The caches as reported, with what they hold for `threads` threads.
    fn reported(&self, threads: usize) -> Vec<Reported> {
        (self.reported.iter())
            .map(|(name, bytes, private)| Reported {
                name: name.clone(),
                bytes: *bytes,
                holds_bytes: if *private { bytes * threads as u64 } else { *bytes },
            })
            .collect()
    }

    /// At each size, the fastest of the five kernels: the most bytes per second the memory was
    /// seen to move at that working set. An operation's roof.
    pub fn envelope(&self, all: bool) -> Vec<Point> {
        combine(self.curves(all), |ps| {
            let best = ps
                .iter()
                .max_by(|a, b| a.best_bytes_per_sec.total_cmp(&b.best_bytes_per_sec));
            let median = ps.iter().map(|p| p.bytes_per_sec).fold(0.0, f64::max);
            best.map(|b| Point {
                bytes_per_sec: median,
                ..*b
            })
        })
    }

    /// The levels of the curve, fastest first: found on the geometric mean of the five kernels
    /// (one kernel's noisy size does not make or hide a step), named after the reported cache
    /// each matches, the last one main memory.
    pub fn levels(&self, all: bool) -> Vec<Level> {
        let curves = self.curves(all);
        let mean = combine(curves, |ps| {
            let n = ps.len() as f64;
            let log_mean = ps.iter().map(|p| p.bytes_per_sec.ln()).sum::<f64>() / n;
            ps.first().map(|p| Point {
                bytes_per_sec: log_mean.exp(),
                ..*p
            })
        });
        let reported = self.reported(if all { self.threads } else { 1 });
        let found = hierarchy::find_levels(&mean);
        let mut names: Vec<String> = Vec::new();
        let in_range = |kernel: Kernel, f: &Found| {
            let curve = curves.iter().find(|c| c.kernel == kernel)?;
            let mut inside: Vec<f64> = (curve.points.iter())
                .filter(|p| p.bytes * 10 >= f.from_bytes * 9 && f.up_to_bytes.is_none_or(|u| p.bytes * 9 <= u * 10))
                .map(|p| p.bytes_per_sec)
                .collect();
            inside.sort_by(f64::total_cmp);
            inside.get(inside.len() / 2).copied()
        };
        (found.iter().enumerate())
            .map(|(i, f)| {
                let matched = hierarchy::matching(f, &reported)
                    .filter(|r| !names.contains(&r.name))
                    .cloned();
                let name = match (&matched, f.up_to_bytes) {
                    (Some(r), _) => r.name.clone(),
                    (None, None) => "DRAM".to_string(),
                    (None, Some(_)) => format!("cache {}", i + 1),
                };
                names.push(name.clone());
                Level {
                    name,
                    found: *f,
                    copy_bytes_per_sec: in_range(Kernel::Copy, f).unwrap_or(f64::NAN),
                    read_bytes_per_sec: in_range(Kernel::Read, f).unwrap_or(f64::NAN),
                    reported: matched,
                }
            })
            .collect()
    }

    /// The roof at `bytes` measured again on all threads: the fastest of the five kernels there.
    pub fn roof_again(&self, bytes: usize) -> Result<f64> {
        let mut buffers = stream::Buffers::new(bytes.max(stream::SMALLEST))?;
        let mut best = 0f64;
        for kernel in Kernel::ALL {
            let p = buffers.measure(
                kernel,
                bytes.max(stream::SMALLEST),
                self.threads,
                stream::sweep_budget(),
            )?;
            best = best.max(p.best_bytes_per_sec);
        }
        Ok(best)
    }

    /// Every kernel's points, by kernel name.
    pub fn curves_json(&self, all: bool) -> Value {
        let rows = self.curves(all).iter().map(|c| {
            let points = (c.points.iter())
                .map(|p| {
                    json!({"bytes": p.bytes, "bytes_per_sec": p.bytes_per_sec,
                           "best_bytes_per_sec": p.best_bytes_per_sec, "spread": p.spread})
                })
                .collect();
            (c.kernel.name().to_string(), Value::Array(points))
        });
        Value::Object(rows.collect())
    }

    /// How many reported caches no level matched, and how many levels (main memory aside) no
    /// reported cache explains, with the largest of those.
    pub fn agreement(&self) -> Value {
        let levels = self.levels(true);
        let reported = self.reported(self.threads);
        let not_seen: Vec<&Reported> = (reported.iter())
            .filter(|r| {
                !levels
                    .iter()
                    .any(|l| l.reported.as_ref().is_some_and(|m| m.name == r.name))
            })
            .collect();
        let unexplained: Vec<&Level> = (levels.iter())
            .filter(|l| l.reported.is_none() && l.found.up_to_bytes.is_some())
            .collect();
        json!({
            "caches_not_seen": not_seen.len(),
            "largest_not_seen": not_seen.last().map(|r| r.name.clone()),
            "largest_not_seen_bytes": not_seen.last().map(|r| r.holds_bytes),
            "levels_not_reported": unexplained.len(),
            "largest_not_reported_up_to_bytes": unexplained.last().and_then(|l| l.found.up_to_bytes),
            "largest_not_reported_bytes_per_sec": unexplained.last().map(|l| l.found.bytes_per_sec),
        })
    }

    /// The caches as the OS reports them, and whether a level of the curve matched each.
    pub fn reported_json(&self) -> Value {
        let levels = self.levels(true);
        let rows = self.reported(self.threads).into_iter().map(|r| {
            let seen = levels
                .iter()
                .any(|l| l.reported.as_ref().is_some_and(|m| m.name == r.name));
            let row = json!({"bytes": r.bytes, "holds_bytes": r.holds_bytes, "seen_on_the_curve": seen});
            (r.name, row)
        });
        Value::Object(rows.collect())
    }
}

/// The levels as the trace records them.
pub fn levels_json(levels: &[Level], threads: usize) -> Value {
    let rows = levels.iter().map(|l| {
        let row = json!({
            "from_bytes": l.found.from_bytes, "up_to_bytes": l.found.up_to_bytes,
            "bytes_per_sec": l.found.bytes_per_sec,
            "copy_bytes_per_sec": l.copy_bytes_per_sec, "read_bytes_per_sec": l.read_bytes_per_sec,
            "threads": threads,
            "reported": l.reported.as_ref().map(|r| r.name.clone()),
            "reported_bytes": l.reported.as_ref().map(|r| r.holds_bytes),
        });
        (l.name.clone(), row)
    });
    Value::Object(rows.collect())
}

/// At each size of the curves (the same sizes for every kernel), `pick` applied to the kernels'
/// points there.
fn combine(curves: &[Curve], pick: impl Fn(&[Point]) -> Option<Point>) -> Vec<Point> {
    let sizes = curves.iter().map(|c| c.points.len()).min().unwrap_or(0);
    (0..sizes)
        .filter_map(|i| pick(&curves.iter().map(|c| c.points[i]).collect::<Vec<_>>()))
        .collect()
}
