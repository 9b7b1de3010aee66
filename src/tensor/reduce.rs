//! Reductions over one or more dimensions: `sum`, `mean`, `max`, `min` (declared in
//! `base::op`). Each counts one FLOP per input element.

use super::Tensor;
use crate::base::ReduceOp;
use crate::error::{Error, Result};
use crate::flops;

impl Tensor {
    /// Reduces over `dims` (negative numbers count from the end, as in PyTorch).
    pub fn reduce(&self, op: ReduceOp, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        let mut resolved = Vec::with_capacity(dims.len());
        for &d in dims {
            let r = self.resolve_dim(op.name(), d)?;
            if resolved.contains(&r) {
                return Err(Error::invalid(op.name(), format!("dimension {d} given twice")));
            }
            resolved.push(r);
        }
        resolved.sort_unstable();
        let kept: Vec<usize> = (0..self.ndim())
            .filter(|d| !resolved.contains(d))
            .map(|d| self.shape()[d])
            .collect();
        let mut out = self.fresh(self.storage().reduce(op, self.layout(), &resolved)?, &kept)?;
        flops::record(op.name(), op.flops(self.numel()));
        if keepdim {
            for &d in &resolved {
                out = out.unsqueeze(d)?;
            }
        }
        Ok(out)
    }

    /// Over every dimension, giving a 0-dimensional tensor.
    pub fn reduce_all(&self, op: ReduceOp) -> Result<Tensor> {
        let all: Vec<isize> = (0..self.ndim() as isize).collect();
        self.reduce(op, &all, false)
    }

    pub fn sum(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Sum, dims, keepdim)
    }
    pub fn mean(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Mean, dims, keepdim)
    }
    pub fn max(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Max, dims, keepdim)
    }
    pub fn min(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Min, dims, keepdim)
    }
    pub fn min_all(&self) -> Result<Tensor> {
        self.reduce_all(ReduceOp::Min)
    }
    pub fn sum_all(&self) -> Result<Tensor> {
        self.reduce_all(ReduceOp::Sum)
    }
    pub fn mean_all(&self) -> Result<Tensor> {
        self.reduce_all(ReduceOp::Mean)
    }
    pub fn max_all(&self) -> Result<Tensor> {
        self.reduce_all(ReduceOp::Max)
    }

    /// A dimension number, allowing negatives from the end.
    pub fn resolve_dim(&self, op: &'static str, d: isize) -> Result<usize> {
        let n = self.ndim() as isize;
        let r = if d < 0 { d + n } else { d };
        if r < 0 || r >= n {
            return Err(Error::invalid(
                op,
                format!("dimension {d} out of range for shape {:?}", self.shape()),
            ));
        }
        Ok(r as usize)
    }
}
