//! Dot products and matrix-vector products (`A·x` with `A` row-major) at the memory's speed:
//! the lecture's two memory-bound products. `gemm`'s matrix-vector kernel runs on one thread and
//! reached a third of PyTorch's speed here; these loops read each operand once, a block at a
//! time, vectorised like the other elementwise loops and split over the team's threads.
//!
//! Like every CPU product, they multiply and accumulate in f32 and round once into the dtype (bf16
//! and f16 are widened exactly, a block at a time). The order of the additions is fixed, so every
//! instruction set and thread count gives the same bits: a row is cut into blocks of
//! [`SUM_BLOCK`] elements from its start; in a block, the product of elements `i` is added into
//! f32 lane `i mod 64`; the lanes are folded in halves; the block sums are added in f32, in
//! index order, starting from 0 (`reduce`'s order, in f32 throughout, as `gemm` accumulates).
//!
//! A bf16 matrix on AVX-512 takes `dot_bf16`'s loop, which keeps this order with cheaper widening.

use std::mem::MaybeUninit;

use super::kernels::{CHUNK, Level, PARALLEL_MIN, fill_fresh};
use super::lane::Lane;
use super::reduce::{LANES, SUM_BLOCK, block_sum_of, finish_rows, per_block_range};
use crate::device::cpu::team::Split;

/// `Σ a[i]·b[i]` over one block (`a.len() == b.len() <= SUM_BLOCK`), in the fixed order above.
#[inline(always)]
fn block_dot<A: Lane, B: Lane>(a: &[A], b: &[B]) -> f32 {
    block_sum_of(a, b, |x, y| x * y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn block_dot_avx512<A: Lane, B: Lane>(a: &[A], b: &[B]) -> f32 {
    block_dot(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn block_dot_avx2<A: Lane, B: Lane>(a: &[A], b: &[B]) -> f32 {
    block_dot(a, b)
}

/// [`block_dot`] at `level` (every level gives the same bits: the order is written out).
fn block_dot_at<A: Lane, B: Lane>(level: Level, a: &[A], b: &[B]) -> f32 {
    match (level, A::as_f32(a), B::as_f32(b)) {
        // SAFETY: `Level::current` only returns a level this CPU has.
        #[cfg(target_arch = "x86_64")]
        (Level::Avx512, Some(a), Some(b)) => unsafe { super::dot_f32::block_dot([a], b, false)[0] },
        _ => block_dot_generic_at(level, a, b),
    }
}

/// [`block_dot`] at `level`, compiled for its instruction set from the generic loop.
fn block_dot_generic_at<A: Lane, B: Lane>(level: Level, a: &[A], b: &[B]) -> f32 {
    match level {
        // SAFETY: `Level::current` only returns a level this CPU has.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { block_dot_avx512(a, b) },
        // SAFETY: as the arm above.
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { block_dot_avx2(a, b) },
        _ => block_dot(a, b),
    }
}

/// Four rows' dot products with one f32 vector over one block (`x.len() <= SUM_BLOCK`, each row
/// as long), each row in the fixed order above: the bits of four `block_dot` calls. Four rows at
/// once read four streams (more loads in flight from DRAM) and load each piece of `x` once.
#[inline(always)]
fn block_dot4<A: Lane>(rows: [&[A]; 4], x: &[f32]) -> [f32; 4] {
    let mut lanes = [[0f32; LANES]; 4];
    let full = x.len() / LANES * LANES;
    for start in (0..full).step_by(LANES) {
        let xv = &x[start..start + LANES];
        for (lane, row) in lanes.iter_mut().zip(rows) {
            for ((l, &a), &b) in lane.iter_mut().zip(&row[start..start + LANES]).zip(xv) {
                *l += a.lane_f32() * b;
            }
        }
    }
    finish_rows(lanes, rows, x, full)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn block_dot4_avx512<A: Lane>(rows: [&[A]; 4], x: &[f32]) -> [f32; 4] {
    block_dot4(rows, x)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn block_dot4_avx2<A: Lane>(rows: [&[A]; 4], x: &[f32]) -> [f32; 4] {
    block_dot4(rows, x)
}

/// Four consecutive rows (`a.len() == 4·x.len()`), block by block in order, as four `row_dot`s.
/// `interleaved` is `x` laid out for `dot_bf16` where the rows are bf16 and the level AVX-512.
/// `rows_ahead`: ask for the rows ahead (a matrix past `dot_f32::ROWS_AHEAD_FROM`; AVX-512 only).
pub(super) fn rows_dot4<A: Lane>(
    level: Level,
    a: &[A],
    x: &[f32],
    interleaved: Option<&[f32]>,
    rows_ahead: bool,
) -> [f32; 4] {
    let k = x.len();
    let mut totals = [0f32; 4];
    for start in (0..k).step_by(SUM_BLOCK) {
        let end = (start + SUM_BLOCK).min(k);
        let rows: [&[A]; 4] = std::array::from_fn(|r| &a[r * k + start..r * k + end]);
        let bf16_rows = A::as_bf16(a).map(|a| std::array::from_fn(|r| &a[r * k + start..r * k + end]));
        let f32_rows = A::as_f32(a).map(|a| std::array::from_fn(|r| &a[r * k + start..r * k + end]));
        let blocks = match (level, bf16_rows, interleaved, f32_rows) {
            // SAFETY: `interleaved` is only given at `Level::Avx512`, which this CPU has.
            #[cfg(target_arch = "x86_64")]
            (Level::Avx512, Some(rows), Some(xi), _) => unsafe {
                super::dot_bf16::block_dot(rows, &xi[start..end], rows_ahead)
            },
            // SAFETY: `Level::current` only returns a level this CPU has.
            #[cfg(target_arch = "x86_64")]
            (Level::Avx512, _, _, Some(rows)) => unsafe { super::dot_f32::block_dot(rows, &x[start..end], rows_ahead) },
            // SAFETY: `Level::current` only returns a level this CPU has.
            #[cfg(target_arch = "x86_64")]
            (Level::Avx512, ..) => unsafe { block_dot4_avx512(rows, &x[start..end]) },
            // SAFETY: as the arm above.
            #[cfg(target_arch = "x86_64")]
            (Level::Avx2, ..) => unsafe { block_dot4_avx2(rows, &x[start..end]) },
            _ => block_dot4(rows, &x[start..end]),
        };
        for (t, b) in totals.iter_mut().zip(blocks) {
            *t += b;
        }
    }
    totals
}

/// One row's dot product on this thread, block by block in order.
fn row_dot<A: Lane, B: Lane>(level: Level, a: &[A], b: &[B]) -> f32 {
    a.chunks(SUM_BLOCK)
        .zip(b.chunks(SUM_BLOCK))
        .fold(0.0, |s, (pa, pb)| s + block_dot_at(level, pa, pb))
}

/// `a·b` (`a.len() == b.len()`), its blocks shared over the team's threads when long.
fn dot<T: Lane>(level: Level, a: &[T], b: &[T]) -> f32 {
    if a.len() < PARALLEL_MIN {
        return row_dot(level, a, b);
    }
    per_block_range(a.len(), SUM_BLOCK, &|r| block_dot_at(level, &a[r.clone()], &b[r]))
        .into_iter()
        .fold(0.0, |s, b| s + b)
}

/// `A·x` for a row-major `m×k` matrix `a` (`a.len() == m·k`, `x.len() == k`, `k > 0`): each
/// output is [`dot`] of a row with `x`. One long row shares its blocks out; many rows are
/// shared out whole, so each row's sum is one thread's, in order.
pub(crate) fn matvec<T: Lane>(level: Level, a: &[T], x: &[T], k: usize, round: fn(f32) -> T) -> Vec<T> {
    let m = a.len() / k;
    if m == 1 {
        return vec![round(dot(level, a, x))];
    }
    // `x` is widened once, not once per row; f32 is read where it is (a copy cost an allocation
    // and a pass, a tenth of an 89×89 product).
    let wide: Vec<f32>;
    let x = match T::as_f32(x) {
        Some(x) => x,
        None => {
            let mut w = vec![0f32; k];
            T::widen(x, &mut w);
            wide = w;
            &wide[..]
        }
    };
    // bf16 rows on AVX-512 take `dot_bf16`'s loop, which reads `x` in its own layout.
    #[cfg(target_arch = "x86_64")]
    let interleaved = (level == Level::Avx512 && T::as_bf16(a).is_some()).then(|| super::dot_bf16::interleave(x));
    #[cfg(not(target_arch = "x86_64"))]
    let interleaved: Option<Vec<f32>> = None;
    let interleaved = interleaved.as_deref();
    // One contiguous share of the rows per thread: two long streams, which the prefetchers
    // follow, rather than short claims that interleave (claims of `CHUNK` read DRAM at 0.6 of
    // PyTorch's speed here).
    let threads = rayon::current_num_threads().max(1);
    let split = Split {
        parallel_min: PARALLEL_MIN.div_ceil(k),
        chunk: CHUNK.div_ceil(k).max(m.div_ceil(threads)),
    };
    #[cfg(target_arch = "x86_64")]
    let rows_ahead = std::mem::size_of_val(a) >= super::dot_f32::ROWS_AHEAD_FROM;
    #[cfg(not(target_arch = "x86_64"))]
    let rows_ahead = false;
    fill_fresh(m, split, &|rows, part: &mut [MaybeUninit<T>]| {
        let mut fours = part.chunks_exact_mut(4);
        let mut i = rows.start;
        for d in &mut fours {
            for (d, v) in d
                .iter_mut()
                .zip(rows_dot4(level, &a[i * k..(i + 4) * k], x, interleaved, rows_ahead))
            {
                d.write(round(v));
            }
            i += 4;
        }
        for d in fours.into_remainder() {
            d.write(round(row_dot(level, &a[i * k..(i + 1) * k], x)));
            i += 1;
        }
    })
}
