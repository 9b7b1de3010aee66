//! Medians of many samples, taken in turns. A median ignores the odd slow sample a busy machine
//! produces, and taking turns in short blocks (A, B, C, A, B, C, …) spreads slow phases of the
//! machine (another process compiling, say) over every contender instead of one.

use std::time::{Duration, Instant};

/// How long and how often to sample.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Sample until every contender has at least this many samples…
    pub min_samples: usize,
    /// …and at least this much time in them.
    pub min_time: Duration,
    /// But never more samples than this per contender.
    pub max_samples: usize,
    /// About how long one turn lasts.
    pub turn: Duration,
    /// Idle time after each turn. BLAS libraries keep their threads spinning for a while after a
    /// call (OpenBLAS for up to 2^28 cycles), which would steal the cores from the next
    /// contender; the pause lets them go to sleep first.
    pub settle: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            min_samples: 15,
            min_time: Duration::from_millis(1500),
            max_samples: 5000,
            turn: Duration::from_millis(150),
            settle: Duration::from_millis(150),
        }
    }
}

pub use crate::timing::median;

/// Something to time: called with a count, it runs that many timed calls and returns each one's
/// seconds (a contender in another process times itself).
pub type Contender<'a> = &'a mut dyn FnMut(usize) -> anyhow::Result<Vec<f64>>;

/// Times each call of `f` here.
pub fn local(mut f: impl FnMut() -> anyhow::Result<()>) -> impl FnMut(usize) -> anyhow::Result<Vec<f64>> {
    move |count| {
        (0..count)
            .map(|_| {
                let start = Instant::now();
                f()?;
                Ok(start.elapsed().as_secs_f64())
            })
            .collect()
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub median_s: f64,
    pub count: usize,
}

/// Median seconds of each contender. Three untimed warm-up calls each (the fastest sizes the turns), then turns of about
/// `budget.turn` each until every contender has enough samples.
pub fn in_turns(budget: Budget, contenders: &mut [Contender<'_>]) -> anyhow::Result<Vec<Sample>> {
    let mut per_turn = Vec::with_capacity(contenders.len());
    for f in contenders.iter_mut() {
        // Size the turns from a warm call: a first call that pays for cold caches or sleeping
        // threads would make that contender's turns short, and short turns are mostly warm-up.
        let warm = f(3)?.into_iter().fold(f64::INFINITY, f64::min);
        per_turn.push(((budget.turn.as_secs_f64() / warm.max(1e-9)) as usize).clamp(1, 1000));
    }
    let mut samples = vec![Vec::new(); contenders.len()];
    loop {
        for ((f, s), &count) in contenders.iter_mut().zip(&mut samples).zip(&per_turn) {
            let room = budget.max_samples.saturating_sub(s.len());
            if room > 0 {
                s.extend(f(count.min(room))?);
                std::thread::sleep(budget.settle);
            }
        }
        let done = |s: &Vec<f64>| {
            s.len() >= budget.max_samples
                || (s.len() >= budget.min_samples && s.iter().sum::<f64>() >= budget.min_time.as_secs_f64())
        };
        if samples.iter().all(done) {
            break;
        }
    }
    Ok(samples
        .into_iter()
        .map(|mut s| Sample {
            count: s.len(),
            median_s: median(&mut s),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }

    #[test]
    fn every_contender_gets_its_minimum_and_a_warm_up() {
        let (mut a, mut b) = (0, 0);
        let budget = Budget {
            min_samples: 5,
            min_time: Duration::ZERO,
            max_samples: 7,
            turn: Duration::ZERO,
            settle: Duration::ZERO,
        };
        let mut fa = local(|| {
            a += 1;
            Ok(())
        });
        let mut fb = local(|| {
            b += 1;
            Ok(())
        });
        let s = in_turns(budget, &mut [&mut fa, &mut fb]).unwrap();
        assert!(s.iter().all(|x| (5..=7).contains(&x.count)), "{s:?}");
        drop((fa, fb));
        assert_eq!(a, s[0].count + 3, "three warm-up calls plus the samples");
        assert_eq!(b, s[1].count + 3);
    }
}
