//! The CUDA side of every dispatch function in `device/mod.rs`: plan, allocate, launch.
//! Each function checks its views against their buffers first, so no kernel reads or writes out
//! of bounds.

use std::sync::Arc;

use cudarc::driver::result as drv_result;

use super::alloc::with_cuda_data;
use super::blas::{self, GemmMode, GemmPtrs};
use super::ops::{self, Distribution, UpdateKernel};
use super::{CudaBackend, CudaBuffer, CudaData, DeviceMem, driver_error};
use crate::device::check_bounds;
use crate::error::{Error, Result};
use crate::tensor::{BinaryOp, BufferElement, CpuBuffer, DType, Element, Layout, ReduceOp, UnaryOp};

pub fn unary(op: UnaryOp, x: &CudaBuffer, layout: &Layout) -> Result<CudaBuffer> {
    check_bounds(op.name(), layout, x.len())?;
    let b = x.backend();
    let out = b.alloc(x.dtype(), layout.numel())?;
    if layout.numel() > 0 {
        b.launch(&ops::unary(
            op,
            x.dtype(),
            out.device_ptr(),
            x.device_ptr(),
            layout,
            b.sm_count(),
        )?)?;
    }
    Ok(out)
}

pub fn binary(op: BinaryOp, a: &CudaBuffer, la: &Layout, b: &CudaBuffer, lb: &Layout) -> Result<CudaBuffer> {
    check_bounds(op.name(), la, a.len())?;
    check_bounds(op.name(), lb, b.len())?;
    if a.dtype() != b.dtype() {
        return Err(Error::DTypeMismatch {
            op: op.name(),
            lhs: a.dtype().name(),
            rhs: b.dtype().name(),
        });
    }
    let be = a.backend();
    let out = be.alloc(a.dtype(), la.numel())?;
    if la.numel() > 0 {
        be.launch(&ops::binary(
            op,
            a.dtype(),
            out.device_ptr(),
            (a.device_ptr(), la),
            (b.device_ptr(), lb),
            be.sm_count(),
        )?)?;
    }
    Ok(out)
}

/// Reduces `dims` (sorted, distinct) of `layout`; the result has those dims removed.
pub fn reduce(op: ReduceOp, x: &CudaBuffer, layout: &Layout, dims: &[usize]) -> Result<CudaBuffer> {
    check_bounds(op.name(), layout, x.len())?;
    let kept: Vec<usize> = (0..layout.ndim()).filter(|d| !dims.contains(d)).collect();
    let outputs: usize = kept.iter().map(|&d| layout.shape[d]).product();
    let run: usize = dims.iter().map(|&d| layout.shape[d]).product();
    if run == 0 && matches!(op, ReduceOp::Max | ReduceOp::Min) {
        return Err(Error::invalid(
            op.name(),
            format!(
                "cannot take the {} over an empty dimension (shape {:?})",
                op.name(),
                layout.shape
            ),
        ));
    }
    let order: Vec<usize> = kept.iter().copied().chain(dims.iter().copied()).collect();
    let walk = layout.permute(&order)?;
    let b = x.backend();
    let out = b.alloc(x.dtype(), outputs)?;
    if outputs == 0 {
        return Ok(out);
    }
    let (chunks, _) = ops::reduce_chunks(outputs, run, b.sm_count());
    let partial = b.alloc_raw::<f64>(outputs * chunks)?;
    let plan = ops::reduce(
        op,
        x.dtype(),
        out.device_ptr(),
        partial.device_ptr(),
        x.device_ptr(),
        &walk,
        outputs,
        run,
        b.sm_count(),
    )?;
    b.launch(&plan.first)?;
    b.launch(&plan.finish)?;
    Ok(out)
}

/// `a`: [batch…, m, k], `b`: [batch…, k, n] with identical (already broadcast) batch shapes; the
/// output is contiguous [batch…, m, n].
pub fn matmul(a: &CudaBuffer, la: &Layout, b: &CudaBuffer, lb: &Layout) -> Result<CudaBuffer> {
    check_bounds("matmul", la, a.len())?;
    check_bounds("matmul", lb, b.len())?;
    if a.dtype() != b.dtype() {
        return Err(Error::DTypeMismatch {
            op: "matmul",
            lhs: a.dtype().name(),
            rhs: b.dtype().name(),
        });
    }
    let be = a.backend();
    let mode = GemmMode::for_dtype(a.dtype(), be.f32_matmul())?;
    matmul_with(mode, a, la, b, lb)
}

/// `matmul` with an explicit precision (f32 tensors: Fp32 or Tf32; bf16: Bf16 or Bf16F32Out).
pub fn matmul_with(mode: GemmMode, a: &CudaBuffer, la: &Layout, b: &CudaBuffer, lb: &Layout) -> Result<CudaBuffer> {
    if a.dtype() != mode.input_dtype() || b.dtype() != mode.input_dtype() {
        return Err(Error::invalid(
            "matmul",
            format!(
                "{} needs {} inputs, got {} and {}",
                mode.name(),
                mode.input_dtype(),
                a.dtype(),
                b.dtype()
            ),
        ));
    }
    let be = a.backend();
    let nd = la.ndim();
    let (m, k, n) = (la.shape[nd - 2], la.shape[nd - 1], lb.shape[nd - 1]);
    let batch: usize = la.shape[..nd - 2].iter().product();
    let out = be.alloc(mode.output_dtype(), batch * m * n)?;
    if out.is_empty() {
        return Ok(out);
    }
    if k == 0 {
        // An empty sum: every output is 0.
        be.launch(&ops::fill(
            mode.output_dtype(),
            out.device_ptr(),
            out.len(),
            0.0,
            be.sm_count(),
        )?)?;
        return Ok(out);
    }
    // Operands cuBLAS cannot take as they are get a contiguous copy first.
    let (a_copy, b_copy);
    let (mut pa, mut pla, mut pb, mut plb) = (a, la.clone(), b, lb.clone());
    let plan = match blas::plan(la, lb) {
        Ok(p) => p,
        Err(needs) => {
            if needs.a {
                a_copy = gather(a, la)?;
                pa = &a_copy;
                pla = Layout::contiguous(&la.shape);
            }
            if needs.b {
                b_copy = gather(b, lb)?;
                pb = &b_copy;
                plb = Layout::contiguous(&lb.shape);
            }
            blas::plan(&pla, &plb).map_err(|_| {
                Error::Cuda(format!(
                    "matmul: no cuBLAS layout for contiguous {:?} x {:?}",
                    pla.shape, plb.shape
                ))
            })?
        }
    };
    let handle = be.blas()?;
    // SAFETY: the plan comes from bounds-checked layouts over these buffers, of the mode's dtypes.
    unsafe {
        blas::run(
            *handle.handle(),
            mode,
            &plan,
            GemmPtrs {
                a: pa.device_ptr(),
                b: pb.device_ptr(),
                c: out.device_ptr(),
            },
        )
    }?;
    Ok(out)
}

/// A contiguous copy of a strided view (`contiguous()`).
pub fn gather(x: &CudaBuffer, layout: &Layout) -> Result<CudaBuffer> {
    check_bounds("contiguous", layout, x.len())?;
    let b = x.backend();
    let out = b.alloc(x.dtype(), layout.numel())?;
    if layout.numel() > 0 {
        b.launch(&ops::gather(
            x.dtype(),
            out.device_ptr(),
            x.device_ptr(),
            layout,
            b.sm_count(),
        )?)?;
    }
    Ok(out)
}

pub fn cast(x: &CudaBuffer, layout: &Layout, dtype: DType) -> Result<CudaBuffer> {
    check_bounds("to_dtype", layout, x.len())?;
    if dtype == x.dtype() {
        return gather(x, layout);
    }
    let b = x.backend();
    let out = b.alloc(dtype, layout.numel())?;
    if layout.numel() > 0 {
        b.launch(&ops::cast(
            x.dtype(),
            dtype,
            out.device_ptr(),
            x.device_ptr(),
            layout,
            b.sm_count(),
        )?)?;
    }
    Ok(out)
}

pub fn triu(x: &CudaBuffer, layout: &Layout, diagonal: i64) -> Result<CudaBuffer> {
    check_bounds("triu", layout, x.len())?;
    let b = x.backend();
    let out = b.alloc(x.dtype(), layout.numel())?;
    if layout.numel() > 0 {
        b.launch(&ops::triu(
            x.dtype(),
            out.device_ptr(),
            x.device_ptr(),
            layout,
            diagonal,
            b.sm_count(),
        )?)?;
    }
    Ok(out)
}

/// `len` elements of `value` rounded into `dtype`, made on the device.
pub fn full(backend: &Arc<CudaBackend>, dtype: DType, len: usize, value: f64) -> Result<CudaBuffer> {
    let out = backend.alloc(dtype, len)?;
    if len > 0 {
        backend.launch(&ops::fill(dtype, out.device_ptr(), len, value, backend.sm_count())?)?;
    }
    Ok(out)
}

/// `len` random elements drawn on the device from `seed`.
pub fn random(
    backend: &Arc<CudaBackend>,
    dist: Distribution,
    dtype: DType,
    len: usize,
    seed: u64,
) -> Result<CudaBuffer> {
    let out = backend.alloc(dtype, len)?;
    if len > 0 {
        backend.launch(&ops::random(
            dist,
            dtype,
            out.device_ptr(),
            len,
            seed,
            backend.sm_count(),
        )?)?;
    }
    Ok(out)
}

/// The contiguous range a layout covers, for the in-place ops (which need contiguous views).
fn contiguous_range(op: &'static str, layout: &Layout, len: usize) -> Result<std::ops::Range<usize>> {
    let r = layout.contiguous_range().ok_or_else(|| Error::NotContiguous {
        op,
        shape: layout.shape.clone(),
        strides: layout.strides.clone(),
    })?;
    if r.end > len {
        return Err(Error::invalid(
            op,
            format!("layout {layout:?} reaches past the end of its storage ({len} elements)"),
        ));
    }
    Ok(r)
}

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
        contiguous_range("sgd_update", pl, param.len())?,
        contiguous_range("sgd_update", gl, grad.len())?,
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
    let rp = contiguous_range("adagrad_update", pl, param.len())?;
    let rs = contiguous_range("adagrad_update", sl, sum_sq.len())?;
    let rg = contiguous_range("adagrad_update", gl, grad.len())?;
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

/// `dst[dl] = src[sl]`: both contiguous, one dtype (the dispatcher casts first), device to device.
pub fn copy_into(dst: &mut CudaBuffer, dl: &Layout, src: &CudaBuffer, sl: &Layout) -> Result<()> {
    let (rd, rs) = (
        contiguous_range("copy_from", dl, dst.len())?,
        contiguous_range("copy_from", sl, src.len())?,
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

/// The fused mean squared error `mean((pred - target)²)` as a 0-dimensional buffer.
pub fn mse_loss(pred: &CudaBuffer, lp: &Layout, target: &CudaBuffer, lt: &Layout) -> Result<CudaBuffer> {
    check_bounds("mse_loss", lp, pred.len())?;
    check_bounds("mse_loss", lt, target.len())?;
    if pred.dtype() != target.dtype() {
        return Err(Error::DTypeMismatch {
            op: "mse_loss",
            lhs: pred.dtype().name(),
            rhs: target.dtype().name(),
        });
    }
    let b = pred.backend();
    let out = b.alloc(pred.dtype(), 1)?;
    let grid = super::launch::grid_for(lp.numel(), b.sm_count());
    let partial = b.alloc_raw::<f64>(grid.0 as usize)?;
    let (first, finish, _) = ops::mse(
        pred.dtype(),
        out.device_ptr(),
        partial.device_ptr(),
        (pred.device_ptr(), lp),
        (target.device_ptr(), lt),
        b.sm_count(),
    )?;
    b.launch(&first)?;
    b.launch(&finish)?;
    Ok(out)
}

// ---- host <-> device ---------------------------------------------------------------------------

fn upload_typed<T: cudarc::driver::DeviceRepr>(b: &Arc<CudaBackend>, host: &[T]) -> Result<DeviceMem<T>> {
    let mut mem = b.alloc_raw::<T>(host.len())?;
    if !host.is_empty() {
        b.stream()
            .memcpy_htod(host, mem.slice_mut())
            .map_err(|e| driver_error("copying host to device", e))?;
    }
    Ok(mem)
}

/// Copies `host[range]` to a new device buffer.
pub fn upload(backend: &Arc<CudaBackend>, host: &CpuBuffer, range: std::ops::Range<usize>) -> Result<CudaBuffer> {
    let data = match host {
        CpuBuffer::F32(v) => CudaData::F32(upload_typed(backend, &v[range])?),
        CpuBuffer::F16(v) => CudaData::F16(upload_typed(backend, &v[range])?),
        CpuBuffer::BF16(v) => CudaData::BF16(upload_typed(backend, &v[range])?),
        CpuBuffer::I32(v) => CudaData::I32(upload_typed(backend, &v[range])?),
        CpuBuffer::I64(v) => CudaData::I64(upload_typed(backend, &v[range])?),
    };
    Ok(CudaBuffer {
        data,
        backend: Arc::clone(backend),
    })
}

fn download_typed<T: cudarc::driver::DeviceRepr + BufferElement>(
    b: &CudaBackend,
    mem: &DeviceMem<T>,
    range: std::ops::Range<usize>,
) -> Result<CpuBuffer> {
    let mut host = vec![T::zero(); range.len()];
    if !range.is_empty() {
        let view = mem.slice().slice(range);
        b.stream()
            .memcpy_dtoh(&view, &mut host)
            .map_err(|e| driver_error("copying device to host", e))?;
        // A copy into pageable memory may return before it lands; wait before the host reads.
        b.synchronize()?;
    }
    Ok(T::wrap(host))
}

/// Copies elements `range` of a device buffer to the host.
pub fn download(x: &CudaBuffer, range: std::ops::Range<usize>) -> Result<CpuBuffer> {
    if range.end > x.len() {
        return Err(Error::invalid(
            "to_device",
            format!("elements {range:?} of a {}-element buffer", x.len()),
        ));
    }
    let b = x.backend();
    with_cuda_data!(&x.data, m => download_typed(b, m, range))
}

/// One element, as f64.
pub fn get_f64(x: &CudaBuffer, index: usize) -> Result<f64> {
    let one = download(x, index..index + 1)?;
    one.get_f64(0)
        .ok_or_else(|| Error::invalid("get", format!("storage position {index} out of range")))
}

/// Writes one element (rounded into the buffer's dtype on the host, as the CPU backend does).
pub fn set_f64(x: &mut CudaBuffer, index: usize, value: f64) -> Result<()> {
    if index >= x.len() {
        return Err(Error::invalid("set", format!("storage position {index} out of range")));
    }
    fn put<T: cudarc::driver::DeviceRepr + Element>(
        b: &CudaBackend,
        mem: &mut DeviceMem<T>,
        index: usize,
        value: f64,
    ) -> Result<()> {
        let host = [T::from_f64(value)];
        let stream = std::sync::Arc::clone(b.stream());
        let mut view = mem.slice_mut().slice_mut(index..index + 1);
        stream
            .memcpy_htod(&host, &mut view)
            .map_err(|e| driver_error("copying host to device", e))?;
        // `host` lives on this stack frame: wait until the copy has read it.
        b.synchronize()
    }
    let b = Arc::clone(x.backend());
    with_cuda_data!(&mut x.data, m => put(&b, m, index, value))
}

/// Copies a contiguous host range to the device through a pinned (page-locked) staging buffer,
/// with an asynchronous copy: the path `DataLoader(pin_memory=True)` takes.
pub fn upload_pinned(
    backend: &Arc<CudaBackend>,
    host: &CpuBuffer,
    range: std::ops::Range<usize>,
) -> Result<CudaBuffer> {
    fn go<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy>(
        b: &Arc<CudaBackend>,
        host: &[T],
    ) -> Result<DeviceMem<T>> {
        let mut mem = b.alloc_raw::<T>(host.len())?;
        if host.is_empty() {
            return Ok(mem);
        }
        // SAFETY: filled completely below before any read.
        let mut pinned = unsafe { b.context().alloc_pinned_with_flags::<T>(host.len(), 0) }
            .map_err(|e| driver_error("allocating pinned host memory", e))?;
        pinned
            .as_mut_slice()
            .map_err(|e| driver_error("mapping pinned memory", e))?
            .copy_from_slice(host);
        b.stream()
            .memcpy_htod(&pinned, mem.slice_mut())
            .map_err(|e| driver_error("copying pinned host memory to the device", e))?;
        // The copy is asynchronous; the staging buffer is freed when this function returns, so
        // wait for the copy first (with event tracking off, cudarc's drop would not wait).
        b.synchronize()?;
        Ok(mem)
    }
    let data = match host {
        CpuBuffer::F32(v) => CudaData::F32(go(backend, &v[range])?),
        CpuBuffer::F16(v) => CudaData::F16(go(backend, &v[range])?),
        CpuBuffer::BF16(v) => CudaData::BF16(go(backend, &v[range])?),
        CpuBuffer::I32(v) => CudaData::I32(go(backend, &v[range])?),
        CpuBuffer::I64(v) => CudaData::I64(go(backend, &v[range])?),
    };
    Ok(CudaBuffer {
        data,
        backend: Arc::clone(backend),
    })
}

/// A CPU buffer of `dtype` holding every element of `x` in row-major order (for tests and reading).
pub fn to_cpu(x: &CudaBuffer) -> Result<CpuBuffer> {
    download(x, 0..x.len())
}

/// Helper for tests and tools: a device copy of a whole host buffer.
pub fn from_cpu(backend: &Arc<CudaBackend>, host: &CpuBuffer) -> Result<CudaBuffer> {
    upload(backend, host, 0..host.len())
}
