//! Differentiable operations: each computes its value with the tensor op of the same name and
//! records what its backward rule needs. The elementwise ops come from their declarations in
//! `base::op` (one method each, `Var::sqrt` for `UnaryOp::Sqrt`), with the derivative declared
//! there.

use super::Var;
use super::rules::Op;
use crate::base::op::{Saves, binary_op_table, unary_op_table};
use crate::base::{BinaryOp, UnaryOp};
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

fn shape(v: &Var) -> Vec<usize> {
    v.shape().to_vec()
}

/// `pub fn sqrt(&self) -> Result<Var>`, … from the unary table.
macro_rules! unary_methods {
    ($($(#[$meta:meta])* $variant:ident $(($s:ident))? => $method:ident { $($entry:tt)* })*) => {
        $(
            $(#[$meta])*
            pub fn $method(&self $(, $s: f64)?) -> Result<Var> {
                self.unary(UnaryOp::$variant $(($s))?)
            }
        )*
    };
}

/// `pub fn add(&self, other: &Var) -> Result<Var>`, … from the binary table.
macro_rules! binary_methods {
    ($($(#[$meta:meta])* $variant:ident => $method:ident { $($entry:tt)* })*) => {
        $(
            $(#[$meta])*
            pub fn $method(&self, other: &Var) -> Result<Var> {
                self.binary(other, BinaryOp::$variant)
            }
        )*
    };
}

impl Var {
    pub fn matmul(&self, other: &Var) -> Result<Var> {
        let value = self.value.matmul(&other.value)?;
        Ok(Var::from_op(value, "matmul", &[self, other], |needs| Op::MatMul {
            a: needs[1].then(|| self.value.clone()),
            b: needs[0].then(|| other.value.clone()),
            a_shape: shape(self),
            b_shape: shape(other),
        }))
    }

    /// A unary elementwise op, keeping the input or the output when its derivative reads it.
    pub fn unary(&self, op: UnaryOp) -> Result<Var> {
        let value = self.value.unary(op)?;
        let saved = match op.saves() {
            Saves::Nothing => None,
            Saves::Input => Some(self.value.clone()),
            Saves::Output => Some(value.clone()),
        };
        Ok(Var::from_op(value, op.name(), &[self], |_| Op::Unary { op, saved }))
    }

    /// A binary elementwise op (operands broadcast), keeping an operand only when a gradient
    /// that is wanted reads it.
    pub fn binary(&self, other: &Var, op: BinaryOp) -> Result<Var> {
        let value = self.value.binary(&other.value, op)?;
        Ok(Var::from_op(value, op.name(), &[self, other], |needs| {
            let keep = op.saves([needs[0], needs[1]]);
            Op::Binary {
                op,
                a: keep[0].then(|| self.value.clone()),
                b: keep[1].then(|| other.value.clone()),
                a_shape: shape(self),
                b_shape: shape(other),
            }
        }))
    }

    unary_op_table!(unary_methods);
    binary_op_table!(binary_methods);

    /// `x - s`.
    pub fn sub_scalar(&self, s: f64) -> Result<Var> {
        self.unary(UnaryOp::AddScalar(-s))
    }

    fn resolve_dims(&self, op: &'static str, dims: &[isize]) -> Result<Vec<usize>> {
        let mut out = dims
            .iter()
            .map(|&d| self.value.resolve_dim(op, d))
            .collect::<Result<Vec<_>>>()?;
        out.sort_unstable();
        Ok(out)
    }

    pub fn sum(&self, dims: &[isize], keepdim: bool) -> Result<Var> {
        let value = self.value.sum(dims, keepdim)?;
        let dims = self.resolve_dims("sum", dims)?;
        Ok(Var::from_op(value, "sum", &[self], |_| Op::Sum {
            in_shape: shape(self),
            dims,
            keepdim,
        }))
    }

    pub fn mean(&self, dims: &[isize], keepdim: bool) -> Result<Var> {
        let value = self.value.mean(dims, keepdim)?;
        let dims = self.resolve_dims("mean", dims)?;
        let count = dims.iter().map(|&d| self.shape()[d]).product();
        Ok(Var::from_op(value, "mean", &[self], |_| Op::Mean {
            in_shape: shape(self),
            dims,
            keepdim,
            count,
        }))
    }

    pub fn sum_all(&self) -> Result<Var> {
        let all: Vec<isize> = (0..self.value.ndim() as isize).collect();
        self.sum(&all, false)
    }

    pub fn mean_all(&self) -> Result<Var> {
        let all: Vec<isize> = (0..self.value.ndim() as isize).collect();
        self.mean(&all, false)
    }

    pub fn reshape(&self, new_shape: &[usize]) -> Result<Var> {
        Ok(Var::from_op(self.value.reshape(new_shape)?, "reshape", &[self], |_| {
            Op::Reshape { in_shape: shape(self) }
        }))
    }

    pub fn transpose(&self, d0: isize, d1: isize) -> Result<Var> {
        let value = self.value.transpose(d0, d1)?;
        let (a, b) = (
            self.value.resolve_dim("transpose", d0)?,
            self.value.resolve_dim("transpose", d1)?,
        );
        Ok(Var::from_op(value, "transpose", &[self], |_| Op::Transpose(a, b)))
    }

    /// Transpose of the last two dimensions.
    pub fn t(&self) -> Result<Var> {
        self.transpose(-2, -1)
    }

    /// Removes dimension `dim` (negative counts from the end), which must have size 1.
    pub fn squeeze(&self, dim: isize) -> Result<Var> {
        let d = self.value.resolve_dim("squeeze", dim)?;
        Ok(Var::from_op(self.value.squeeze(d)?, "squeeze", &[self], |_| {
            Op::Squeeze(d)
        }))
    }

    pub fn unsqueeze(&self, dim: usize) -> Result<Var> {
        Ok(Var::from_op(self.value.unsqueeze(dim)?, "unsqueeze", &[self], |_| {
            Op::Unsqueeze(dim)
        }))
    }

    /// A copy in another dtype; gradients flow back converted to the original dtype (this is how
    /// bf16 compute reaches fp32 master weights).
    pub fn to_dtype(&self, dtype: DType) -> Result<Var> {
        if dtype == self.value.dtype() {
            return Ok(self.clone());
        }
        let from = self.value.dtype();
        Ok(Var::from_op(self.value.to_dtype(dtype)?, "cast", &[self], |_| {
            Op::Cast { from }
        }))
    }
}

/// Mean squared error, `mean((pred − target)²)` (PyTorch's `F.mse_loss` with its default mean
/// reduction). The shapes must be equal: broadcasting here is almost always a bug.
pub fn mse_loss(pred: &Var, target: &Var) -> Result<Var> {
    if pred.shape() != target.shape() {
        return Err(Error::shape(
            "mse_loss",
            pred.shape(),
            target.shape(),
            "prediction and target must have the same shape",
        ));
    }
    let diff: Tensor = pred.value.sub(&target.value)?;
    let value = diff.square()?.mean_all()?;
    Ok(Var::from_op(value, "mse_loss", &[pred, target], |_| Op::MseLoss {
        diff,
    }))
}
