//! bf16 binary and unary ops on CPUs with AVX512_BF16: `Lane::binary`'s one pass (widen both
//! operands, compute in f32, round) and `Lane::unary`'s blocks, rounding 16 lanes with one
//! `vcvtneps2bf16` instead of the integer rounding of `lane::f32_to_bf16` (an add, shifts, a NaN test, a blend and a narrowing shuffle).
//! Rounding was most of a bf16 add's instructions, and kept it near 0.9 of PyTorch's speed in the
//! last-level cache (`bench elementwise --op add,mul`); PyTorch rounds with this instruction.
//!
//! The instruction rounds to nearest even and quiets a NaN exactly as `f32_to_bf16` does, except
//! that it reads an f32 subnormal as zero, where `half` rounds it to a bf16 subnormal. A run of 16
//! with a subnormal in it is rounded by `f32_to_bf16` instead, so the bits are the scalar loop's
//! (`tests.rs` holds every op to it, over values with f32 subnormals).

use std::arch::x86_64::{
    __m256i, _mm256_storeu_si256, _mm512_castps_si512, _mm512_cvtneps_pbh, _mm512_loadu_ps, _mm512_set1_epi32,
    _mm512_test_epi32_mask, _mm512_testn_epi32_mask,
};
use std::mem::MaybeUninit;

use half::bf16;

use super::lane::{BLOCK, Lane, bf16_to_f32, f32_to_bf16};

/// Whether this CPU has `vcvtneps2bf16` (std caches the answer).
pub(super) fn available() -> bool {
    is_x86_feature_detected!("avx512bf16") && is_x86_feature_detected!("avx512f")
}

/// `dst[i] = f(lhs[i], rhs[i])` in bf16, as `Lane::binary` computes it.
///
/// # Safety
/// The CPU has AVX-512F and AVX512_BF16 ([`available`]).
#[target_feature(enable = "avx512f,avx512bf16")]
pub(super) unsafe fn binary<F: Fn(f32, f32) -> f32>(f: &F, lhs: &[bf16], rhs: &[bf16], dst: &mut [MaybeUninit<bf16>]) {
    let len = dst.len().min(lhs.len()).min(rhs.len());
    let (lhs, rhs, dst) = (&lhs[..len], &rhs[..len], &mut dst[..len]);
    let (outs, out_tail) = dst.as_chunks_mut::<16>();
    let ((ls, l_tail), (rs, r_tail)) = (lhs.as_chunks::<16>(), rhs.as_chunks::<16>());
    for ((l, r), d) in ls.iter().zip(rs).zip(outs) {
        let v: [f32; 16] = std::array::from_fn(|j| f(bf16_to_f32(l[j]), bf16_to_f32(r[j])));
        // SAFETY: this function's own requirement.
        unsafe { narrow16(&v, d) };
    }
    for (d, (&x, &y)) in out_tail.iter_mut().zip(l_tail.iter().zip(r_tail)) {
        d.write(f32_to_bf16(f(bf16_to_f32(x), bf16_to_f32(y))));
    }
}

/// `dst[i] = f(src[i])` in bf16, as `Lane::unary` computes it: a block widened into f32, `f`
/// over it (GeLU's long body vectorises best on its own, `lane.rs`), and the block rounded 16 at a
/// time with `vcvtneps2bf16`. The integer rounding had bf16 GeLU at 0.97× PyTorch in L2.
///
/// # Safety
/// The CPU has AVX-512F and AVX512_BF16 ([`available`]).
#[target_feature(enable = "avx512f,avx512bf16")]
pub(super) unsafe fn unary<F: Fn(f32) -> f32>(f: &F, src: &[bf16], dst: &mut [MaybeUninit<bf16>]) {
    let mut a = [0f32; BLOCK];
    for (s, d) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
        let a = &mut a[..s.len()];
        <bf16 as Lane>::widen(s, a);
        for x in a.iter_mut() {
            *x = f(*x);
        }
        let (ins, in_tail) = a.as_chunks::<16>();
        let (outs, out_tail) = d.as_chunks_mut::<16>();
        for (v, d) in ins.iter().zip(outs) {
            // SAFETY: this function's own requirement.
            unsafe { narrow16(v, d) };
        }
        for (d, &x) in out_tail.iter_mut().zip(in_tail) {
            d.write(f32_to_bf16(x));
        }
    }
}

/// Rounds 16 f32 into the 16 bf16 of `d` as `f32_to_bf16` does: with `vcvtneps2bf16`, or one by
/// one where one of them is subnormal (which the instruction reads as zero).
///
/// # Safety
/// The CPU has AVX-512F and AVX512_BF16; `d` holds 16 elements.
#[inline(always)]
unsafe fn narrow16(v: &[f32; 16], d: &mut [MaybeUninit<bf16>]) {
    // SAFETY: the caller's: the CPU has AVX-512F and AVX512_BF16, `v` holds 16 f32 and `d` 16
    // bf16; `__m256bh` and `__m256i` are both 32 bytes of plain bits.
    unsafe {
        let wide = _mm512_loadu_ps(v.as_ptr());
        let bits = _mm512_castps_si512(wide);
        let subnormal = _mm512_testn_epi32_mask(bits, _mm512_set1_epi32(0x7F80_0000))
            & _mm512_test_epi32_mask(bits, _mm512_set1_epi32(0x007F_FFFF));
        if subnormal == 0 {
            let rounded: __m256i = std::mem::transmute(_mm512_cvtneps_pbh(wide));
            _mm256_storeu_si256(d.as_mut_ptr().cast(), rounded);
        } else {
            for (d, &x) in d.iter_mut().zip(v) {
                d.write(f32_to_bf16(x));
            }
        }
    }
}
