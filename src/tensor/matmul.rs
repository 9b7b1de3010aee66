//! `matmul` with PyTorch's rules: vectors are promoted to matrices, leading (batch) dimensions
//! broadcast. Counts 2·m·n·k FLOPs per matrix product: one multiply and one add per term.

use super::Tensor;
use crate::base::layout::broadcast_shapes;
use crate::error::{Error, Result};
use crate::flops;

impl Tensor {
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        if self.dtype() != other.dtype() {
            return Err(Error::DTypeMismatch {
                op: "matmul",
                lhs: self.dtype().name(),
                rhs: other.dtype().name(),
            });
        }
        if self.ndim() == 0 || other.ndim() == 0 {
            return Err(Error::shape(
                "matmul",
                self.shape(),
                other.shape(),
                "both operands need at least one dimension",
            ));
        }
        // Vectors become 1×k and k×1 matrices; the extra dimension is removed again at the end.
        let a = if self.ndim() == 1 {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        let b = if other.ndim() == 1 {
            other.unsqueeze(1)?
        } else {
            other.clone()
        };
        let (an, bn) = (a.ndim(), b.ndim());
        let (m, k) = (a.shape()[an - 2], a.shape()[an - 1]);
        let (k2, n) = (b.shape()[bn - 2], b.shape()[bn - 1]);
        if k != k2 {
            return Err(Error::shape(
                "matmul",
                self.shape(),
                other.shape(),
                format!("inner dimensions differ ({k} vs {k2})"),
            ));
        }
        // Named with the operands' full shapes: the batch parts alone would not tell the reader
        // which call went wrong.
        let batch = broadcast_shapes("matmul", &a.shape()[..an - 2], &b.shape()[..bn - 2]).map_err(|e| {
            let why = match e {
                Error::ShapeMismatch { why, .. } => why,
                different => different.to_string(),
            };
            Error::shape(
                "matmul",
                self.shape(),
                other.shape(),
                format!("batch dimensions do not broadcast: {why}"),
            )
        })?;
        let with = |tail: [usize; 2]| batch.iter().copied().chain(tail).collect::<Vec<_>>();
        let (la, lb) = (
            a.layout().broadcast_to(&with([m, k]))?,
            b.layout().broadcast_to(&with([k, n]))?,
        );
        let out = a.fresh(a.storage().matmul(&la, b.storage(), &lb)?, &with([m, n]))?;
        let products: usize = batch.iter().product();
        flops::record("matmul", 2 * (products * m * n * k) as u64);

        let mut out = out;
        if other.ndim() == 1 {
            out = out.squeeze(out.ndim() - 1)?;
        }
        if self.ndim() == 1 {
            out = out.squeeze(out.ndim() - if other.ndim() == 1 { 1 } else { 2 })?;
        }
        Ok(out)
    }
}
