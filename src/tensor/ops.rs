//! Elementwise operations (the lecture's `pow`, `sqrt`, `rsqrt`, `+`, `*`, `/`, `triu`), with
//! numpy-style broadcasting. The ops are declared in `base::op`; each gets a method here from its
//! declaration (`x.sqrt()` is `x.unary(UnaryOp::Sqrt)`), and reports its FLOPs (one per output
//! element) to the FLOP counter.

use super::Tensor;
use crate::base::layout::broadcast_shapes;
use crate::base::op::{binary_op_table, unary_op_table};
use crate::base::{BinaryOp, UnaryOp};
use crate::error::{Error, Result};
use crate::flops;

/// `pub fn sqrt(&self) -> Result<Tensor>`, … from the unary table.
macro_rules! unary_methods {
    ($($(#[$meta:meta])* $variant:ident $(($s:ident))? => $method:ident { $($entry:tt)* })*) => {
        $(
            $(#[$meta])*
            pub fn $method(&self $(, $s: f64)?) -> Result<Tensor> {
                self.unary(UnaryOp::$variant $(($s))?)
            }
        )*
    };
}

/// `pub fn add(&self, other: &Tensor) -> Result<Tensor>`, … from the binary table.
macro_rules! binary_methods {
    ($($(#[$meta:meta])* $variant:ident => $method:ident { $($entry:tt)* })*) => {
        $(
            $(#[$meta])*
            pub fn $method(&self, other: &Tensor) -> Result<Tensor> {
                self.binary(other, BinaryOp::$variant)
            }
        )*
    };
}

impl Tensor {
    pub fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        let out = self.fresh(self.storage().unary(op, self.layout())?, self.shape())?;
        flops::record(op.name(), op.flops(out.numel()));
        Ok(out)
    }

    /// Elementwise `op` after broadcasting both operands to a common shape.
    pub fn binary(&self, other: &Tensor, op: BinaryOp) -> Result<Tensor> {
        if self.dtype() != other.dtype() {
            return Err(Error::DTypeMismatch {
                op: op.name(),
                lhs: self.dtype().name(),
                rhs: other.dtype().name(),
            });
        }
        let shape = broadcast_shapes(op.name(), self.shape(), other.shape())?;
        let (la, lb) = (
            self.layout().broadcast_to(&shape)?,
            other.layout().broadcast_to(&shape)?,
        );
        let out = self.fresh(self.storage().binary(op, &la, other.storage(), &lb)?, &shape)?;
        flops::record(op.name(), op.flops(out.numel()));
        Ok(out)
    }

    unary_op_table!(unary_methods);
    binary_op_table!(binary_methods);

    /// `x - s`.
    pub fn sub_scalar(&self, s: f64) -> Result<Tensor> {
        self.unary(UnaryOp::AddScalar(-s))
    }

    /// Upper triangle of the last two dimensions: elements with column ≥ row + `diagonal` are
    /// kept, the rest set to 0 (the causal-mask building block).
    pub fn triu(&self, diagonal: i64) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(Error::invalid(
                "triu",
                format!("needs at least 2 dimensions, got shape {:?}", self.shape()),
            ));
        }
        self.fresh(self.storage().triu(self.layout(), diagonal)?, self.shape())
    }
}
