//! Every op, declared once. An elementwise op is one entry in a table (`unary.rs`, `binary.rs`):
//! its name, its CUDA kernel, its f32 arithmetic (the CPU backend's body), its integer arithmetic
//! (absent for ops whose result is not integral), the exact value it approximates, how closely,
//! and its derivative. Each layer reads the part it runs from that one entry:
//! - here: the op enums, `ALL` (the list tests iterate), names, kernel names, the arithmetic;
//! - the CPU backend calls `apply_f32`/`apply_i64`, and its vectorised loops take the f32 body
//!   as a closure (`with_f32`); the CUDA backend launches `<kernel>_<dtype>`
//!   (defined by one line in `kernels/elementwise.cu`: `tests/tensor/kernels_compile.rs` compiles every
//!   kernel a declared op can launch, on a machine without a GPU);
//! - the tensor layer gets a method per op (`Tensor::sqrt`), so does autograd (`Var::sqrt`), and
//!   autograd's backward runs the declared derivative (`derivative`, generic over [`Gradient`]).
//!
//! FLOPs: an elementwise op counts one per output element (GeLU and its derivative 20, the
//! lecture's convention: `GELU_FLOPS_PER_ELEMENT`), a reduction one per input element.

use crate::error::Result;

pub(crate) mod binary;
mod reduce;
mod unary;

pub use binary::{BinaryBody, BinaryOp};
pub use reduce::{ReduceOp, ReduceWalk};
pub use unary::{UnaryBody, UnaryOp};
pub(crate) use {binary::binary_op_table, unary::unary_op_table};

/// How closely an op's f32 arithmetic follows the exact value it declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accuracy {
    /// One IEEE-754 operation (+ − × ÷ √, negation): correctly rounded, so every backend gives
    /// the same bits.
    CorrectlyRounded,
    /// Two IEEE-754 operations (`1/√x`): within one unit in the last place, and the same bits on
    /// every backend (each rounds both steps the same way).
    TwoRoundings,
    /// A math-library function (`powf`): within one unit in the last place of the exact value on
    /// the CPU; CUDA's library lands a few units away from the CPU's.
    MathLibrary,
    /// A polynomial approximation (`base::math`: GeLU's `erf` and `exp`): within 1e-6·(1 + |x|)
    /// absolute of the exact value in f32 (a backward's `g·f'(x)`: |g| times that), the same bits
    /// on every CPU variant; CUDA's `erff` and `expf` land within the same bound.
    Approximation,
}

/// Which tensor an op's derivative reads, and so what autograd keeps for the backward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saves {
    Nothing,
    /// The op's input (`x`).
    Input,
    /// The op's output (`y`).
    Output,
}

/// A scalar as an integer operand, when it is one (`x + 2.0` stays integral, `x + 0.5` does not).
pub fn integral(s: f64) -> Option<i64> {
    (s.fract() == 0.0).then_some(s as i64)
}

/// FLOPs of an elementwise op with `outputs` output elements, counting `per_element` for each.
pub fn elementwise_flops(outputs: usize, per_element: u64) -> u64 {
    outputs as u64 * per_element
}

/// What the lecture counts for one element of GeLU (forward or backward): about 20 FLOPs, its
/// `erf` or `tanh` and the products around it. Every other elementwise op counts 1, ReLU too.
pub const GELU_FLOPS_PER_ELEMENT: u64 = 20;

/// The tensor operations the table's derivatives (`grad:`, `grad_a:`, `grad_b:`) are written
/// in. The derivatives are generic over it (`UnaryOp::derivative`, `BinaryOp::derivatives`), so
/// they are generated with the op from its one table entry; autograd's tensor implements it.
pub trait Gradient: Clone {
    fn neg(&self) -> Result<Self>;
    fn mul(&self, other: &Self) -> Result<Self>;
    fn div(&self, other: &Self) -> Result<Self>;
    fn mul_scalar(&self, s: f64) -> Result<Self>;
    fn div_scalar(&self, s: f64) -> Result<Self>;
    fn square(&self) -> Result<Self>;
    fn exp(&self) -> Result<Self>;
    fn pow_scalar(&self, p: f64) -> Result<Self>;
    fn relu_backward(&self, x: &Self) -> Result<Self>;
    fn gelu_backward(&self, x: &Self) -> Result<Self>;
    fn gelu_tanh_backward(&self, x: &Self) -> Result<Self>;
}

/// A derivative needed a tensor its op said it saves, and none was given (a bug in autograd, not
/// in the input).
pub(crate) fn not_saved() -> crate::error::Error {
    crate::error::Error::invalid("backward", "a tensor the rule needs was not saved (internal error)")
}

/// What a unary derivative of the form `|g, x|`, `|g, y|` or `|g|` keeps for backward.
macro_rules! saves {
    () => {
        $crate::base::op::Saves::Nothing
    };
    (x) => {
        $crate::base::op::Saves::Input
    };
    (y) => {
        $crate::base::op::Saves::Output
    };
}
pub(crate) use saves;

/// Whether a binary derivative's parameter list (after `g`) names operand `a` or `b`.
macro_rules! reads {
    ($want:ident:) => {
        false
    };
    (a: a $($rest:ident)*) => {
        true
    };
    (b: b $($rest:ident)*) => {
        true
    };
    ($want:ident: $other:ident $($rest:ident)*) => {
        $crate::base::op::reads!($want: $($rest)*)
    };
}
pub(crate) use reads;

/// The operand a binary derivative names (`a` or `b`), as saved.
macro_rules! operand {
    (a, $a:expr, $b:expr) => {
        $a.ok_or_else($crate::base::op::not_saved)?
    };
    (b, $a:expr, $b:expr) => {
        $b.ok_or_else($crate::base::op::not_saved)?
    };
}
pub(crate) use operand;
