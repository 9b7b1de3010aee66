//! The CUDA side of the ops that make a new buffer (elementwise, reductions, matmul, copies,
//! casts, fills): plan, allocate, launch. Each function checks its views against their buffers
//! first, so no kernel reads or writes out of bounds.

use std::sync::Arc;

use super::blas::{self, GemmMode, GemmPtrs, GemmRoute};
use super::ops::{self, Distribution};
use super::{CudaBackend, CudaBuffer};
use crate::base::{BinaryOp, DType, Layout, ReduceOp, UnaryOp};
use crate::error::{Error, Result};

pub fn unary(op: UnaryOp, x: &CudaBuffer, layout: &Layout) -> Result<CudaBuffer> {
    layout.check_bounds(op.name(), x.len())?;
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
    la.check_bounds(op.name(), a.len())?;
    lb.check_bounds(op.name(), b.len())?;
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
    let walk = op.walk(layout, dims, x.len())?;
    let b = x.backend();
    let out = b.alloc(x.dtype(), walk.outputs)?;
    if walk.outputs == 0 {
        return Ok(out);
    }
    let (chunks, _) = ops::reduce_chunks(walk.outputs, walk.run, b.sm_count());
    let partial = b.alloc_raw::<f64>(walk.outputs * chunks)?;
    let plan = ops::reduce(
        op,
        x.dtype(),
        out.device_ptr(),
        partial.device_ptr(),
        x.device_ptr(),
        &walk,
        b.sm_count(),
    )?;
    b.launch(&plan.first)?;
    b.launch(&plan.finish)?;
    Ok(out)
}

/// `a`: [batch…, m, k], `b`: [batch…, k, n] with identical (already broadcast) batch shapes; the
/// output is contiguous [batch…, m, n].
pub fn matmul(a: &CudaBuffer, la: &Layout, b: &CudaBuffer, lb: &Layout) -> Result<CudaBuffer> {
    la.check_bounds("matmul", a.len())?;
    lb.check_bounds("matmul", b.len())?;
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
    let ptrs = GemmPtrs {
        a: pa.device_ptr(),
        b: pb.device_ptr(),
        c: out.device_ptr(),
    };
    if be.route_for(mode) == GemmRoute::CublasLt {
        let mut lt = be.lt()?;
        // SAFETY: as below.
        match unsafe { blas::lt::run(&mut lt, mode, &plan, ptrs) } {
            Ok(_) => return Ok(out),
            // cuBLASLt found no algorithm or failed: cuBLAS computes the same product (every
            // output element is written again), and the refusal is counted for the trace.
            Err(why) => be.note_lt_refusal(why.to_string()),
        }
    }
    let handle = be.blas()?;
    // SAFETY: the plan comes from bounds-checked layouts over these buffers, of the mode's dtypes.
    unsafe { blas::run(*handle.handle(), mode, &plan, ptrs) }?;
    Ok(out)
}

/// A contiguous copy of a strided view (`contiguous()`).
pub fn gather(x: &CudaBuffer, layout: &Layout) -> Result<CudaBuffer> {
    layout.check_bounds("contiguous", x.len())?;
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
    layout.check_bounds("to_dtype", x.len())?;
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
    layout.check_bounds("triu", x.len())?;
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
