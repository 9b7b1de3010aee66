//! The bf16 matrix-vector product's inner loop on AVX-512, in the documented order of `dot.rs`
//! (element `i` of a block into f32 lane `i mod 64`, multiplied then added) with cheaper widening.
//!
//! A bf16 is the upper half of an f32, so one 32-bit word holding two bf16 gives both as f32 with
//! one instruction each: the even element by a shift left of 16, the odd one by masking off the
//! low half. The generic loop widens with `vpmovzxwd` (a shuffle) and a shift per 16 elements;
//! `perf` put the bf16 matrix-vector product at 0.55–0.6 of PyTorch's speed in the last-level
//! cache with it. Here the 64 lanes sit in four registers as evens and odds (lanes 0, 2, …, 30;
//! 1, 3, …, 31; 32, 34, …, 62; 33, …, 63), `x` is laid out the same way once per product
//! ([`interleave`]), and the registers are put back in lane order before the lanes are folded.
//! Each lane receives the same products in the same order as in the generic loop, so the bits are
//! the same (`tests_dot.rs` holds every variant to the order written out one element at a time).

use std::arch::x86_64::{
    __m512, _mm512_add_ps, _mm512_and_si512, _mm512_castsi512_ps, _mm512_loadu_ps, _mm512_loadu_si512, _mm512_mul_ps,
    _mm512_permutex2var_ps, _mm512_set1_epi32, _mm512_setr_epi32, _mm512_setzero_ps, _mm512_slli_epi32,
    _mm512_storeu_ps,
};

use half::bf16;

use super::dot_f32::{PREFETCH_AHEAD, prefetch};
use super::reduce::{LANES, finish_rows};

/// `x` as [`block_dot4`] reads it: in each whole run of 64 from the start, the even elements of
/// its first half, its odd ones, then the same for its second half; a short last run as it is.
pub(super) fn interleave(x: &[f32]) -> Vec<f32> {
    let mut out = x.to_vec();
    for (run, src) in out.chunks_exact_mut(LANES).zip(x.chunks_exact(LANES)) {
        for (half, s) in run.chunks_exact_mut(32).zip(src.chunks_exact(32)) {
            for t in 0..16 {
                half[t] = s[2 * t];
                half[16 + t] = s[2 * t + 1];
            }
        }
    }
    out
}

/// Four rows' dot products with `x` over one block (each row as long as `x`, at most a sum block;
/// the block starts at a multiple of 64 in the row, and `x` is that range of [`interleave`]'s
/// output): the bits of `dot::block_dot4` on the same rows. Rows of a large matrix are asked
/// for ahead where `rows_ahead` says so (`dot_f32::ROWS_AHEAD_FROM`).
///
/// # Safety
/// The CPU has AVX-512F (`Level::Avx512`).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn block_dot<const R: usize>(rows: [&[bf16]; R], x: &[f32], rows_ahead: bool) -> [f32; R] {
    let full = x.len() / LANES * LANES;
    let odd_mask = _mm512_set1_epi32(0xFFFF_0000_u32 as i32);
    let mut acc = [[_mm512_setzero_ps(); 4]; R];
    for start in (0..full).step_by(LANES) {
        if rows_ahead {
            // As far ahead in bytes as f32 rows are asked for; 64 bf16 are two lines.
            for row in rows {
                prefetch(row, start + 2 * PREFETCH_AHEAD, 2);
            }
        }
        // SAFETY: `start + 64 <= full <= x.len()`, and every row is as long as `x`.
        let xs: [__m512; 4] = std::array::from_fn(|q| unsafe { _mm512_loadu_ps(x.as_ptr().add(start + 16 * q)) });
        for (acc, row) in acc.iter_mut().zip(rows) {
            for half in 0..2 {
                // SAFETY: as above; 32 bf16 from `start + 32·half` lie inside the row.
                let words = unsafe { _mm512_loadu_si512(row.as_ptr().add(start + 32 * half).cast()) };
                let even = _mm512_castsi512_ps(_mm512_slli_epi32::<16>(words));
                let odd = _mm512_castsi512_ps(_mm512_and_si512(words, odd_mask));
                acc[2 * half] = _mm512_add_ps(acc[2 * half], _mm512_mul_ps(even, xs[2 * half]));
                acc[2 * half + 1] = _mm512_add_ps(acc[2 * half + 1], _mm512_mul_ps(odd, xs[2 * half + 1]));
            }
        }
    }
    // Evens and odds back into lane order: lane 2t is evens[t], lane 2t+1 odds[t].
    let low = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    let high = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    let lanes = acc.map(|[e0, o0, e1, o1]| {
        let mut lanes = [0f32; LANES];
        for (q, v) in [(e0, o0, low), (e0, o0, high), (e1, o1, low), (e1, o1, high)]
            .into_iter()
            .map(|(e, o, idx)| _mm512_permutex2var_ps(e, idx, o))
            .enumerate()
        {
            // SAFETY: `lanes` holds 64 f32, and `16·q + 16 <= 64`.
            unsafe { _mm512_storeu_ps(lanes.as_mut_ptr().add(16 * q), v) };
        }
        lanes
    });
    finish_rows(lanes, rows, x, full)
}
