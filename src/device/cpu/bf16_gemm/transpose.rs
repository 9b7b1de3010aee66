//! The AVX-512 fast path of packing for operands whose k runs are contiguous (a row-major A, a
//! transposed B): a panel word (p, l) comes from lane l's run at pair p, so packing is a transpose
//! of 32-bit words. Done 16 lanes × 16 pairs at a time in registers (64 shuffles per 256 words),
//! it costs a fraction of the scalar word-by-word copy, which the profile showed at ~10 % of a
//! 1024³ product.

use std::arch::x86_64::*;

use half::bf16;

/// Transposes a 16×16 matrix of 32-bit words held as 16 row vectors.
#[inline(always)]
unsafe fn transpose16(r: &[__m512i; 16]) -> [__m512i; 16] {
    // SAFETY: register-only AVX-512F operations; the caller's target features cover them.
    unsafe {
        // Within each 128-bit lane L: a 4×4 transpose of rows 4g..4g+3, so v[4g + j] holds, in
        // lane L, column 4L + j of rows 4g..4g+3.
        let mut v = [_mm512_setzero_si512(); 16];
        for g in 0..4 {
            let (r0, r1, r2, r3) = (r[4 * g], r[4 * g + 1], r[4 * g + 2], r[4 * g + 3]);
            let (a, b) = (_mm512_unpacklo_epi32(r0, r1), _mm512_unpackhi_epi32(r0, r1));
            let (c, d) = (_mm512_unpacklo_epi32(r2, r3), _mm512_unpackhi_epi32(r2, r3));
            v[4 * g] = _mm512_unpacklo_epi64(a, c);
            v[4 * g + 1] = _mm512_unpackhi_epi64(a, c);
            v[4 * g + 2] = _mm512_unpacklo_epi64(b, d);
            v[4 * g + 3] = _mm512_unpackhi_epi64(b, d);
        }
        // Then a 4×4 transpose of the 128-bit lanes across the four row groups.
        let mut out = [_mm512_setzero_si512(); 16];
        for j in 0..4 {
            let (v0, v1, v2, v3) = (v[j], v[4 + j], v[8 + j], v[12 + j]);
            let s0 = _mm512_shuffle_i32x4::<0x44>(v0, v1);
            let s1 = _mm512_shuffle_i32x4::<0xEE>(v0, v1);
            let s2 = _mm512_shuffle_i32x4::<0x44>(v2, v3);
            let s3 = _mm512_shuffle_i32x4::<0xEE>(v2, v3);
            out[j] = _mm512_shuffle_i32x4::<0x88>(s0, s2);
            out[4 + j] = _mm512_shuffle_i32x4::<0xDD>(s0, s2);
            out[8 + j] = _mm512_shuffle_i32x4::<0x88>(s1, s3);
            out[12 + j] = _mm512_shuffle_i32x4::<0xDD>(s1, s3);
        }
        out
    }
}

/// Packs one panel from `runs` (one slice of k elements per valid lane) into `panel`
/// (`pairs(k)·width` words): word (p, l) = (runs[l][2p], runs[l][2p+1]); missing lanes and the odd
/// k's missing partner are zero.
///
/// # Safety
/// The CPU has AVX512F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn pack_runs(runs: &[&[bf16]], k: usize, width: usize, panel: &mut [u32]) {
    let (full, kp) = (k / 2, k.div_ceil(2));
    assert!(runs.len() <= width && runs.iter().all(|r| r.len() >= k) && panel.len() == kp * width);
    for lb in (0..width).step_by(16) {
        let lanes_here = (width - lb).min(16);
        let store_mask: __mmask16 = ((1u32 << lanes_here) - 1) as u16;
        for pb in (0..full).step_by(16) {
            let words = (full - pb).min(16);
            let load_mask: __mmask16 = ((1u32 << words) - 1) as u16;
            let rows: [__m512i; 16] = std::array::from_fn(|l| match runs.get(lb + l) {
                // SAFETY: the masked load reads `words` pairs from 2·pb on, all inside the run
                // (2·(pb + words) ≤ 2·full ≤ k); masked-off words are not touched.
                Some(run) => unsafe { _mm512_maskz_loadu_epi32(load_mask, run.as_ptr().add(2 * pb) as *const i32) },
                None => _mm512_setzero_si512(),
            });
            // SAFETY: register-only.
            let cols = unsafe { transpose16(&rows) };
            for (j, col) in cols.iter().enumerate().take(words) {
                let at = (pb + j) * width + lb;
                debug_assert!(at + lanes_here <= panel.len());
                // SAFETY: the masked store writes lanes_here ≤ width − lb words from `at`,
                // inside pair pb + j < full of the panel.
                unsafe { _mm512_mask_storeu_epi32(panel.as_mut_ptr().add(at) as *mut i32, store_mask, *col) };
            }
        }
    }
    if kp > full {
        // Odd k: the last pair holds only element k − 1.
        let last = &mut panel[full * width..];
        for (l, o) in last.iter_mut().enumerate() {
            *o = runs.get(l).map_or(0, |run| run[k - 1].to_bits() as u32);
        }
    }
}

/// One k pair of a 32-lane panel from two runs of lanes (rows 2p and 2p + 1 of a row-major B):
/// word l = (lo[l], hi[l]); lanes past the runs' length, and the high halves without `hi`, are
/// zero.
///
/// # Safety
/// The CPU has AVX512F and AVX512BW.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn interleave_32(lo: &[bf16], hi: Option<&[bf16]>, out: &mut [u32; 32]) {
    assert!(lo.len() <= 32 && hi.is_none_or(|h| h.len() == lo.len()));
    let mask: __mmask32 = if lo.len() == 32 {
        u32::MAX
    } else {
        (1u32 << lo.len()) - 1
    };
    // SAFETY: masked loads read only the `lo.len()` elements of each run; the stores write the
    // 32 words of `out`.
    unsafe {
        let l = _mm512_maskz_loadu_epi16(mask, lo.as_ptr() as *const i16);
        let h = match hi {
            Some(h) => _mm512_maskz_loadu_epi16(mask, h.as_ptr() as *const i16),
            None => _mm512_setzero_si512(),
        };
        // Within each 128-bit lane j: columns 8j..8j+3 (unpacklo) and 8j+4..8j+7 (unpackhi).
        let (a, b) = (_mm512_unpacklo_epi16(l, h), _mm512_unpackhi_epi16(l, h));
        let first = _mm512_permutex2var_epi64(a, _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), b);
        let second = _mm512_permutex2var_epi64(a, _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15), b);
        _mm512_storeu_si512(out.as_mut_ptr() as *mut _, first);
        _mm512_storeu_si512(out.as_mut_ptr().add(16) as *mut _, second);
    }
}

/// Copies up to 32 bf16 values into `out` and zeroes the rest of it.
///
/// # Safety
/// The CPU has AVX512F and AVX512BW.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn copy_32(run: &[bf16], out: &mut [u16; 32]) {
    assert!(run.len() <= 32);
    let mask: __mmask32 = if run.len() == 32 {
        u32::MAX
    } else {
        (1u32 << run.len()) - 1
    };
    // SAFETY: the masked load reads only `run`; the store writes the 32 values of `out`.
    unsafe {
        let v = _mm512_maskz_loadu_epi16(mask, run.as_ptr() as *const i16);
        _mm512_storeu_si512(out.as_mut_ptr() as *mut _, v);
    }
}
