//! Contiguous elementwise ops on f32, bf16 and f16 at the memory's speed: one loop per op, with
//! the op's `f32:` expression from its table entry inlined (the `match op` happens once per call,
//! outside the loop), vectorised for the instruction set `CS336_CPU_ISA` allows, and split over
//! the team's threads from `kernels::MAP_PARALLEL_MIN` elements on. bf16 and f16 are widened a block
//! at a time, computed in f32 and rounded back once, so the results are the bits of the scalar
//! loop (widen, compute, round each element), on every instruction set and thread count.
//!
//! The dispatch is generated from the op tables (`unary_op_table!`, `binary_op_table!`): a new
//! table entry gets its loops with no change here. Strided and broadcast operands take the plain
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

// The table's `f32:` bodies are written in `base::op`'s scope and expanded here: they may call
// helpers as `math::…` (the `#[inline(always)]` functions in `base`), which this brings into scope.
use crate::base::op::{binary_op_table, unary_op_table};
#[allow(unused_imports)]
use crate::base::*;
use crate::base::{BinaryOp, UnaryOp};
use crate::device::cpu::team::Split;

/// `unary(op, level, src)`: the op over a contiguous operand, one loop per table entry.
macro_rules! cpu_unary_dispatch {
    ($(
        $(#[$meta:meta])*
        $variant:ident $(($s:ident))? => $method:ident {
            name: $name:literal,
            $(kernel: $kernel:literal,)?
            f32: |$fx:ident| $f32:expr,
            $($rest:tt)*
        }
    )*) => {
        /// [`unary`], cut for threads as `split` says.
        fn unary_split<T: Lane>(op: UnaryOp, level: Level, split: Split, src: &[T]) -> Vec<T> {
            match op {
                $(UnaryOp::$variant $(($s))? => kernels::unary(level, split, src, move |$fx: f32| -> f32 { $f32 }),)*
            }
        }
    };
}

/// `binary(op, level, a, b)`: the op over two contiguous operands, one loop per table entry.
macro_rules! cpu_binary_dispatch {
    ($(
        $(#[$meta:meta])*
        $variant:ident => $method:ident {
            name: $name:literal,
            $(kernel: $kernel:literal,)?
            f32: |$fa:ident, $fb:ident| $f32:expr,
            $($rest:tt)*
        }
    )*) => {
        /// [`binary`], cut for threads as `split` says.
        fn binary_split<T: Lane>(op: BinaryOp, level: Level, split: Split, a: &[T], b: &[T]) -> Vec<T> {
            match op {
                $(BinaryOp::$variant => kernels::binary(level, split, a, b, move |$fa: f32, $fb: f32| -> f32 { $f32 }),)*
            }
        }
    };
}

unary_op_table!(cpu_unary_dispatch);
binary_op_table!(cpu_binary_dispatch);

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
