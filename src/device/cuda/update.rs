//! The CUDA side of the in-place ops: the optimizers' fused updates and `copy_from`. Views must
//! be contiguous and inside their buffers (checked first).

use std::sync::Arc;

use cudarc::driver::result as drv_result;

use super::ops::{self, UpdateKernel};
use super::{CudaBuffer, driver_error};
use crate::base::Layout;
use crate::error::{Error, Result};

/// `param -= lr · grad`, in place (both contiguous, one dtype).
pub fn sgd_update(param: &mut CudaBuffer, pl: &Layout, grad: &CudaBuffer, gl: &Layout, lr: f64) -> Result<()> {
    sgd_update_with(UpdateKernel::Fast, param, pl, grad, gl, lr)
}

pub fn sgd_update_with(
    which: UpdateKernel,
    param: &mut CudaBuffer,
    pl: &Layout,
    grad: &CudaBuffer,
    gl: &Layout,
    lr: f64,
) -> Result<()> {
    let (rp, rg) = (
        pl.contiguous_range_in("sgd_update", param.len())?,
        gl.contiguous_range_in("sgd_update", grad.len())?,
    );
    if param.dtype() != grad.dtype() {
        return Err(Error::DTypeMismatch {
            op: "sgd_update",
            lhs: param.dtype().name(),
            rhs: grad.dtype().name(),
        });
    }
    let n = rp.len();
    if n == 0 {
        return Ok(());
    }
    let b = Arc::clone(param.backend());
    b.launch(&ops::sgd(
        param.dtype(),
        param.element_ptr(rp.start),
        grad.element_ptr(rg.start),
        n,
        lr,
        which,
        b.sm_count(),
    )?)
}

/// AdaGrad in place: `sum_sq += grad²; param -= lr · grad / √(sum_sq + eps)`.
#[allow(clippy::too_many_arguments)]
pub fn adagrad_update(
    param: &mut CudaBuffer,
    pl: &Layout,
    sum_sq: &mut CudaBuffer,
    sl: &Layout,
    grad: &CudaBuffer,
    gl: &Layout,
    lr: f64,
    eps: f64,
) -> Result<()> {
    adagrad_update_with(UpdateKernel::Fast, param, pl, sum_sq, sl, grad, gl, lr, eps)
}

#[allow(clippy::too_many_arguments)]
pub fn adagrad_update_with(
    which: UpdateKernel,
    param: &mut CudaBuffer,
    pl: &Layout,
    sum_sq: &mut CudaBuffer,
    sl: &Layout,
    grad: &CudaBuffer,
    gl: &Layout,
    lr: f64,
    eps: f64,
) -> Result<()> {
    let rp = pl.contiguous_range_in("adagrad_update", param.len())?;
    let rs = sl.contiguous_range_in("adagrad_update", sum_sq.len())?;
    let rg = gl.contiguous_range_in("adagrad_update", grad.len())?;
    for other in [sum_sq.dtype(), grad.dtype()] {
        if other != param.dtype() {
            return Err(Error::DTypeMismatch {
                op: "adagrad_update",
                lhs: param.dtype().name(),
                rhs: other.name(),
            });
        }
    }
    let n = rp.len();
    if n == 0 {
        return Ok(());
    }
    let b = Arc::clone(param.backend());
    let plan = ops::adagrad(
        param.dtype(),
        param.element_ptr(rp.start),
        sum_sq.element_ptr(rs.start),
        grad.element_ptr(rg.start),
        n,
        lr,
        eps,
        which,
        b.sm_count(),
    )?;
    b.launch(&plan)
}

/// `dst[dl] = src[sl]`: both contiguous, one dtype (the tensor layer casts first), device to device.
pub fn copy_into(dst: &mut CudaBuffer, dl: &Layout, src: &CudaBuffer, sl: &Layout) -> Result<()> {
    let (rd, rs) = (
        dl.contiguous_range_in("copy_from", dst.len())?,
        sl.contiguous_range_in("copy_from", src.len())?,
    );
    if dst.dtype() != src.dtype() {
        return Err(Error::DTypeMismatch {
            op: "copy_from",
            lhs: dst.dtype().name(),
            rhs: src.dtype().name(),
        });
    }
    let bytes = rd.len() * dst.dtype().size_in_bytes();
    if bytes == 0 {
        return Ok(());
    }
    let b = Arc::clone(dst.backend());
    b.context()
        .bind_to_thread()
        .map_err(|e| driver_error("binding the context", e))?;
    // SAFETY: both ranges were checked against their buffers; the copy is queued on the stream
    // that orders every use of these buffers.
    unsafe {
        drv_result::memcpy_dtod_async(
            dst.element_ptr(rd.start),
            src.element_ptr(rs.start),
            bytes,
            b.stream().cu_stream(),
        )
    }
    .map_err(|e| driver_error("copying device to device", e))
}
