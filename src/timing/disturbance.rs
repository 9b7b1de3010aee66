//! Whether a measurement was disturbed: a browser, a build or a neighbouring VM that takes the
//! cores while a section times makes its speeds low, and nothing in the numbers alone says so.
//! A [`Watch`] around a section notes what the machine did meanwhile:
//!
//! - **others**: the share of the machine's CPU time that other processes used
//!   (`/proc/stat`'s busy time less this process's own, `/proc/self/stat`), the direct measure of
//!   cores taken from the section. The load average is kept beside it for the reader, but decides
//!   nothing: it counts this process's own threads and trails by a minute.
//! - **steal**: the share the hypervisor gave to other virtual machines (`/proc/stat`'s steal).
//! - **spread**: the largest q3/q1 of the section's timings (from `in_turns`): repetitions of one
//!   call that differ this much were slowed part of the time, whatever the cause.
//!
//! The rule ([`RULE`]) turns these into a reason or none. Every reading is optional: a missing or
//! unreadable `/proc` file (another OS, a sandbox) means "unknown", never a failure.

use std::cell::Cell;

use super::Timing;

/// The aggregate `cpu` line of `/proc/stat`, in clock ticks, and the runnable threads then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTicks {
    /// user + nice + system + irq + softirq: time some process (or the kernel for one) ran.
    pub busy: u64,
    /// The hypervisor ran another machine on this one's virtual CPU.
    pub steal: u64,
    /// Every field the line counts (idle and iowait included): all cores' time.
    pub total: u64,
    /// `procs_running`: threads runnable at that moment, this process's own included.
    pub procs_running: Option<u64>,
}

/// The `cpu` line of `/proc/stat` (`cpu  user nice system idle iowait irq softirq steal …`).
/// Kernels before 2.6.11 have no steal field: it is then 0. `guest` time is already inside
/// `user`, so only the first eight fields are summed.
pub fn parse_proc_stat(text: &str) -> Option<CpuTicks> {
    let line = text.lines().find(|l| l.split_whitespace().next() == Some("cpu"))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    if fields.len() < 4 {
        return None;
    }
    let at = |i: usize| fields.get(i).copied().unwrap_or(0);
    let procs_running = text.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next() == Some("procs_running"))
            .then(|| words.next()?.parse().ok())
            .flatten()
    });
    Some(CpuTicks {
        busy: at(0) + at(1) + at(2) + at(5) + at(6),
        steal: at(7),
        total: fields.iter().sum(),
        procs_running,
    })
}

/// The one-minute load average, the first field of `/proc/loadavg`.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace()
        .next()?
        .parse()
        .ok()
        .filter(|x: &f64| x.is_finite())
}

/// This process's CPU time in clock ticks from `/proc/self/stat`: its threads' (utime, stime) and
/// its reaped children's (cutime, cstime), which a section's helper processes would be. The
/// command name (field 2) may hold spaces and parentheses, so fields are counted after its last `)`.
pub fn parse_self_stat(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    // After the name: state is field 3, so utime (14) … cstime (17) are the 12th to 15th words.
    let words: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| words.get(i)?.parse::<u64>().ok();
    Some(tick(11)? + tick(12)? + tick(13)? + tick(14)?)
}

/// What `/proc` said at one moment.
#[derive(Debug, Clone, Copy, Default)]
pub struct Snapshot {
    pub machine: Option<CpuTicks>,
    pub own: Option<u64>,
}

impl Snapshot {
    pub fn now() -> Snapshot {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        Snapshot {
            machine: read("/proc/stat").as_deref().and_then(parse_proc_stat),
            own: read("/proc/self/stat").as_deref().and_then(parse_self_stat),
        }
    }
}

/// Fewer ticks than this between two snapshots (all cores together) say too little to judge:
/// at 100 ticks a second, a quarter of a second on two cores.
const MIN_TICKS: u64 = 50;

/// The shares of the machine's time that other processes and the hypervisor took between `a`
/// and `b`: (others, steal), each unknown when a reading is missing or the interval too short.
pub fn shares(a: &Snapshot, b: &Snapshot) -> (Option<f64>, Option<f64>) {
    let (Some(x), Some(y)) = (a.machine, b.machine) else {
        return (None, None);
    };
    let total = y.total.saturating_sub(x.total);
    if total < MIN_TICKS {
        return (None, None);
    }
    let steal = y.steal.saturating_sub(x.steal) as f64 / total as f64;
    let others = match (a.own, b.own) {
        (Some(p), Some(q)) => {
            let busy = y.busy.saturating_sub(x.busy);
            Some(busy.saturating_sub(q.saturating_sub(p)) as f64 / total as f64)
        }
        _ => None,
    };
    (others, Some(steal))
}

/// What a watch saw over one section.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Observed {
    /// Share of all cores' time that other processes used (0 to 1).
    pub others: Option<f64>,
    /// Share of all cores' time the hypervisor stole (0 to 1).
    pub steal: Option<f64>,
    /// One-minute load average at the end (context only: it counts this process too).
    pub load: Option<f64>,
    /// The largest q3/q1 over the section's timings.
    pub spread: Option<f64>,
}

/// Above which a reading counts as a disturbance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// Other processes used more than this share of the cores: a quarter is half a core of a
    /// two-core laptop, far above what a quiet machine's daemons take (a percent or two).
    pub others: f64,
    /// The hypervisor stole more than this share.
    pub steal: f64,
    /// Some timing's third quartile is this many times its first: on a quiet machine the
    /// repetitions of one call stay within a few tens of percent of each other.
    pub spread: f64,
}

pub const RULE: Rule = Rule {
    others: 0.25,
    steal: 0.05,
    spread: 1.5,
};

impl Rule {
    /// Why `seen` counts as disturbed, or `None` when it does not. `host` says whether the
    /// machine's load decides (a CPU's timings); a GPU's are judged by their spread alone.
    pub fn why(&self, seen: &Observed, host: bool) -> Option<String> {
        let percent = |x: f64| format!("{:.0} %", x * 100.0);
        let mut reasons = Vec::new();
        if host {
            if let Some(o) = seen.others.filter(|&o| o > self.others) {
                reasons.push(format!("other processes used {} of the CPU time", percent(o)));
            }
            if let Some(s) = seen.steal.filter(|&s| s > self.steal) {
                reasons.push(format!("the hypervisor stole {} of it", percent(s)));
            }
        }
        if let Some(s) = seen.spread.filter(|&s| s > self.spread) {
            reasons.push(format!("repetitions of one timing varied {s:.1}× (q3/q1)"));
        }
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }
}

/// The FMA peak loop measured when a run first needs it and again after its last section agree
/// within this fraction on a quiet machine (its best of five trials varies by a few percent).
pub const PEAK_AGREEMENT: f64 = 0.10;

/// Why a peak of `before` FLOP/s at the start and `after` at the end say the run was disturbed, or
/// `None` when they agree within [`PEAK_AGREEMENT`] (or either is not a positive number).
pub fn peak_moved(before: f64, after: f64) -> Option<String> {
    if !(before > 0.0 && after > 0.0 && before.is_finite() && after.is_finite()) {
        return None;
    }
    let apart = (before - after).abs() / before.max(after);
    (apart > PEAK_AGREEMENT).then(|| {
        format!(
            "the FMA peak loop ran at {:.0} GFLOP/s when first measured and {:.0} GFLOP/s after the last section \
             ({:.0} % apart)",
            before / 1e9,
            after / 1e9,
            apart * 100.0
        )
    })
}

/// Timings with fewer repetitions than this say nothing of their spread (three samples of a slow
/// product have quartiles that are the samples themselves).
const MIN_REPS_FOR_SPREAD: usize = 8;

/// Nor do calls shorter than this: below a millisecond a call is at the mercy of one interrupt,
/// one cold cache line or the thread team's hand-off, and with nothing else running on this
/// 2-vCPU VM the sub-millisecond calls of `arithmetic_intensity` (ReLU at 0.25 ms, the smallest
/// products) varied 1.4–1.8× between quartiles, and 2.9× in one run. Other processes' share of
/// the cores and the hypervisor's steal still watch the sections that time them.
const MIN_SECONDS_FOR_SPREAD: f64 = 1e-3;

thread_local! {
    /// The largest spread the timings on this thread have shown since the watch started. Per
    /// thread: a section and its `in_turns` calls run on one thread, and tests run sections on
    /// several at once.
    static WORST_SPREAD: Cell<Option<f64>> = const { Cell::new(None) };
}

/// Notes a timing's spread for the watch on this thread (`in_turns` calls it for every timing).
pub fn note(t: &Timing) {
    if t.reps < MIN_REPS_FOR_SPREAD || t.median_s < MIN_SECONDS_FOR_SPREAD || !(t.q1_s > 0.0 && t.q3_s.is_finite()) {
        return;
    }
    let spread = t.q3_s / t.q1_s;
    WORST_SPREAD.with(|w| w.set(Some(w.get().map_or(spread, |x| x.max(spread)))));
}

/// Watches one section: started before it runs, finished after.
#[derive(Debug)]
pub struct Watch {
    start: Snapshot,
    host: bool,
}

impl Watch {
    /// `host`: read the machine's load (a CPU run); otherwise only the timings' spread is watched.
    pub fn start(host: bool) -> Watch {
        WORST_SPREAD.with(|w| w.set(None));
        Watch {
            start: if host { Snapshot::now() } else { Snapshot::default() },
            host,
        }
    }

    pub fn finish(self) -> Observed {
        let spread = WORST_SPREAD.with(Cell::take);
        if !self.host {
            return Observed {
                spread,
                ..Observed::default()
            };
        }
        let (others, steal) = shares(&self.start, &Snapshot::now());
        let load = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .as_deref()
            .and_then(parse_loadavg);
        Observed {
            others,
            steal,
            load,
            spread,
        }
    }
}

#[cfg(test)]
#[path = "disturbance_tests.rs"]
mod tests;
