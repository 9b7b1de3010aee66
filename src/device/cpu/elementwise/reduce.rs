//! Reductions whose outputs are each one contiguous run of the input (a whole contiguous tensor,
//! or its last dimensions), vectorised and split over the team's threads.
//!
//! The order of a float sum is fixed, whatever the instruction set or the number of threads, so
//! every machine gives the same bits: a run is cut into blocks of [`SUM_BLOCK`] elements from its
//! start; in a block, element `i` is added (in f32, in index order) into lane `i mod 64` of
//! `LANES`; the lanes are folded in halves (`fold_halves`: lane `i` gains lane `i + 32`, then
//! `i + 16`, …, down to one); the block sums are added in f64, in index order, starting from 0; a
//! NaN sum is `f64::NAN`, whatever NaN the additions left. Each f32 lane adds only 64 elements
//! (a cascade, as PyTorch's CPU sum is), and the blocks add up in f64. (A sequential sum is one
//! long chain of dependent additions, 4 cycles each; 64 lanes are four AVX-512 registers, four
//! independent chains. f64 lanes, converted from f32, read at half PyTorch's speed from L2.)
//! `max`/`min` do not depend on the order; they give what the sequential loop
//! gives, NaN (if any element is one) and the sign of a zero maximum included.

use std::mem::MaybeUninit;

use super::kernels::{Level, PARALLEL_MIN, fill_fresh};
use super::lane::{BLOCK, Lane};
use crate::base::{Element, ReduceOp};
use crate::device::cpu::team::Shared;
use crate::device::cpu::team::{Split, in_chunks};

/// Elements per block of a sum (a multiple of `BLOCK`, and so of the 8 lanes).
pub(crate) const SUM_BLOCK: usize = 8 * BLOCK;

/// How a long run is shared out: whole blocks, a few at a time.
pub(super) const LONG_RUN: Split = Split {
    parallel_min: PARALLEL_MIN,
    chunk: SUM_BLOCK * BLOCKS_PER_CLAIM,
};

/// Blocks of one long run that a thread claims at a time.
const BLOCKS_PER_CLAIM: usize = 4;

/// `lanes` added up in the fixed order of the module docs: lane `i` gains lane `i + 32`, then
/// `i + 16`, …, `i + 1`; lane 0 is the sum. Each step writes a new, half-size array (not the
/// lanes in place), so that the compiler keeps them in registers: folding in place went through
/// the stack and cost as much as reading a short row.
#[inline(always)]
pub(crate) fn fold_halves(lanes: [f32; LANES]) -> f32 {
    let l: [f32; 32] = half(&lanes);
    fold_sixteen(half(&l))
}

/// The last steps of [`fold_halves`], from 16 lanes (lane `i` gains lane `i + 8`, …, `i + 1`):
/// for loops that fold their first two steps in registers (`dot_f32`).
#[inline(always)]
pub(crate) fn fold_sixteen(l: [f32; 16]) -> f32 {
    let l: [f32; 8] = half(&l);
    let l: [f32; 4] = half(&l);
    let l: [f32; 2] = half(&l);
    l[0] + l[1]
}

/// One step of the fold: lane `i` gains lane `i + H`.
#[inline(always)]
fn half<const N: usize, const H: usize>(l: &[f32; N]) -> [f32; H] {
    std::array::from_fn(|i| l[i] + l[i + H])
}

/// Partial sums of a reduction or a dot product: four AVX-512 registers of f32, four independent
/// chains of additions (one chain, 4 cycles an addition, reads a fraction of what L2 delivers).
pub(crate) const LANES: usize = 64;

/// `Σ f(a[i], b[i])` over one block (`a.len() == b.len() <= SUM_BLOCK`) in f32, in the fixed
/// order of the module docs: a sum is `f = |x, _| x` over `b = a`, a dot product `f = |x, y| x·y`.
#[inline(always)]
pub(crate) fn block_sum_of<A: Lane, B: Lane, F: Fn(f32, f32) -> f32>(a: &[A], b: &[B], f: F) -> f32 {
    let mut lanes = [0f32; LANES];
    let (mut ra, mut rb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    for (ca, cb) in (&mut ra).zip(&mut rb) {
        for ((l, &x), &y) in lanes.iter_mut().zip(ca).zip(cb) {
            *l += f(x.lane_f32(), y.lane_f32());
        }
    }
    // The block's last, short run of lanes (one element at a time: a padded copy would be
    // written narrow and read wide, which stalls the loads), into lanes of its own.
    let mut tail = [0f32; LANES];
    for ((l, &x), &y) in tail.iter_mut().zip(ra.remainder()).zip(rb.remainder()) {
        *l += f(x.lane_f32(), y.lane_f32());
    }
    add_tail(&mut lanes, &tail);
    fold_halves(lanes)
}

/// Adds a block's short last run, summed into lanes of its own from 0, to its lanes: the same
/// bits as adding each element into its lane directly (`0 + v` is `v`; a lane's sum, begun at +0,
/// is never -0, so adding a +0 that stands for no element changes nothing). Kept apart because a
/// loop that indexes lanes by its count makes the compiler keep all of them in memory, and the
/// main loop then stores and reloads them on every step (a fifth of a matrix-vector product's
/// time in L2, by `perf`).
#[inline(always)]
pub(crate) fn add_tail(lanes: &mut [f32; LANES], tail: &[f32; LANES]) {
    for (l, t) in lanes.iter_mut().zip(tail) {
        *l += t;
    }
}

/// `run`'s sum in the fixed order above, for one block (`x.len() <= SUM_BLOCK`), into f64.
#[inline(always)]
fn block_sum<T: Lane>(x: &[T]) -> f64 {
    f64::from(block_sum_of(x, x, |v, _| v))
}

/// The largest (`MAX`) or smallest element of a slice as f32, and whether any is NaN. Ties keep
/// the value seen first in each lane; [`zero_sign`] settles the one tie whose bits differ.
#[inline(always)]
fn block_extreme<T: Lane, const MAX: bool>(x: &[T]) -> (f32, bool) {
    let start = if MAX { f32::NEG_INFINITY } else { f32::INFINITY };
    let mut best = [start; 16];
    let mut nan = [false; 16];
    let mut wide = [0f32; BLOCK];
    for part in x.chunks(BLOCK) {
        let wide = &mut wide[..part.len()];
        T::widen(part, wide);
        for v in wide.chunks(16) {
            for ((b, n), &x) in best.iter_mut().zip(nan.iter_mut()).zip(v) {
                let better = if MAX { x > *b } else { x < *b };
                *b = if better { x } else { *b };
                *n |= x.is_nan();
            }
        }
    }
    let pick = |a: f32, b: f32| if (MAX && b > a) || (!MAX && b < a) { b } else { a };
    (best.into_iter().fold(start, pick), nan.contains(&true))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn block_sum_avx512<T: Lane>(x: &[T]) -> f64 {
    block_sum(x)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn block_sum_avx2<T: Lane>(x: &[T]) -> f64 {
    block_sum(x)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn block_extreme_avx512<T: Lane, const MAX: bool>(x: &[T]) -> (f32, bool) {
    block_extreme::<T, MAX>(x)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn block_extreme_avx2<T: Lane, const MAX: bool>(x: &[T]) -> (f32, bool) {
    block_extreme::<T, MAX>(x)
}

/// [`block_sum`] at `level` (every level gives the same bits: the order is written out).
fn block_sum_at<T: Lane>(level: Level, x: &[T]) -> f64 {
    match level {
        // SAFETY: `Level::current` only returns a level this CPU has.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { block_sum_avx512(x) },
        // SAFETY: as the arm above.
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { block_sum_avx2(x) },
        _ => block_sum(x),
    }
}

/// [`block_extreme`] at `level`.
fn block_extreme_at<T: Lane, const MAX: bool>(level: Level, x: &[T]) -> (f32, bool) {
    match level {
        // SAFETY: as in `block_sum_at`.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { block_extreme_avx512::<T, MAX>(x) },
        // SAFETY: as the arm above.
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { block_extreme_avx2::<T, MAX>(x) },
        _ => block_extreme::<T, MAX>(x),
    }
}

/// `part(block)` for every block of `x` (cut as [`LONG_RUN`] cuts it), on the team's threads
/// when `x` is long; the results in block order.
fn per_block<T: Lane, R: Copy + Send>(x: &[T], block: usize, part: &(dyn Fn(&[T]) -> R + Sync)) -> Vec<R> {
    per_block_range(x.len(), block, &|r| part(&x[r]))
}

/// `part(range)` for every block `range` of `0..len` (`block` divides `LONG_RUN.chunk`), on the
/// team's threads when `len` is long; the results in block order.
pub(super) fn per_block_range<R: Copy + Send>(
    len: usize,
    block: usize,
    part: &(dyn Fn(std::ops::Range<usize>) -> R + Sync),
) -> Vec<R> {
    let count = len.div_ceil(block);
    let mut out: Vec<R> = Vec::with_capacity(count);
    let dst = Shared(out.spare_capacity_mut().as_mut_ptr());
    in_chunks(len, LONG_RUN, &|r| {
        // `LONG_RUN.chunk` is a multiple of `block`, so every range starts at a block.
        for (i, start) in r.clone().step_by(block).enumerate() {
            let result = part(start..(start + block).min(r.end));
            // SAFETY: block `r.start / block + i` lies in this range alone, below `count`.
            unsafe { (*dst.get().add(r.start / block + i)).write(result) };
        }
    });
    // SAFETY: the ranges covered `0..len`, so every block's result was written.
    unsafe { out.set_len(count) };
    out
}

/// The sum of one run, in the fixed order of the module docs.
fn run_sum<T: Lane>(level: Level, x: &[T]) -> f64 {
    if x.len() < PARALLEL_MIN {
        return x.chunks(SUM_BLOCK).fold(0.0, |s, b| s + block_sum_at(level, b));
    }
    per_block(x, SUM_BLOCK, &|b| block_sum_at(level, b))
        .into_iter()
        .fold(0.0, |s, b| s + b)
}

/// The largest (`MAX`) or smallest element of one non-empty run, as the sequential loop finds it:
/// NaN if any element is NaN; a zero extreme has the sign of the first zero in the run (the
/// sequential loop keeps the value it holds on a tie, and ±0 tie).
fn run_extreme<T: Lane, const MAX: bool>(level: Level, x: &[T]) -> f64 {
    let (best, nan) = if x.len() < PARALLEL_MIN {
        block_extreme_at::<T, MAX>(level, x)
    } else {
        let parts = per_block(x, LONG_RUN.chunk, &|b| block_extreme_at::<T, MAX>(level, b));
        let start = if MAX { f32::NEG_INFINITY } else { f32::INFINITY };
        parts.into_iter().fold((start, false), |(a, an), (b, bn)| {
            let better = if MAX { b > a } else { b < a };
            (if better { b } else { a }, an || bn)
        })
    };
    if nan {
        return f64::NAN;
    }
    if best == 0.0 {
        return zero_sign(x);
    }
    f64::from(best)
}

/// The first zero of a run whose extreme is zero (so it has one), with its sign.
fn zero_sign<T: Lane>(x: &[T]) -> f64 {
    let mut wide = [0f32; BLOCK];
    for part in x.chunks(BLOCK) {
        let wide = &mut wide[..part.len()];
        T::widen(part, wide);
        if let Some(&z) = wide.iter().find(|&&v| v == 0.0) {
            return f64::from(z);
        }
    }
    0.0
}

/// One output per run of `run` consecutive elements of `x` (`run > 0`, `x.len()` a multiple of
/// it), each rounded once into `T`.
pub(crate) fn reduce_runs<T: Lane + Element>(op: ReduceOp, level: Level, x: &[T], run: usize) -> Vec<T> {
    // A NaN's sign and payload after additions depend on which operand the hardware kept,
    // which the lanes change: every NaN sum is the one NaN, as `max`/`min` give.
    let sum = |row: &[T]| match run_sum(level, row) {
        s if s.is_nan() => f64::NAN,
        s => s,
    };
    let one = |row: &[T]| -> T {
        T::from_f64(match op {
            ReduceOp::Sum => sum(row),
            ReduceOp::Mean => sum(row) / run as f64,
            ReduceOp::Max => run_extreme::<T, true>(level, row),
            ReduceOp::Min => run_extreme::<T, false>(level, row),
        })
    };
    let outputs = x.len() / run;
    if run >= PARALLEL_MIN {
        // Long runs share their own blocks out; one run at a time.
        return x.chunks_exact(run).map(one).collect();
    }
    // Short runs: whole runs are shared out, enough of them per claim to be worth a hand-off.
    let split = Split {
        parallel_min: PARALLEL_MIN.div_ceil(run),
        chunk: (SUM_BLOCK * BLOCKS_PER_CLAIM).div_ceil(run),
    };
    fill_fresh(outputs, split, &|r, part: &mut [MaybeUninit<T>]| {
        for (d, row) in part.iter_mut().zip(x[r.start * run..r.end * run].chunks_exact(run)) {
            d.write(one(row));
        }
    })
}

/// The rows' lanes of a block of products (`dot.rs`, `dot_bf16.rs`) over its whole runs of 64 (`..full`), completed with the block's short
/// last run and folded: the short run goes into lanes of its own, added after
/// (`reduce::add_tail`), since indexed by a loop count it would keep `lanes` in memory for the
/// whole block.
#[inline(always)]
pub(super) fn finish_rows<A: Lane, const R: usize>(
    mut lanes: [[f32; LANES]; R],
    rows: [&[A]; R],
    x: &[f32],
    full: usize,
) -> [f32; R] {
    let mut tails = [[0f32; LANES]; R];
    for (tail, row) in tails.iter_mut().zip(rows) {
        for ((l, &a), &b) in tail.iter_mut().zip(&row[full..]).zip(&x[full..]) {
            *l += a.lane_f32() * b;
        }
    }
    for (lane, tail) in lanes.iter_mut().zip(&tails) {
        add_tail(lane, tail);
    }
    lanes.map(fold_halves)
}
