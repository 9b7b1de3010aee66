//! Sampling: warm-up, then blocks of timed calls taken in turns (A, B, A, B, …) until every
//! contender has enough samples and enough time in them.

use super::budget::Budget;
use super::{Clock, Timing};
use crate::device::Device;
use crate::error::{Error, Result};

/// Something to time: called with a count, it runs that many timed calls and returns each one's
/// seconds (a contender in another process times itself).
pub type Contender<'a, E = Error> = &'a mut dyn FnMut(usize) -> std::result::Result<Vec<f64>, E>;

/// A contender that times each call of `f` on `clock`.
pub fn contender<'a, E: From<Error>>(
    clock: Clock,
    mut f: impl FnMut() -> std::result::Result<(), E> + 'a,
) -> impl FnMut(usize) -> std::result::Result<Vec<f64>, E> + 'a {
    move |count| clock.time_calls(count, &mut || Ok(()), &mut |()| f())
}

/// A contender whose every timed call of `f` first gets an untimed `setup` (a backward pass needs
/// a fresh forward graph every time).
pub fn contender_with_setup<'a, S, E: From<Error>>(
    clock: Clock,
    mut setup: impl FnMut() -> std::result::Result<S, E> + 'a,
    mut f: impl FnMut(S) -> std::result::Result<(), E> + 'a,
) -> impl FnMut(usize) -> std::result::Result<Vec<f64>, E> + 'a {
    move |count| clock.time_calls(count, &mut setup, &mut f)
}

/// Times `f` on `device` (see `in_turns`).
pub fn time(device: &Device, budget: Budget, f: impl FnMut() -> Result<()>) -> Result<Timing> {
    let mut c = contender(Clock::for_device(device), f);
    Ok(in_turns(budget, &mut [&mut c])?[0])
}

/// Times each of `runs` on `device`, in turns (see `in_turns`): what `time` does for one, for
/// several that are to be compared.
pub fn time_each<F: FnMut() -> Result<()>>(
    device: &Device,
    budget: Budget,
    runs: impl IntoIterator<Item = F>,
) -> Result<Vec<Timing>> {
    let clock = Clock::for_device(device);
    let mut contenders: Vec<_> = runs.into_iter().map(|f| contender(clock.clone(), f)).collect();
    let mut turns: Vec<Contender<'_>> = contenders.iter_mut().map(|c| c as Contender<'_>).collect();
    in_turns(budget, &mut turns)
}

/// Like `time`, but each call first runs an untimed `setup` whose result the timed `f` consumes.
pub fn time_with_setup<S>(
    device: &Device,
    budget: Budget,
    setup: impl FnMut() -> Result<S>,
    f: impl FnMut(S) -> Result<()>,
) -> Result<Timing> {
    let mut c = contender_with_setup(Clock::for_device(device), setup, f);
    Ok(in_turns(budget, &mut [&mut c])?[0])
}

/// Warm-up calls in growing batches (1, 2, 4, …) until there are `budget.warmup` of them and
/// `budget.warmup_time` in them; returns how many and the fastest. A budget of neither (the
/// tests') makes none: the blocks are then one call each.
fn warm_up<E: From<Error>>(budget: &Budget, f: Contender<'_, E>) -> std::result::Result<(usize, f64), E> {
    let (mut calls, mut spent, mut fastest, mut batch) = (0, 0.0, f64::INFINITY, 1);
    while calls < budget.warmup || spent < budget.warmup_time.as_secs_f64() {
        // Once the time is reached, only the missing count.
        let count = if spent >= budget.warmup_time.as_secs_f64() {
            budget.warmup - calls
        } else {
            batch
        };
        let times = f(count)?;
        if times.is_empty() {
            return Err(Error::invalid("timing", "a contender returned no samples").into());
        }
        calls += times.len();
        spent += times.iter().sum::<f64>();
        fastest = times.iter().copied().fold(fastest, f64::min);
        batch = (batch * 2).min(1024);
    }
    Ok((calls, fastest))
}

/// The timing of each contender: untimed warm-up calls (the fastest sizes its blocks), then
/// blocks of about `budget.block` each, in turns, until every contender is done (`Budget`).
pub fn in_turns<E: From<Error>>(
    budget: Budget,
    contenders: &mut [Contender<'_, E>],
) -> std::result::Result<Vec<Timing>, E> {
    Ok(in_turns_sampled(budget, contenders)?
        .into_iter()
        .map(|s| s.timing)
        .collect())
}

/// A contender's timing and the seconds per call it was made from, for ratio intervals
/// (`interval.rs`).
#[derive(Debug, Clone)]
pub struct Sampled {
    pub timing: Timing,
    pub samples: Vec<f64>,
}

/// [`in_turns`], keeping each contender's samples beside its timing.
pub fn in_turns_sampled<E: From<Error>>(
    budget: Budget,
    contenders: &mut [Contender<'_, E>],
) -> std::result::Result<Vec<Sampled>, E> {
    let budget = super::budget::scaled(budget);
    let mut per_block = Vec::with_capacity(contenders.len());
    let mut warmups = Vec::with_capacity(contenders.len());
    for f in contenders.iter_mut() {
        // Sized from a warm call: a first call that pays for cold caches or sleeping threads
        // would make the blocks short, and short blocks are mostly hand-over.
        let (calls, fastest) = warm_up(&budget, &mut **f)?;
        warmups.push(calls);
        let count = (budget.block.as_secs_f64() / fastest.max(1e-9)).round() as usize;
        per_block.push(count.clamp(1, budget.max_samples.max(1)));
    }
    let mut samples = vec![Vec::new(); contenders.len()];
    while !samples.iter().all(|s| budget.done(s)) {
        for ((f, s), &count) in contenders.iter_mut().zip(&mut samples).zip(&per_block) {
            if budget.done(s) {
                continue;
            }
            let room = budget.max_samples.saturating_sub(s.len());
            let times = f(count.min(room))?;
            if times.is_empty() {
                return Err(Error::invalid("timing", "a contender returned no samples").into());
            }
            s.extend(times);
            if !budget.settle.is_zero() {
                std::thread::sleep(budget.settle);
            }
        }
    }
    let sampled: Vec<Sampled> = samples
        .into_iter()
        .zip(warmups)
        .map(|(mut s, w)| Sampled {
            timing: Timing::from_samples(&mut s, w),
            samples: s,
        })
        .collect();
    // The watch around the section judges whether these repetitions were disturbed.
    sampled.iter().for_each(|s| super::disturbance::note(&s.timing));
    Ok(sampled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn counting(calls: &mut usize, seconds: f64) -> impl FnMut(usize) -> Result<Vec<f64>> + '_ {
        move |n| {
            *calls += n;
            Ok(vec![seconds; n])
        }
    }

    #[test]
    fn exact_count_after_warmup() {
        let mut calls = 0;
        let t = time(&Device::Cpu, Budget::count(2, 5), || {
            calls += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((calls, t.reps, t.warmup), (7, 5, 2));
    }

    #[test]
    fn no_warmup_means_no_untimed_call() {
        // The tests' budget (`budget::scaled`): one timed call and nothing before it.
        let mut calls = 0;
        let t = time(&Device::Cpu, Budget::count(0, 1), || {
            calls += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((calls, t.reps, t.warmup), (1, 1, 0));
    }

    /// Times that are exact in binary, so the sums below are exact.
    const MS: f64 = 1.0 / 1024.0;

    fn exact_budget() -> Budget {
        Budget {
            warmup: 3,
            warmup_time: Duration::from_secs_f64(1.0 / 128.0),
            min_samples: 3,
            min_time: Duration::from_secs_f64(0.25),
            max_samples: 1_000_000,
            block: Duration::from_secs_f64(1.0 / 32.0),
            settle: Duration::ZERO,
        }
    }

    #[test]
    fn time_decides_the_count_not_a_cap() {
        // Calls of about 1 and 2 ms and a quarter second: 256 and 128 samples (the old cap was 200).
        let (mut a, mut b) = (0, 0);
        let (mut fa, mut fb) = (counting(&mut a, MS), counting(&mut b, 2.0 * MS));
        let t = in_turns(exact_budget(), &mut [&mut fa, &mut fb]).unwrap();
        assert_eq!((t[0].reps, t[1].reps), (256, 128), "{t:?}");
        // Warm-up in batches 1, 2, 4, 8 until ≥ 3 calls and ≥ 1/128 s: 15 and 7 calls.
        assert_eq!((t[0].warmup, t[1].warmup), (15, 7));
        drop((fa, fb));
        assert_eq!((a, b), (256 + 15, 128 + 7));
    }

    #[test]
    fn slow_calls_still_get_min_samples() {
        let mut calls = 0;
        let mut f = counting(&mut calls, 2.0);
        let t = in_turns(Budget::lecture(), &mut [&mut f]).unwrap();
        assert_eq!((t[0].reps, t[0].warmup, t[0].median_s), (3, 1, 2.0));
    }

    #[test]
    fn contenders_alternate_block_by_block() {
        use std::cell::RefCell;
        let order = RefCell::new(Vec::new());
        let mut fa = |n: usize| -> Result<Vec<f64>> {
            order.borrow_mut().push('a');
            Ok(vec![MS; n])
        };
        let mut fb = |n: usize| -> Result<Vec<f64>> {
            order.borrow_mut().push('b');
            Ok(vec![MS; n])
        };
        let budget = Budget {
            warmup: 1,
            warmup_time: Duration::ZERO,
            ..exact_budget()
        };
        in_turns(budget, &mut [&mut fa, &mut fb]).unwrap();
        let timed: String = order.borrow()[2..].iter().collect();
        assert_eq!(
            timed,
            "ab".repeat(8),
            "one warm-up call each, then eight 32-call blocks in turns"
        );
    }

    #[test]
    fn a_contender_with_no_samples_is_an_error() {
        let mut f = |_: usize| -> Result<Vec<f64>> { Ok(vec![]) };
        assert!(in_turns(Budget::lecture(), &mut [&mut f]).is_err());
    }
}
