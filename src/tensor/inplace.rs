//! Operations that write into an existing tensor's storage instead of making a new one: loading
//! saved values into parameters, and the optimizer's update. Every view of the storage sees the
//! change, which is the point: the model's parameters are updated where they live.
//!
//! The updates are fused (one pass over parameter, gradient and state) because they are memory
//! bound: a chain of separate elementwise ops would read and write every array several times.

use super::Tensor;
use crate::error::{Error, Result};
use crate::flops;

/// FLOPs per element of the fused updates: SGD is a multiply and a subtract; AdaGrad squares the
/// gradient, accumulates it, adds eps, takes the square root, divides, scales by lr and subtracts.
pub const SGD_FLOPS_PER_ELEMENT: u64 = 2;
pub const ADAGRAD_FLOPS_PER_ELEMENT: u64 = 7;

impl Tensor {
    fn check_update_target(&self, op: &'static str, other: &Tensor, what: &str) -> Result<()> {
        self.layout().contiguous_range_in(op, self.storage().len())?;
        if self.shape() != other.shape() {
            return Err(Error::shape(
                op,
                self.shape(),
                other.shape(),
                format!("the {what} must have the parameter's shape"),
            ));
        }
        if Tensor::same_storage(self, other) {
            return Err(Error::invalid(
                op,
                format!("the {what} shares storage with the tensor being updated"),
            ));
        }
        Ok(())
    }

    /// Overwrites this tensor's elements with `src`'s (same shape; `src` may be any layout and
    /// dtype, and is converted to this tensor's dtype). This tensor must be contiguous.
    pub fn copy_from(&self, src: &Tensor) -> Result<()> {
        self.check_update_target("copy_from", src, "source")?;
        if self.device() != src.device() {
            return Err(Error::DeviceMismatch {
                op: "copy_from",
                lhs: self.device().to_string(),
                rhs: src.device().to_string(),
            });
        }
        let source = src.to_dtype(self.dtype())?.contiguous()?;
        self.storage()
            .copy_from(self.layout(), source.storage(), source.layout())
    }

    /// `self -= lr · grad`, in place.
    pub fn sgd_update_(&self, grad: &Tensor, lr: f64) -> Result<()> {
        self.check_update_target("sgd_update", grad, "gradient")?;
        let grad = grad.contiguous()?;
        self.storage()
            .sgd_update(self.layout(), grad.storage(), grad.layout(), lr)?;
        flops::record("sgd_update", SGD_FLOPS_PER_ELEMENT * self.numel() as u64);
        Ok(())
    }

    /// AdaGrad, in place: `sum_sq += grad²; self -= lr · grad / √(sum_sq + eps)`.
    pub fn adagrad_update_(&self, sum_sq: &Tensor, grad: &Tensor, lr: f64, eps: f64) -> Result<()> {
        self.check_update_target("adagrad_update", grad, "gradient")?;
        self.check_update_target("adagrad_update", sum_sq, "squared-gradient sum")?;
        sum_sq.check_update_target("adagrad_update", grad, "gradient")?;
        let grad = grad.contiguous()?;
        self.storage().adagrad_update(
            self.layout(),
            (sum_sq.storage(), sum_sq.layout()),
            (grad.storage(), grad.layout()),
            lr,
            eps,
        )?;
        flops::record("adagrad_update", ADAGRAD_FLOPS_PER_ELEMENT * self.numel() as u64);
        Ok(())
    }
}
