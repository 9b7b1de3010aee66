//! The float dtypes as the elementwise loops see them: f32 runs its op directly; bf16 is widened,
//! computed and rounded back one element at a time in one vectorised pass; f16 (whose conversion
//! is `half`'s slice functions) a block at a time through an f32 scratch on the stack. Both are
//! the same arithmetic as widening, computing and rounding each element, so the same bits.
//!
//! Every function here is `#[inline(always)]`, so that it is compiled inside the caller's
//! `#[target_feature]` wrapper and vectorised for that instruction set.

use std::mem::MaybeUninit;

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

/// Elements per scratch block: 2 KiB of f32 (three blocks for a binary op stay in L1), and long
/// enough that the per-block overhead (f16's conversion calls) is small.
pub(crate) const BLOCK: usize = 512;

/// A float dtype the elementwise loops take.
pub(crate) trait Lane: Copy + Send + Sync + 'static {
    /// `dst[i] = src[i]` exactly in f32 (`dst.len() == src.len()`).
    fn widen(src: &[Self], dst: &mut [f32]);

    /// `dst[i] = src[i]` rounded to nearest even, as `Self::from_f32` rounds (`dst.len() ==
    /// src.len()`).
    fn narrow(src: &[f32], dst: &mut [MaybeUninit<Self>]);

    /// One element as f32, for sums and dot products: as [`Lane::widen`], except that a bf16
    /// signalling NaN may stay signalling (an addition quiets it, and every NaN sum is the one
    /// NaN), so that bf16 widens by a shift alone.
    fn lane_f32(self) -> f32;

    /// The slice as bf16, where `Self` is bf16 (for loops written for its bits alone).
    #[inline(always)]
    fn as_bf16(_: &[Self]) -> Option<&[bf16]> {
        None
    }

    /// The slice as f32, where `Self` is f32 (for loops written for f32 alone).
    #[inline(always)]
    fn as_f32(_: &[Self]) -> Option<&[f32]> {
        None
    }

    /// An output slice as bf16, where `Self` is bf16.
    #[inline(always)]
    fn as_bf16_mut(_: &mut [MaybeUninit<Self>]) -> Option<&mut [MaybeUninit<bf16>]> {
        None
    }

    /// `dst[i] = f(src[i])`, widening and rounding a block at a time.
    #[inline(always)]
    fn unary<F: Fn(f32) -> f32>(f: &F, src: &[Self], dst: &mut [MaybeUninit<Self>]) {
        let mut a = [0f32; BLOCK];
        for (s, d) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
            let a = &mut a[..s.len()];
            Self::widen(s, a);
            for x in a.iter_mut() {
                *x = f(*x);
            }
            Self::narrow(a, d);
        }
    }

    /// `dst[i] = relu(src[i])` (`math::relu`), as [`Lane::unary`] computes it; the 16-bit dtypes
    /// override it on their bits.
    #[inline(always)]
    fn relu(src: &[Self], dst: &mut [MaybeUninit<Self>]) {
        Self::unary(&crate::base::math::relu, src, dst)
    }

    /// `dst[i] = f(lhs[i], rhs[i])`, widening and rounding a block at a time.
    #[inline(always)]
    fn binary<F: Fn(f32, f32) -> f32>(f: &F, lhs: &[Self], rhs: &[Self], dst: &mut [MaybeUninit<Self>]) {
        let (mut a, mut b) = ([0f32; BLOCK], [0f32; BLOCK]);
        for ((l, r), d) in lhs.chunks(BLOCK).zip(rhs.chunks(BLOCK)).zip(dst.chunks_mut(BLOCK)) {
            let (a, b) = (&mut a[..l.len()], &mut b[..l.len()]);
            Self::widen(l, a);
            Self::widen(r, b);
            for (x, &y) in a.iter_mut().zip(b.iter()) {
                *x = f(*x, y);
            }
            Self::narrow(a, d);
        }
    }
}

impl Lane for f32 {
    #[inline(always)]
    fn as_f32(s: &[f32]) -> Option<&[f32]> {
        Some(s)
    }

    #[inline(always)]
    fn widen(src: &[f32], dst: &mut [f32]) {
        dst.copy_from_slice(src);
    }

    #[inline(always)]
    fn narrow(src: &[f32], dst: &mut [MaybeUninit<f32>]) {
        for (d, &x) in dst.iter_mut().zip(src) {
            d.write(x);
        }
    }

    #[inline(always)]
    fn lane_f32(self) -> f32 {
        self
    }

    // f32 needs no scratch: one pass straight from the operands into the output.
    #[inline(always)]
    fn unary<F: Fn(f32) -> f32>(f: &F, src: &[f32], dst: &mut [MaybeUninit<f32>]) {
        for (d, &x) in dst.iter_mut().zip(src) {
            d.write(f(x));
        }
    }

    #[inline(always)]
    fn binary<F: Fn(f32, f32) -> f32>(f: &F, lhs: &[f32], rhs: &[f32], dst: &mut [MaybeUninit<f32>]) {
        for ((d, &x), &y) in dst.iter_mut().zip(lhs).zip(rhs) {
            d.write(f(x, y));
        }
    }
}

/// ReLU on the bits of a 16-bit float whose infinity is `infinity` and whose NaNs are quiet with
/// `quiet` set: a NaN gets its quiet bit (as widening to f32 sets it, and rounding back keeps it),
/// any other number with the sign bit (-0 included) becomes +0, the rest stay. That is the bits of
/// widening, `math::relu` and rounding back (which is exact for a value kept), with no conversion:
/// a conversion both ways was most of bf16 ReLU's instructions, and kept it at a third of a
/// copy's speed in L2 (`bench elementwise --op relu`).
#[inline(always)]
fn relu_bits(bits: u16, infinity: u16, quiet: u16) -> u16 {
    let nan = (bits & 0x7FFF) > infinity;
    let negative = bits & 0x8000 != 0;
    if nan {
        bits | quiet
    } else if negative {
        0
    } else {
        bits
    }
}

/// bf16 → f32: the bf16 bits are the f32's upper half, except that a NaN gets its quiet bit set,
/// as `half::bf16::to_f32` does (without a branch, so that it vectorises).
#[inline(always)]
pub(crate) fn bf16_to_f32(x: bf16) -> f32 {
    let bits = u32::from(x.to_bits());
    let quiet = if (bits & 0x7FFF) > 0x7F80 { 0x40 } else { 0 };
    f32::from_bits((bits | quiet) << 16)
}

/// f32 → bf16, bit for bit what `half::bf16::from_f32` gives, without branches (so it
/// vectorises): round to nearest even by adding `0x7FFF` plus the kept part's lowest bit (the
/// carry reaches the kept half exactly when the dropped half is above one half, or equal to it
/// with an odd kept part); a NaN keeps its upper bits with the quiet bit set, as `half` does.
#[inline(always)]
pub(crate) fn f32_to_bf16(x: f32) -> bf16 {
    let bits = x.to_bits();
    let rounded = bits.wrapping_add(0x7FFF + ((bits >> 16) & 1)) >> 16;
    let nan = (bits >> 16) | 0x40;
    let is_nan = (bits & 0x7FFF_FFFF) > 0x7F80_0000;
    bf16::from_bits(if is_nan { nan } else { rounded } as u16)
}

impl Lane for bf16 {
    #[inline(always)]
    fn as_bf16(s: &[bf16]) -> Option<&[bf16]> {
        Some(s)
    }

    #[inline(always)]
    fn as_bf16_mut(s: &mut [MaybeUninit<bf16>]) -> Option<&mut [MaybeUninit<bf16>]> {
        Some(s)
    }

    /// The bits moved up, nothing else: the cheapest widening, and exact.
    #[inline(always)]
    fn lane_f32(self) -> f32 {
        f32::from_bits(u32::from(self.to_bits()) << 16)
    }

    #[inline(always)]
    fn relu(src: &[bf16], dst: &mut [MaybeUninit<bf16>]) {
        for (d, &x) in dst.iter_mut().zip(src) {
            d.write(bf16::from_bits(relu_bits(x.to_bits(), 0x7F80, 0x0040)));
        }
    }

    // A binary op widens, computes and rounds each element in one pass, with no scratch blocks:
    // bf16 converts with a few integer instructions, and one pass has a third of the loads and
    // stores. A unary op takes the block loop instead (`Lane::unary`): there GeLU's long f32 body
    // vectorises on its own, and ran 7–11 % faster in the L2 and the last-level cache than in one
    // pass beside the conversions (`bench elementwise --op gelu`, alternating, twice).
    #[inline(always)]
    fn binary<F: Fn(f32, f32) -> f32>(f: &F, lhs: &[bf16], rhs: &[bf16], dst: &mut [MaybeUninit<bf16>]) {
        for ((d, &x), &y) in dst.iter_mut().zip(lhs).zip(rhs) {
            d.write(f32_to_bf16(f(bf16_to_f32(x), bf16_to_f32(y))));
        }
    }

    #[inline(always)]
    fn widen(src: &[bf16], dst: &mut [f32]) {
        for (d, &x) in dst.iter_mut().zip(src) {
            *d = bf16_to_f32(x);
        }
    }

    #[inline(always)]
    fn narrow(src: &[f32], dst: &mut [MaybeUninit<bf16>]) {
        for (d, &x) in dst.iter_mut().zip(src) {
            d.write(f32_to_bf16(x));
        }
    }
}

impl Lane for f16 {
    /// One at a time (`half`'s conversion does not vectorise); f16 sums are rare in the lecture.
    #[inline(always)]
    fn lane_f32(self) -> f32 {
        self.to_f32()
    }

    #[inline(always)]
    fn relu(src: &[f16], dst: &mut [MaybeUninit<f16>]) {
        for (d, &x) in dst.iter_mut().zip(src) {
            d.write(f16::from_bits(relu_bits(x.to_bits(), 0x7C00, 0x0200)));
        }
    }

    /// `half`'s slice conversion (F16C where the CPU has it, 8 at a time); tests hold it to
    /// `f16::to_f32` for every f16.
    #[inline(always)]
    fn widen(src: &[f16], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst);
    }

    /// `half`'s slice conversion into a stack block, then copied out (it writes only initialised
    /// slices); tests hold it to `f16::from_f32`.
    #[inline(always)]
    fn narrow(src: &[f32], dst: &mut [MaybeUninit<f16>]) {
        let mut block = [f16::ZERO; BLOCK];
        for (s, d) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
            let block = &mut block[..s.len()];
            block.convert_from_f32_slice(s);
            for (d, &x) in d.iter_mut().zip(block.iter()) {
                d.write(x);
            }
        }
    }
}
