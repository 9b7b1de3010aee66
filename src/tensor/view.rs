//! Views: operations that only change the layout. The result shares storage with its input, so
//! they cost no memory and no FLOPs, and a write through one is seen through the other.
//! `contiguous`, `reshape` of a non-contiguous tensor, `to_dtype` and `to_device` are the copies.

use super::{DType, Tensor};
use crate::device::Device;
use crate::error::Result;

impl Tensor {
    /// `x[index]` along `dim`: the dimension disappears.
    pub fn select(&self, dim: usize, index: usize) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().select(dim, index)?))
    }

    /// `x[.., start..start+len, ..]` along `dim`: the dimension stays, shorter.
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().narrow(dim, start, len)?))
    }

    pub fn transpose(&self, d0: isize, d1: isize) -> Result<Tensor> {
        let (a, b) = (self.resolve_dim("transpose", d0)?, self.resolve_dim("transpose", d1)?);
        Ok(self.with_layout(self.layout().transpose(a, b)?))
    }

    /// Transpose of the last two dimensions (`x.mT`).
    pub fn t(&self) -> Result<Tensor> {
        self.transpose(-2, -1)
    }

    pub fn permute(&self, dims: &[usize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().permute(dims)?))
    }

    /// A new shape over the same storage. Fails for non-contiguous tensors (say, a transpose):
    /// their elements are not in the order the new shape would read them.
    pub fn view(&self, shape: &[usize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().view(shape)?))
    }

    /// `view` when possible, otherwise a contiguous copy reshaped.
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        // Checked here so the error names `reshape` (and nothing is copied for a bad shape).
        if shape.iter().product::<usize>() != self.numel() {
            return Err(crate::error::Error::shape(
                "reshape",
                self.shape(),
                shape,
                "the number of elements differs",
            ));
        }
        if self.is_contiguous() {
            self.view(shape)
        } else {
            self.contiguous()?.view(shape)
        }
    }

    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().broadcast_to(shape)?))
    }

    pub fn unsqueeze(&self, dim: usize) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().unsqueeze(dim)?))
    }

    pub fn squeeze(&self, dim: usize) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().squeeze(dim)?))
    }

    /// The same values laid out row-major in fresh storage; returns `self` when already so.
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        self.deep_clone()
    }

    /// A copy converted to `dtype` (rounding to nearest even for narrower floats).
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        self.fresh(self.storage().cast(self.layout(), dtype)?, self.shape())
    }

    /// A copy on `device` (or `self` if it is already there).
    pub fn to_device(&self, device: &Device) -> Result<Tensor> {
        self.copy_to(device, false)
    }

    /// `to_device` for host data going to a GPU through pinned (page-locked) memory and an
    /// asynchronous copy, as `DataLoader(pin_memory=True)` and `.to(device, non_blocking=True)`
    /// do. Elsewhere it is `to_device`.
    pub fn to_device_pinned(&self, device: &Device) -> Result<Tensor> {
        self.copy_to(device, true)
    }

    fn copy_to(&self, device: &Device, pinned: bool) -> Result<Tensor> {
        if self.device() == device {
            return Ok(self.clone());
        }
        // Only the elements the view shows travel, in row-major order.
        let x = self.contiguous()?;
        let range = x.layout().contiguous_range_in("to_device", x.storage().len())?;
        let buffer = x.storage().copy_to(range, device, pinned)?;
        Tensor::from_buffer(buffer, x.shape(), device.clone())
    }

    /// A fresh copy, never sharing storage.
    pub fn deep_clone(&self) -> Result<Tensor> {
        self.fresh(self.storage().gather(self.layout())?, self.shape())
    }
}
