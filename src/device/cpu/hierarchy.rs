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
    one: Curves,
    all: Curves,
}

/// One thread count's curves, and what is read off them once.
struct Curves {
    curves: Vec<Curve>,
    /// The caches as reported, with what they hold for these curves' threads.
    reported: Vec<Reported>,
    /// At each size, the fastest of the five kernels.
    envelope: Vec<Point>,
    levels: Vec<Level>,
}

/// A level found on a curve.
pub struct Level {
    pub name: String,
    pub found: Found,
    /// The median over its plateau of the fastest kernel at each size: the roof it sets.
    pub bytes_per_sec: f64,
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
        let mut reported: Vec<(String, u64, bool)> = Vec::new();
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
        // One thread's curves, unless none were measured (then the run's threads' serve).
        let (one, all): (Vec<Curve>, Vec<Curve>) = (curves.into_iter()).partition(|c| c.threads == 1 && threads > 1);
        let one = if one.is_empty() { all.clone() } else { one };
        let read = |curves: Vec<Curve>, threads: usize| Curves::read(curves, &reported_for(&reported, threads));
        Ok(Hierarchy {
            threads,
            largest,
            one: read(one, 1),
            all: read(all, threads),
        })
    }

    /// The largest working set measured, bytes.
    pub fn largest(&self) -> usize {
        self.largest
    }

    fn curves(&self, all: bool) -> &Curves {
        if all { &self.all } else { &self.one }
    }

    /// At each size, the fastest of the five kernels: the most bytes per second the memory was
    /// seen to move at that working set. An operation's roof.
    pub fn envelope(&self, all: bool) -> &[Point] {
        &self.curves(all).envelope
    }

    /// The levels of the curve, fastest first, the last one main memory.
    pub fn levels(&self, all: bool) -> &[Level] {
        &self.curves(all).levels
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
        let rows = self.curves(all).curves.iter().map(|c| {
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
        let not_seen: Vec<&Reported> = self.all.reported.iter().filter(|r| !self.all.seen(r)).collect();
        let unexplained: Vec<&Level> = (self.all.levels.iter())
            .filter(|l| l.reported.is_none() && l.found.up_to_bytes.is_some())
            .collect();
        json!({
            "caches_not_seen": not_seen.len(),
            "largest_not_seen": not_seen.last().map(|r| r.name.clone()),
            "largest_not_seen_bytes": not_seen.last().map(|r| r.holds_bytes),
            "levels_not_reported": unexplained.len(),
            "largest_not_reported_up_to_bytes": unexplained.last().and_then(|l| l.found.up_to_bytes),
            "largest_not_reported_bytes_per_sec": unexplained.last().map(|l| l.bytes_per_sec),
        })
    }

    /// The caches as the OS reports them, and whether a level of the curve matched each.
    pub fn reported_json(&self) -> Value {
        let rows = self.all.reported.iter().map(|r| {
            let row = json!({"bytes": r.bytes, "holds_bytes": r.holds_bytes, "seen_on_the_curve": self.all.seen(r)});
            (r.name.clone(), row)
        });
        Value::Object(rows.collect())
    }
}

/// The caches as reported (name, bytes, private to a core), with what they hold for `threads`.
fn reported_for(reported: &[(String, u64, bool)], threads: usize) -> Vec<Reported> {
    (reported.iter())
        .map(|(name, bytes, private)| Reported {
            name: name.clone(),
            bytes: *bytes,
            holds_bytes: if *private { bytes * threads as u64 } else { *bytes },
        })
        .collect()
}

impl Curves {
    /// The envelope and the levels of `curves`, against the caches as `reported` for their threads.
    fn read(curves: Vec<Curve>, reported: &[Reported]) -> Curves {
        let envelope = combine(&curves, |ps| {
            let best = ps
                .iter()
                .max_by(|a, b| a.best_bytes_per_sec.total_cmp(&b.best_bytes_per_sec));
            let median = ps.iter().map(|p| p.bytes_per_sec).fold(0.0, f64::max);
            best.map(|b| Point {
                bytes_per_sec: median,
                ..*b
            })
        });
        // Found on the geometric mean of the five kernels: one kernel's noisy size does not make
        // or hide a step.
        let mean = combine(&curves, |ps| {
            let log_mean = ps.iter().map(|p| p.bytes_per_sec.ln()).sum::<f64>() / ps.len() as f64;
            ps.first().map(|p| Point {
                bytes_per_sec: log_mean.exp(),
                ..*p
            })
        });
        let median_in = |points: &[Point], f: &Found| {
            let mut inside: Vec<f64> = (points.iter())
                .filter(|p| p.bytes * 10 >= f.from_bytes * 9 && f.up_to_bytes.is_none_or(|u| p.bytes * 9 <= u * 10))
                .map(|p| p.bytes_per_sec)
                .collect();
            inside.sort_by(f64::total_cmp);
            inside.get(inside.len() / 2).copied().unwrap_or(f64::NAN)
        };
        let kernel = |k: Kernel| curves.iter().find(|c| c.kernel == k).map_or(&[][..], |c| &c.points[..]);
        let mut levels: Vec<Level> = Vec::new();
        for (i, f) in hierarchy::find_levels(&mean).into_iter().enumerate() {
            // Named after the reported cache it matches (each name once), else by its place.
            let matched = (hierarchy::matching(&f, reported))
                .filter(|r| !levels.iter().any(|l| l.name == r.name))
                .cloned();
            let name = match (&matched, f.up_to_bytes) {
                (Some(r), _) => r.name.clone(),
                (None, None) => "DRAM".to_string(),
                (None, Some(_)) => format!("cache {}", i + 1),
            };
            levels.push(Level {
                name,
                bytes_per_sec: median_in(&envelope, &f),
                copy_bytes_per_sec: median_in(kernel(Kernel::Copy), &f),
                read_bytes_per_sec: median_in(kernel(Kernel::Read), &f),
                found: f,
                reported: matched,
            });
        }
        Curves {
            curves,
            envelope,
            levels,
            reported: reported.to_vec(),
        }
    }

    /// Whether a level of these curves matched the reported cache `r`.
    fn seen(&self, r: &Reported) -> bool {
        (self.levels.iter()).any(|l| l.reported.as_ref().is_some_and(|m| m.name == r.name))
    }
}

/// The levels as the trace records them, by name.
pub fn levels_json(levels: &[Level], threads: usize) -> Value {
    Value::Object(
        levels
            .iter()
            .map(|l| (l.name.clone(), level_json(l, threads)))
            .collect(),
    )
}

/// One level as the trace records it.
pub fn level_json(l: &Level, threads: usize) -> Value {
    json!({
        "from_bytes": l.found.from_bytes, "up_to_bytes": l.found.up_to_bytes,
        "bytes_per_sec": l.bytes_per_sec,
        "copy_bytes_per_sec": l.copy_bytes_per_sec, "read_bytes_per_sec": l.read_bytes_per_sec,
        "threads": threads,
        "reported": l.reported.as_ref().map(|r| r.name.clone()),
        "reported_bytes": l.reported.as_ref().map(|r| r.holds_bytes),
    })
}

/// At each size of the curves (the same sizes for every kernel), `pick` applied to the kernels'
/// points there.
fn combine(curves: &[Curve], pick: impl Fn(&[Point]) -> Option<Point>) -> Vec<Point> {
    let sizes = curves.iter().map(|c| c.points.len()).min().unwrap_or(0);
    (0..sizes)
        .filter_map(|i| pick(&curves.iter().map(|c| c.points[i]).collect::<Vec<_>>()))
        .collect()
}
