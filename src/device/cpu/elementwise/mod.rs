//! Contiguous elementwise ops on f32, bf16 and f16 at the memory's speed: one loop per op, with
//! the op's `f32:` expression from its table entry inlined (the `match op` happens once per call,
//! outside the loop), vectorised for the instruction set `CS336_CPU_ISA` allows, and split over
//! the team's threads from `kernels::MAP_PARALLEL_MIN` elements on. bf16 and f16 are widened a block
//! at a time, computed in f32 and rounded back once, so the results are the bits of the scalar
//! loop (widen, compute, round each element), on every instruction set and thread count.
//!
//! Each op hands its body to the loops as a closure (`UnaryOp::with_f32`, generated from the op
//! table with the op itself): a new table entry gets its loops with no change here. Strided and broadcast operands take the plain
//! loops in `cpu/mod.rs`.

mod dot;
#[cfg(target_arch = "x86_64")]
mod dot_bf16;
#[cfg(target_arch = "x86_64")]
mod dot_f32;
mod kernels;
mod lane;
#[cfg(target_arch = "x86_64")]
mod narrow_bf16;
mod reduce;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_dot;
#[cfg(test)]
mod tests_reduce;
#[cfg(test)]
mod timing;

pub(crate) use dot::matvec;
pub(crate) use kernels::Level;
#[cfg(test)]
use kernels::{MAP_PARALLEL_MIN, PARALLEL_MIN};
pub(crate) use lane::Lane;
#[cfg(test)]
use lane::{BLOCK, bf16_to_f32, f32_to_bf16};
pub(crate) use reduce::reduce_runs;

use crate::base::op::{BinaryBody, UnaryBody};
use crate::base::{BinaryOp, UnaryOp};
use crate::device::cpu::team::Split;

/// [`unary`], cut for threads as `split` says: one loop per op, compiled with the op's own body.
fn unary_split<T: Lane>(op: UnaryOp, level: Level, split: Split, src: &[T]) -> Vec<T> {
    struct Loop<'a, T>(Level, Split, &'a [T]);
    impl<T: Lane> UnaryBody for Loop<'_, T> {
        type Output = Vec<T>;
        fn run<F: Fn(f32) -> f32 + Copy + Send + Sync>(self, f: F) -> Vec<T> {
            kernels::unary(self.0, self.1, self.2, f)
        }
    }
    op.with_f32(Loop(level, split, src))
}

/// [`binary`], cut for threads as `split` says: one loop per op, compiled with the op's own body.
fn binary_split<T: Lane>(op: BinaryOp, level: Level, split: Split, a: &[T], b: &[T]) -> Vec<T> {
    struct Loop<'a, T>(Level, Split, &'a [T], &'a [T]);
    impl<T: Lane> BinaryBody for Loop<'_, T> {
        type Output = Vec<T>;
        fn run<F: Fn(f32, f32) -> f32 + Copy + Send + Sync>(self, f: F) -> Vec<T> {
            kernels::binary(self.0, self.1, self.2, self.3, f)
        }
    }
    op.with_f32(Loop(level, split, a, b))
}

/// `op` over a contiguous float operand (`op` as the backend runs it: see
/// [`UnaryOp::simplified`]).
pub(crate) fn unary<T: Lane>(op: UnaryOp, level: Level, src: &[T]) -> Vec<T> {
    match op {
        // The table's body (`math::relu`) in f32; on the bits in the 16-bit dtypes.
        UnaryOp::Relu => kernels::relu(level, kernels::SPLIT, src),
        _ => unary_split(op, level, kernels::SPLIT, src),
    }
}

/// A copy of a contiguous slice into a fresh vector, on the team's threads like the ops: the
/// baseline an elementwise op's bytes/s is measured against (`contiguous()`, `deep_clone`).
pub(crate) fn copy<T: Copy + Send + Sync>(src: &[T]) -> Vec<T> {
    kernels::fill_fresh(src.len(), kernels::SPLIT, &|r, part| {
        for (d, s) in part.iter_mut().zip(&src[r]) {
            d.write(*s);
        }
    })
}

/// `op` over two contiguous float operands of one length.
pub(crate) fn binary<T: Lane>(op: BinaryOp, level: Level, a: &[T], b: &[T]) -> Vec<T> {
    binary_split(op, level, kernels::SPLIT, a, b)
}
