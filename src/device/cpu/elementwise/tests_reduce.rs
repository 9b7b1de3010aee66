//! The fast reductions: `max`/`min` give the sequential loop's bits (NaN and the sign of a zero
//! included); sums follow the documented order exactly, on every instruction set and whether one
//! thread or the team runs them.

use half::{bf16, f16};

use super::reduce::SUM_BLOCK;
use super::tests::{Bits, levels, values};
use super::*;
use crate::base::{Layout, ReduceOp};
use crate::device::cpu::{BufferElement, reduce_in_order};

/// Run lengths that end in every remainder of a vector, a scratch block, a sum block and the
/// threshold for threads.
fn runs() -> Vec<usize> {
    vec![
        1,
        7,
        8,
        9,
        17,
        BLOCK + 1,
        SUM_BLOCK - 1,
        SUM_BLOCK,
        SUM_BLOCK + 1,
        PARALLEL_MIN - 1,
        PARALLEL_MIN,
        PARALLEL_MIN + 1,
    ]
}

/// The documented order, written out one element at a time: f32 lanes in a block, f64 across
/// blocks.
fn sum_in_documented_order(x: &[f32]) -> f64 {
    x.chunks(SUM_BLOCK).fold(0.0, |total, block| {
        let mut l = [0f32; 64];
        for (i, v) in block.iter().enumerate() {
            l[i % 64] += v;
        }
        // Folded in halves, written out: lane i gains lane i + 32, then i + 16, …, i + 1.
        for half in [32, 16, 8, 4, 2, 1] {
            for i in 0..half {
                l[i] += l[i + half];
            }
        }
        total + f64::from(l[0])
    })
}

/// The sequential loop's answer for `outputs` runs of `run` elements.
fn in_order<T: BufferElement>(op: ReduceOp, x: &[T], run: usize) -> Vec<T> {
    let outputs = x.len() / run;
    let buf = T::wrap(x.to_vec());
    let out = reduce_in_order(op, &buf, &Layout::contiguous(&[x.len()]), run, outputs).expect("a float reduction");
    T::slice(&out).expect("the input's dtype").to_vec()
}

fn one_thread<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a pool");
    pool.install(f)
}

fn check<T: Bits + BufferElement>(finite_only: bool) {
    for level in levels() {
        for run in runs() {
            // Two runs when short (so that the split over runs is used), one when long.
            let len = if run < PARALLEL_MIN { run * 3 } else { run };
            let mut x: Vec<T> = values(len, 5).into_iter().map(T::from_f32).collect();
            if finite_only {
                x.retain(|v| v.to_f64().is_finite());
                x.truncate(x.len() / run * run);
            }
            for op in [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min] {
                let got = reduce_runs(op, level, &x, run);
                let alone = one_thread(|| reduce_runs(op, level, &x, run));
                let want: Vec<T> = match op {
                    ReduceOp::Max | ReduceOp::Min => in_order(op, &x, run),
                    ReduceOp::Sum | ReduceOp::Mean => x
                        .chunks_exact(run)
                        .map(|r| {
                            let s = sum_in_documented_order(&r.iter().map(|v| v.to_f64() as f32).collect::<Vec<_>>());
                            let s = if s.is_nan() { f64::NAN } else { s };
                            T::from_f64(if op == ReduceOp::Mean { s / run as f64 } else { s })
                        })
                        .collect(),
                };
                let bits = |v: &[T]| v.iter().map(|x| x.bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{op:?} {:?} run {run} at {level:?}", T::DTYPE);
                assert_eq!(
                    bits(&alone),
                    bits(&want),
                    "{op:?} {:?} run {run} on one thread",
                    T::DTYPE
                );
            }
        }
    }
}

#[test]
fn reductions_follow_their_order_in_every_dtype_and_variant() {
    for finite_only in [false, true] {
        check::<f32>(finite_only);
        check::<bf16>(finite_only);
        check::<f16>(finite_only);
    }
}

/// A zero maximum or minimum has the sign of the run's first zero, as in the sequential loop;
/// one NaN anywhere makes the result NaN.
#[test]
fn zero_extremes_and_nans_match_the_sequential_loop() {
    let n = PARALLEL_MIN + 40;
    for level in levels() {
        for (first, second) in [(-0.0f32, 0.0f32), (0.0, -0.0)] {
            for at in [0, 5, 17, n / 2, n - 2] {
                let mut max_case = vec![-1.0f32; n];
                max_case[at] = first;
                max_case[at + 1] = second;
                let min_case: Vec<f32> = max_case.iter().map(|v| if *v == 0.0 { *v } else { 1.0 }).collect();
                for (op, x) in [(ReduceOp::Max, &max_case), (ReduceOp::Min, &min_case)] {
                    for run in [n, n / 8] {
                        let x = &x[..x.len() / run * run];
                        let got = reduce_runs(op, level, x, run);
                        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(
                            bits(&got),
                            bits(&in_order(op, x, run)),
                            "{op:?} {first}/{second} at {at}"
                        );
                    }
                }
            }
        }
        let mut x = vec![1.0f32; n];
        x[n - 1] = f32::NAN;
        for op in [ReduceOp::Max, ReduceOp::Min, ReduceOp::Sum] {
            assert!(reduce_runs(op, level, &x, n)[0].is_nan(), "{op:?}");
        }
    }
}
