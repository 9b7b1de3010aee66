//! How long a value's history may be in a trace. A section that records a value in a long loop
//! (a loss at every step) keeps every state up to `MAX_HISTORY`; beyond that, evenly spaced
//! states, always the first and the last, so the trace stays small and a reader stepping through
//! still sees the whole course.

/// The most states (history and final state together) a value keeps in a trace.
pub const MAX_HISTORY: usize = 64;

/// Which of `n` states, in order, survive: all of them while `n <= MAX_HISTORY`, else
/// `MAX_HISTORY` states evenly spaced from the first to the last (index `round(i·(n−1)/(M−1))`).
pub fn surviving(n: usize) -> Vec<usize> {
    if n <= MAX_HISTORY {
        return (0..n).collect();
    }
    let (span, gaps) = (n - 1, MAX_HISTORY - 1);
    (0..MAX_HISTORY).map(|i| (i * span + gaps / 2) / gaps).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_histories_are_kept_whole() {
        assert_eq!(surviving(0), Vec::<usize>::new());
        assert_eq!(surviving(1), vec![0]);
        assert_eq!(surviving(MAX_HISTORY), (0..MAX_HISTORY).collect::<Vec<_>>());
    }

    #[test]
    fn long_histories_keep_evenly_spaced_states_with_both_ends() {
        for n in [MAX_HISTORY + 1, 100, 300, 1001, 1_000_000] {
            let kept = surviving(n);
            assert_eq!(kept.len(), MAX_HISTORY, "n = {n}");
            assert_eq!((kept[0], kept[MAX_HISTORY - 1]), (0, n - 1), "n = {n}");
            let gaps: Vec<usize> = kept.windows(2).map(|w| w[1] - w[0]).collect();
            let (lo, hi) = (gaps.iter().min().copied(), gaps.iter().max().copied());
            assert!(lo >= Some(1), "strictly increasing, n = {n}");
            // Evenly spaced: every gap is the ideal (n−1)/(M−1) rounded down or up.
            let ideal = (n - 1) as f64 / (MAX_HISTORY - 1) as f64;
            assert!(
                lo >= Some(ideal.floor() as usize) && hi <= Some(ideal.ceil() as usize),
                "n = {n}: gaps {lo:?}..{hi:?}, ideal {ideal}"
            );
        }
        // 127 states: every other one.
        assert_eq!(surviving(127), (0..127).step_by(2).collect::<Vec<_>>());
    }
}
