//! The fallback: widen bf16 to f32 (exact), multiply in f32 with `gemm` on the same thread team
//! and in the same parts as an f32 matmul, round each sum to bf16 once. Correct everywhere; never
//! faster than f32. Each part widens only the rows of the left operand it multiplies, right before
//! it multiplies them, so the widening runs on every thread and its output is still in cache.
//! (It once went through rayon and widened everything on one thread first: 3× slower than f32 at
//! the lecture's shape.)

use std::cell::RefCell;

use half::bf16;

use super::{Operand, Problem};
use crate::device::cpu::matmul::{Mat, gemm_once, in_parts, splits_rows};
use crate::device::cpu::team::Shared;

/// Copies rows `rows.0..rows.1` of a strided bf16 matrix with `cols` columns into `out` as a
/// row-major f32 matrix. Rows stored contiguously (the common case) widen as slices, which the
/// compiler vectorises.
fn widen(src: &[bf16], op: &Operand, rows: (usize, usize), cols: usize, out: &mut Vec<f32>) {
    out.clear();
    let len = (rows.1 - rows.0) * cols;
    out.reserve(len);
    // Rows back to back (a row-major matrix, or a vector of one column): one slice. A dot
    // product's k×1 vector widened row by row cost a million one-element extends.
    let back_to_back = (op.cs == 1 || cols == 1) && (op.rs == cols as isize || rows.1 - rows.0 == 1);
    if back_to_back && len > 0 {
        let start = op.at(rows.0, 0);
        out.extend(src[start..start + len].iter().map(|&h| widen_one(h)));
        return;
    }
    for i in rows.0..rows.1 {
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

/// Widened operands and f32 sums, kept between calls on each thread: fresh buffers of a few MB
/// page-faulted on every call, and in this VM those faults cost as much as a 512³ product. The
/// caller's (the right operand, and the left one when parts are columns) and each part's (its
/// rows of the left operand, its sums) are separate, since the caller runs a part too. Buffers
/// over `KEEP_BYTES` are released after use.
#[derive(Default)]
struct Scratch {
    a: Vec<f32>,
    b: Vec<f32>,
    acc: Vec<f32>,
}

impl Scratch {
    fn trim(&mut self) {
        let held = (self.a.capacity() + self.b.capacity() + self.acc.capacity()) * size_of::<f32>();
        if held > KEEP_BYTES {
            *self = Scratch::default();
        }
    }
}

const KEEP_BYTES: usize = 64 << 20;

thread_local! {
    static CALLER: RefCell<Scratch> = RefCell::new(Scratch::default());
    static PART: RefCell<Scratch> = RefCell::new(Scratch::default());
}

pub(super) fn matmul(p: &Problem<'_>) -> Vec<bf16> {
    let (m, n, k) = (p.m, p.n, p.k);
    let len = p.pairs.len() * m * n;
    if len == 0 || k == 0 {
        // k = 0 is an empty sum: zeros.
        return vec![bf16::ZERO; len];
    }
    let mut out = Vec::<bf16>::with_capacity(len);
    let base = Shared(out.spare_capacity_mut().as_mut_ptr().cast::<bf16>());
    // Parts along columns all need the whole left operand: the caller widens it once per pair.
    let whole_a = !splits_rows(m, n);
    CALLER.with_borrow_mut(|caller| {
        for (pair, (oa, ob)) in p.pairs.iter().enumerate() {
            widen(p.b, ob, (0, k), n, &mut caller.b);
            if whole_a {
                widen(p.a, oa, (0, m), k, &mut caller.a);
            }
            let (a_all, b) = (Shared(caller.a.as_ptr()), Shared(caller.b.as_ptr()));
            // SAFETY: output matrix `pair` lies inside the allocation of `len` elements.
            let dst = Shared(unsafe { base.get().add(pair * m * n) });
            in_parts((m, n, k), &|rows, cols| {
                PART.with_borrow_mut(|part| {
                    let (mr, nc) = (rows.1 - rows.0, cols.1 - cols.0);
                    let lhs = if whole_a {
                        // SAFETY: rows `rows` of the caller's widened m×k left operand.
                        unsafe { a_all.get().add(rows.0 * k) }
                    } else {
                        widen(p.a, oa, rows, k, &mut part.a);
                        part.a.as_ptr()
                    };
                    if part.acc.len() < mr * nc {
                        part.acc.resize(mr * nc, 0.0);
                    }
                    // SAFETY: lhs is mr×k row-major, b's columns `cols` lie inside the caller's
                    // k×n row-major right operand, acc has room for mr×nc sums, which gemm only
                    // writes (`read_dst = false`).
                    unsafe {
                        gemm_once(
                            (mr, nc, k),
                            (part.acc.as_mut_ptr(), nc),
                            (lhs, Mat::row_major(k)),
                            (b.get().add(cols.0), Mat::row_major(n)),
                        )
                    };
                    for (i, sums) in part.acc[..mr * nc].chunks_exact(nc).enumerate() {
                        // SAFETY: row rows.0 + i, columns `cols` of this output matrix: the
                        // block `in_parts` gave this part alone.
                        let row =
                            unsafe { std::slice::from_raw_parts_mut(dst.get().add((rows.0 + i) * n + cols.0), nc) };
                        for (d, &x) in row.iter_mut().zip(sums) {
                            *d = round_one(x);
                        }
                    }
                    part.trim();
                })
            });
        }
        caller.trim();
    });
    // SAFETY: for every pair, the parts of `in_parts` wrote each of its m×n elements once.
    unsafe { out.set_len(len) };
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
