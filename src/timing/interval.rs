//! How sure a speed ratio is: a 95 % interval for "our speed over theirs" from the samples both
//! contenders took in turns. Two runs of a benchmark on a 2-vCPU machine can disagree widely
//! near a ratio of 1 (0.89 and 2.02 for one shape, measured), so a ratio alone cannot say whether
//! a shape really missed. The interval is a bootstrap of the ratio of medians: each contender's
//! samples are drawn again with replacement, the medians' ratio computed, many times over, and
//! the middle 95 % of those ratios kept. A shape *misses* only when its whole interval lies below
//! one; a table marks it `!`.

use serde::Serialize;

use crate::rng::Rng;

/// Resamples per interval: enough for stable 2.5 % and 97.5 % points (50 ratios beyond each).
const RESAMPLES: usize = 2000;

/// A speed ratio (their median time over ours: above one, we are faster) and its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RatioInterval {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
}

impl RatioInterval {
    /// Our speed over theirs, from each contender's seconds per call. None where either has no
    /// sample. Seeded, so the same samples give the same interval.
    pub fn of(ours: &[f64], theirs: &[f64]) -> Option<RatioInterval> {
        if ours.is_empty() || theirs.is_empty() {
            return None;
        }
        let ratio = median(&mut theirs.to_vec()) / median(&mut ours.to_vec());
        let mut rng = Rng::seed(0x5EED);
        let (mut a, mut b) = (vec![0.0; ours.len()], vec![0.0; theirs.len()]);
        let mut ratios: Vec<f64> = (0..RESAMPLES)
            .map(|_| {
                a.iter_mut().for_each(|x| *x = ours[rng.below(ours.len())]);
                b.iter_mut().for_each(|x| *x = theirs[rng.below(theirs.len())]);
                median(&mut b) / median(&mut a)
            })
            .collect();
        ratios.sort_by(f64::total_cmp);
        let at = |q: f64| ratios[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
        Some(RatioInterval {
            ratio,
            low: at(0.025).min(ratio),
            high: at(0.975).max(ratio),
        })
    }

    /// Whether the whole interval lies below one: the reference was faster beyond the noise.
    pub fn misses(&self) -> bool {
        self.high < 1.0
    }

    /// `1.23× [1.10–1.35]`, with a mark where it misses (`0.91× [0.86–0.98]!`), the same width
    /// either way so that a table's columns stay aligned.
    pub fn label(&self) -> String {
        let miss = if self.misses() { "!" } else { " " };
        format!("{:.2}× [{:.2}–{:.2}]{miss}", self.ratio, self.low, self.high)
    }
}

/// The geometric mean of ratios (None for none): how a table's shapes fare together, where one
/// shape twice as fast and one half as fast cancel.
pub fn geometric_mean(ratios: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = ratios
        .into_iter()
        .filter(|r| r.is_finite() && *r > 0.0)
        .fold((0.0, 0usize), |(s, n), r| (s + r.ln(), n + 1));
    (n > 0).then(|| (sum / n as f64).exp())
}

/// The median as `Timing` takes it, so that a ratio here is the one of the timings' medians.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    super::quantile(v, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noisy(center: f64, spread: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Rng::seed(seed);
        (0..n)
            .map(|_| center * (1.0 + spread * (rng.uniform() - 0.5)))
            .collect()
    }

    #[test]
    fn identical_timings_give_a_point() {
        let r = RatioInterval::of(&[2.0; 9], &[3.0; 12]).expect("samples");
        assert_eq!((r.ratio, r.low, r.high), (1.5, 1.5, 1.5));
        assert!(!r.misses());
        assert_eq!(r.label(), "1.50× [1.50–1.50] ");
    }

    #[test]
    fn a_clear_loss_misses_and_a_noisy_tie_does_not() {
        // Theirs 20 % faster, each with ±5 % noise: the interval lies below one.
        let lost = RatioInterval::of(&noisy(1.2, 0.1, 40, 1), &noisy(1.0, 0.1, 40, 2)).expect("samples");
        assert!(lost.high < 1.0 && lost.low > 0.75, "{lost:?}");
        assert!(lost.misses());
        assert!(lost.label().ends_with("]!"), "{}", lost.label());
        // The same medians with ±60 % noise and few samples: the interval reaches past one.
        let tie = RatioInterval::of(&noisy(1.05, 1.2, 6, 3), &noisy(1.0, 1.2, 6, 4)).expect("samples");
        assert!(tie.low < 1.0 && tie.high > 1.0, "{tie:?}");
        assert!(!tie.misses());
    }

    #[test]
    fn the_interval_holds_the_ratio_and_narrows_with_samples() {
        let few = RatioInterval::of(&noisy(1.0, 0.4, 8, 5), &noisy(2.0, 0.4, 8, 6)).expect("samples");
        let many = RatioInterval::of(&noisy(1.0, 0.4, 400, 7), &noisy(2.0, 0.4, 400, 8)).expect("samples");
        for r in [few, many] {
            assert!(r.low <= r.ratio && r.ratio <= r.high, "{r:?}");
        }
        assert!(many.high - many.low < few.high - few.low, "{few:?} {many:?}");
        assert!((many.ratio - 2.0).abs() < 0.1, "{many:?}");
    }

    #[test]
    fn no_samples_no_interval() {
        assert_eq!(RatioInterval::of(&[], &[1.0]), None);
        assert_eq!(RatioInterval::of(&[1.0], &[]), None);
    }

    #[test]
    fn the_geometric_mean_cancels_reciprocals() {
        let g = geometric_mean([2.0, 0.5, 1.0]).expect("ratios");
        assert!((g - 1.0).abs() < 1e-12, "{g}");
        assert_eq!(geometric_mean([4.0, 1.0]), Some(2.0));
        assert_eq!(geometric_mean(std::iter::empty()), None);
    }
}
