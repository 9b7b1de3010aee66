//! The f32 dot product's and matrix-vector product's inner loop on AVX-512, in the documented
//! order of `dot.rs` (element `i` of a block into f32 lane `i mod 64`, multiplied then added; the
//! lanes folded in halves), with every lane kept in a register from the first product to the fold.
//!
//! The generic loop (`dot::block_dot4`) gave the compiler 64 lanes per row in arrays; it kept them
//! on the stack around the block's short last run and called out of line to fold them, and `perf`
//! put a third of an 89×89 product's time there (0.65× PyTorch in L1, 0.71× in L2 at 511×511,
//! whose rows end in a run of 63). A lone dot product also asks for its vectors ahead
//! ([`PREFETCH_AHEAD`]). Here the 64 lanes are four registers per row, the short last
//! run is read with masked loads (a masked-off element reads as 0, and `lane + 0·0` is the lane:
//! a lane begun at +0 is never -0), and the fold is register adds down to 16 lanes. Each lane
//! receives the same products in the same order, so the bits are the generic loop's
//! (`tests_dot.rs` holds every variant to the order written out one element at a time).

use std::arch::x86_64::{
    _mm512_add_ps, _mm512_loadu_ps, _mm512_maskz_loadu_ps, _mm512_mul_ps, _mm512_setzero_ps, _mm512_storeu_ps,
};

use super::reduce::{LANES, fold_sixteen};

/// Lanes of one AVX-512 register of f32.
const WIDTH: usize = 16;

/// How far ahead (in f32 elements) a lone dot product asks for its two vectors, and a large
/// matrix-vector product for its rows: 2 KiB. The hardware prefetchers alone fed one core 67 GB/s
/// from L2 on the Intel Xeon (a 65 536-element dot, one thread), 0.83× PyTorch with two; asking 1
/// or 2 KiB ahead, 79 GB/s, and 4 KiB no better. A matrix-vector product asks for its rows only
/// from [`ROWS_AHEAD_FROM`] bytes of matrix.
pub(super) const PREFETCH_AHEAD: usize = 512;

/// From this size a matrix-vector product's rows are asked for ahead, f32 and bf16 alike: past the
/// two cores' L2, where the four rows' streams outran the hardware prefetchers. `bench elementwise
/// --op matvec` at 64 and 512 MiB, alternating a build with and without, twice, on the Intel Xeon:
/// f32 0.87 and 0.94× PyTorch in L3 without, 0.99 and 1.06× with; in DRAM 0.95 and 0.97 against
/// 1.12 and 1.00; bf16 in DRAM 0.81 and 0.76 against 0.85 and 0.90 (in L3 no change beyond the
/// noise). Below it, in L2, asking slowed the 511×511 f32 product by 3–5 %.
pub(super) const ROWS_AHEAD_FROM: usize = 8 << 20;

/// Asks for `lines` cache lines of `v` from element `at` into L1: a hint, which never faults, so
/// an address past the end is harmless (it is computed, never read).
#[inline(always)]
pub(super) fn prefetch<T>(v: &[T], at: usize, lines: usize) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    let p = v.as_ptr().wrapping_add(at).cast::<i8>();
    for line in 0..lines {
        // SAFETY: a prefetch reads nothing the program sees and cannot fault.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64 * line)) };
    }
}

/// `R` rows' dot products with `x` over one block (each row as long as `x`, at most a sum block):
/// the bits of `dot::block_dot4` (four rows) or `dot::block_dot` (one) on the same rows. Rows
/// of a large matrix are asked for ahead where `rows_ahead` says so.
///
/// # Safety
/// The CPU has AVX-512F (`Level::Avx512`).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn block_dot<const R: usize>(rows: [&[f32]; R], x: &[f32], rows_ahead: bool) -> [f32; R] {
    let len = x.len();
    assert!(rows.iter().all(|r| r.len() == len), "every row is as long as x");
    let full = len / LANES * LANES;
    let mut acc = [[_mm512_setzero_ps(); 4]; R];
    for start in (0..full).step_by(LANES) {
        // 64 f32 are four lines.
        if R == 1 {
            prefetch(x, start + PREFETCH_AHEAD, 4);
            prefetch(rows[0], start + PREFETCH_AHEAD, 4);
        } else if rows_ahead {
            for row in rows {
                prefetch(row, start + PREFETCH_AHEAD, 4);
            }
        }
        for q in 0..4 {
            // SAFETY: `start + 64 <= full <= x.len()`.
            let xv = unsafe { _mm512_loadu_ps(x.as_ptr().add(start + WIDTH * q)) };
            for (acc, row) in acc.iter_mut().zip(rows) {
                // SAFETY: as above; every row is as long as `x`.
                let a = unsafe { _mm512_loadu_ps(row.as_ptr().add(start + WIDTH * q)) };
                acc[q] = _mm512_add_ps(acc[q], _mm512_mul_ps(a, xv));
            }
        }
    }
    // The short last run, up to 63 elements, each into its own lane.
    for q in 0..4 {
        let count = (len - full).saturating_sub(WIDTH * q).min(WIDTH);
        if count == 0 {
            break;
        }
        let mask = ((1u32 << count) - 1) as u16;
        // SAFETY: the mask reads only the `count` elements from `full + 16·q`, which lie inside
        // `x` and every row (`full + 16·q + count <= len`).
        let xv = unsafe { _mm512_maskz_loadu_ps(mask, x.as_ptr().add(full + WIDTH * q)) };
        for (acc, row) in acc.iter_mut().zip(rows) {
            // SAFETY: as above.
            let a = unsafe { _mm512_maskz_loadu_ps(mask, row.as_ptr().add(full + WIDTH * q)) };
            acc[q] = _mm512_add_ps(acc[q], _mm512_mul_ps(a, xv));
        }
    }
    // A plain loop, not `acc.map`: a closure does not inherit this function's target features,
    // and its vector adds were called out of line (a sixth of an 89×89 product's time).
    let mut out = [0f32; R];
    for (o, [a0, a1, a2, a3]) in out.iter_mut().zip(acc) {
        // Lane i gains lane i + 32 (lanes 0–15 from 32–47, 16–31 from 48–63), then i + 16.
        let sixteen = _mm512_add_ps(_mm512_add_ps(a0, a2), _mm512_add_ps(a1, a3));
        let mut l = [0f32; WIDTH];
        // SAFETY: `l` holds 16 f32.
        unsafe { _mm512_storeu_ps(l.as_mut_ptr(), sixteen) };
        // Then i + 8, i + 4, i + 2, i + 1, as `reduce::fold_halves` ends.
        *o = fold_sixteen(l);
    }
    out
}
