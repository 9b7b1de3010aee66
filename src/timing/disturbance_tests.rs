//! The detector's pure logic, on `/proc` text as the kernel writes it.

use super::*;

const STAT_A: &str = "cpu  1000 10 200 5000 40 0 50 0 0 0\n\
cpu0 500 5 100 2500 20 0 25 0 0 0\n\
cpu1 500 5 100 2500 20 0 25 0 0 0\n\
intr 12345 0 0\n\
ctxt 99\n\
procs_running 3\n\
procs_blocked 0\n";

#[test]
fn proc_stat_sums_the_cpu_line() {
    let t = parse_proc_stat(STAT_A).expect("parses");
    assert_eq!(
        t,
        CpuTicks {
            busy: 1000 + 10 + 200 + 50,
            steal: 0,
            total: 1000 + 10 + 200 + 5000 + 40 + 50,
            procs_running: Some(3),
        }
    );
    // Steal is the eighth field; guest time (ninth, tenth) is inside user and not added again.
    let vm = parse_proc_stat("cpu  100 0 0 800 0 0 0 100 70 0\n").expect("parses");
    assert_eq!((vm.steal, vm.total, vm.procs_running), (100, 1000, None));
    // An old kernel's four fields.
    assert_eq!(parse_proc_stat("cpu 1 2 3 4\n").map(|t| t.total), Some(10));
}

#[test]
fn unreadable_proc_stat_is_unknown() {
    for text in ["", "cpu0 1 2 3 4\n", "cpu  a b c d\n", "cpu  1 2\n"] {
        assert_eq!(parse_proc_stat(text), None, "{text:?}");
    }
}

#[test]
fn loadavg_is_its_first_field() {
    assert_eq!(parse_loadavg("8.66 7.41 6.60 13/176 2149\n"), Some(8.66));
    assert_eq!(parse_loadavg(""), None);
    assert_eq!(parse_loadavg("nan 1 1"), None);
}

#[test]
fn self_stat_counts_after_the_name() {
    // A name with spaces and a parenthesis of its own; utime 7, stime 3, cutime 2, cstime 1.
    let text = "42 (my (odd) name) R 1 42 1 0 -1 4194304 99 0 0 0 7 3 2 1 20 0 1 0 283948";
    assert_eq!(parse_self_stat(text), Some(13));
    assert_eq!(parse_self_stat("42 (cut) R 1 2"), None);
    assert_eq!(parse_self_stat("no name at all"), None);
}

fn snapshot(busy: u64, steal: u64, total: u64, own: u64) -> Snapshot {
    Snapshot {
        machine: Some(CpuTicks {
            busy,
            steal,
            total,
            procs_running: None,
        }),
        own: Some(own),
    }
}

#[test]
fn shares_are_of_all_cores_time() {
    // 200 ticks of two cores: this process used 100, others 80, the hypervisor 10.
    let (others, steal) = shares(&snapshot(1000, 5, 10_000, 50), &snapshot(1180, 15, 10_200, 150));
    assert_eq!((others, steal), (Some(0.4), Some(0.05)));
    // Too short an interval to judge; a missing reading.
    assert_eq!(shares(&snapshot(0, 0, 0, 0), &snapshot(10, 0, 20, 0)), (None, None));
    let unknown_own = Snapshot {
        own: None,
        ..snapshot(1180, 15, 10_200, 150)
    };
    assert_eq!(shares(&snapshot(1000, 5, 10_000, 50), &unknown_own), (None, Some(0.05)));
    assert_eq!(shares(&Snapshot::default(), &Snapshot::default()), (None, None));
    // This process's ticks counted past the machine's (different sampling): never below zero.
    assert_eq!(shares(&snapshot(0, 0, 0, 0), &snapshot(50, 0, 100, 60)).0, Some(0.0));
}

#[test]
fn the_rule_names_each_reason() {
    let quiet = Observed {
        others: Some(0.02),
        steal: Some(0.0),
        load: Some(2.1),
        spread: Some(1.05),
    };
    assert_eq!(RULE.why(&quiet, true), None);
    assert_eq!(RULE.why(&Observed::default(), true), None, "unknown is not disturbed");
    let busy = Observed {
        others: Some(0.48),
        ..quiet
    };
    assert_eq!(
        RULE.why(&busy, true).as_deref(),
        Some("other processes used 48 % of the CPU time")
    );
    // A GPU's timings are judged by their spread alone.
    assert_eq!(RULE.why(&busy, false), None);
    let all = Observed {
        others: Some(0.3),
        steal: Some(0.1),
        load: None,
        spread: Some(2.0),
    };
    assert_eq!(
        RULE.why(&all, true).as_deref(),
        Some(
            "other processes used 30 % of the CPU time; the hypervisor stole 10 % of it; repetitions of one \
             timing varied 2.0× (q3/q1)"
        )
    );
    assert!(RULE.why(&all, false).is_some_and(|w| w.starts_with("repetitions")));
}

#[test]
fn the_watch_keeps_the_widest_spread_of_timings_with_enough_repetitions() {
    let timing = |q1_s: f64, q3_s: f64, reps: usize| Timing {
        median_s: q1_s,
        min_s: q1_s,
        q1_s,
        q3_s,
        max_s: q3_s,
        reps,
        warmup: 1,
    };
    let watch = Watch::start(false);
    note(&timing(1.0, 1.2, 100));
    note(&timing(1.0, 3.0, 100));
    note(&timing(1.0, 9.0, 3)); // too few repetitions to say
    note(&timing(0.0, 1.0, 100)); // no first quartile to divide by
    note(&timing(100e-6, 900e-6, 100)); // below a millisecond: one interrupt's worth, not a busy machine
    let seen = watch.finish();
    assert_eq!((seen.spread, seen.others, seen.load), (Some(3.0), None, None));
    // A new watch starts afresh.
    assert_eq!(Watch::start(false).finish().spread, None);
}

#[test]
fn peaks_before_and_after_agree_within_ten_percent() {
    assert_eq!(peak_moved(492e9, 470e9), None);
    assert_eq!(
        peak_moved(492e9, 281e9).as_deref(),
        Some(
            "the FMA peak loop ran at 492 GFLOP/s when first measured and 281 GFLOP/s after the last section (43 % apart)"
        )
    );
    assert!(peak_moved(281e9, 492e9).is_some(), "either way round");
    for unknown in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(peak_moved(unknown, 492e9), None);
        assert_eq!(peak_moved(492e9, unknown), None);
    }
}
