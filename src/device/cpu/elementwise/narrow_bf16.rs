//! bf16 binary ops on CPUs with AVX512_BF16: `Lane::binary`'s one pass (widen both operands,
//! compute in f32, round), rounding 16 lanes with one `vcvtneps2bf16` instead of the integer
//! rounding of `lane::f32_to_bf16` (an add, shifts, a NaN test, a blend and a narrowing shuffle).
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

use super::lane::{bf16_to_f32, f32_to_bf16};

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
    let exponent = _mm512_set1_epi32(0x7F80_0000);
    let fraction = _mm512_set1_epi32(0x007F_FFFF);
    let len = dst.len().min(lhs.len()).min(rhs.len());
    let (lhs, rhs, dst) = (&lhs[..len], &rhs[..len], &mut dst[..len]);
    let mut outs = dst.chunks_exact_mut(16);
    let (mut ls, mut rs) = (lhs.chunks_exact(16), rhs.chunks_exact(16));
    for ((l, r), d) in (&mut ls).zip(&mut rs).zip(&mut outs) {
        let v: [f32; 16] = std::array::from_fn(|j| f(bf16_to_f32(l[j]), bf16_to_f32(r[j])));
        // SAFETY: `v` holds 16 f32.
        let wide = unsafe { _mm512_loadu_ps(v.as_ptr()) };
        let bits = _mm512_castps_si512(wide);
        let subnormal = _mm512_testn_epi32_mask(bits, exponent) & _mm512_test_epi32_mask(bits, fraction);
        if subnormal == 0 {
            // SAFETY: `__m256bh` and `__m256i` are both 32 bytes of plain bits; `d` holds 16 bf16.
            unsafe {
                let rounded: __m256i = std::mem::transmute(_mm512_cvtneps_pbh(wide));
                _mm256_storeu_si256(d.as_mut_ptr().cast(), rounded);
            }
        } else {
            for (d, &x) in d.iter_mut().zip(&v) {
                d.write(f32_to_bf16(x));
            }
        }
    }
    let tail = ls.remainder().iter().zip(rs.remainder());
    for (d, (&x, &y)) in outs.into_remainder().iter_mut().zip(tail) {
        d.write(f32_to_bf16(f(bf16_to_f32(x), bf16_to_f32(y))));
    }
}
