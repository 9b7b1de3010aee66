//! The fallback: widen each operand matrix to f32 (exact), multiply in f32 on the same thread team
//! and `gemm` calls as an f32 matmul, round the result to bf16 once. Correct everywhere; never
//! faster than f32, and only the widening slower: it once went through rayon instead, whose
//! hand-offs and idle spinning team made it 3× slower than f32 at the lecture's shape.

use std::cell::RefCell;

use half::bf16;

use super::{Operand, Problem};
use crate::device::cpu::matmul::product_row_major;

/// Copies one strided rows × cols bf16 matrix into `out` as a row-major f32 one. Rows stored
/// contiguously (the common case) widen as slices, which the compiler vectorises; what is left
/// is the memory traffic of writing the f32 copy.
fn widen(src: &[bf16], op: &Operand, rows: usize, cols: usize, out: &mut Vec<f32>) {
    out.clear();
    out.reserve(rows * cols);
    for i in 0..rows {
        if op.cs == 1 {
            let start = op.at(i, 0);
            out.extend(src[start..start + cols].iter().map(|&h| widen_one(h)));
        } else {
            out.extend((0..cols).map(|j| widen_one(src[op.at(i, j)])));
        }
    }
}

/// bf16 → f32 is the bf16 bits in the top half of an f32: exact, and branch-free so the loop
/// vectorises (`bf16::to_f32` also quiets a NaN, which a product turns into NaN anyway).
#[inline(always)]
fn widen_one(h: bf16) -> f32 {
    f32::from_bits(u32::from(h.to_bits()) << 16)
}

/// f32 → bf16, rounded to nearest with ties to even, NaN kept NaN (what `bf16::from_f32` does),
/// written without branches so the loop over a result vectorises.
#[inline(always)]
fn round_one(x: f32) -> bf16 {
    let bits = x.to_bits();
    let rounded = (bits.wrapping_add(0x7FFF + ((bits >> 16) & 1)) >> 16) as u16;
    let nan = (bits >> 16) as u16 | 0x0040;
    bf16::from_bits(if x.is_nan() { nan } else { rounded })
}

/// The widened operands and the f32 result, kept between calls on each thread: fresh buffers
/// of a few MB page-faulted on every call, and in this VM those faults cost as much as the
/// 512³ product itself. Buffers over `KEEP_BYTES` in all are released after the call.
#[derive(Default)]
struct Scratch {
    a: Vec<f32>,
    b: Vec<f32>,
    acc: Vec<f32>,
}

const KEEP_BYTES: usize = 64 << 20;

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

pub(super) fn matmul(p: &Problem<'_>) -> Vec<bf16> {
    let (m, n, k) = (p.m, p.n, p.k);
    let mut out = Vec::with_capacity(p.pairs.len() * m * n);
    SCRATCH.with_borrow_mut(|s| {
        s.acc.clear();
        s.acc.resize(m * n, 0.0);
        for (oa, ob) in p.pairs {
            widen(p.a, oa, m, k, &mut s.a);
            widen(p.b, ob, k, n, &mut s.b);
            product_row_major((m, n, k), &s.a, &s.b, &mut s.acc);
            out.extend(s.acc.iter().map(|&x| round_one(x)));
        }
        let held = (s.a.capacity() + s.b.capacity() + s.acc.capacity()) * size_of::<f32>();
        if held > KEEP_BYTES {
            *s = Scratch::default();
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The branch-free conversions agree with `half`'s on every bf16 and on f32s around every
    /// rounding case (ties, carries into the exponent, overflow to infinity, NaN, subnormals).
    #[test]
    fn conversions_match_half() {
        for bits in 0..=u16::MAX {
            let h = bf16::from_bits(bits);
            let (ours, theirs) = (widen_one(h), h.to_f32());
            assert!(
                ours.to_bits() == theirs.to_bits() || (ours.is_nan() && theirs.is_nan()),
                "{bits:#06x}"
            );
            for low in [0u32, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF] {
                let x = f32::from_bits((u32::from(bits) << 16) | low);
                let (ours, theirs) = (round_one(x), bf16::from_f32(x));
                assert_eq!(ours.to_bits(), theirs.to_bits(), "{:#010x}", x.to_bits());
            }
        }
    }
}
