//! Tensor helpers that reverse-mode differentiation needs: summing a gradient back down to the
//! shape of an operand that was broadcast, and tensors shaped like another one on its device.

use super::Tensor;
use crate::error::{Error, Result};

impl Tensor {
    /// Sums this gradient down to `shape`, undoing a broadcast: leading dimensions that the
    /// operand did not have are summed away, and so are dimensions where it had size 1. The
    /// result has exactly `shape` (a reshape of the reduction, not a copy).
    pub fn sum_to_shape(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        if shape.len() > self.ndim() {
            return Err(Error::shape(
                "sum_to_shape",
                self.shape(),
                shape,
                "the target has more dimensions than the gradient",
            ));
        }
        let lead = self.ndim() - shape.len();
        let mut dims: Vec<isize> = (0..lead as isize).collect();
        for (i, &size) in shape.iter().enumerate() {
            let have = self.shape()[lead + i];
            if size == 1 && have != 1 {
                dims.push((lead + i) as isize);
            } else if size != have {
                return Err(Error::shape(
                    "sum_to_shape",
                    self.shape(),
                    shape,
                    format!("dimension {} has size {have}, the target {size}", lead + i),
                ));
            }
        }
        let summed = if dims.is_empty() {
            self.clone()
        } else {
            self.sum(&dims, true)?
        };
        summed.reshape(shape)
    }

    /// Ones with this tensor's shape, dtype and device (the seed of a backward pass).
    pub fn ones_like(&self) -> Result<Tensor> {
        Tensor::full_on(self.shape(), 1.0, self.dtype(), self.device())
    }

    /// Zeros with this tensor's shape, dtype and device (fresh optimizer state).
    pub fn zeros_like(&self) -> Result<Tensor> {
        Tensor::zeros_on(self.shape(), self.dtype(), self.device())
    }
}
