//! The CPU backend: host buffers (`CpuBuffer`), plain loops over strided data with a fast path
//! for contiguous operands (each op's arithmetic is its declaration's `apply_f32`/`apply_i64`),
//! and matmul through the `gemm` crate.

pub mod aligned;
pub mod bf16_gemm;
mod buffer;
pub(crate) mod elementwise;
pub mod fma_loops;
pub mod heap;
pub mod hierarchy;
pub mod isa;
pub mod live;
mod matmul;
pub mod measured_peak;
pub mod stream;
mod team;
pub mod update;

pub use buffer::{BufferElement, CpuBuffer, check_bytes, check_room};

/// Host buffers start on a cache line, as PyTorch's do (`aligned.rs` says why and how).
#[global_allocator]
static ALLOCATOR: aligned::CacheLineAligned = aligned::CacheLineAligned;
pub use matmul::matmul;

/// The fastest bf16 instruction set our kernels may use on this thread: "amx_bf16" (AMX tiles),
/// "avx512_bf16" (`vdpbf16ps`) or "portable-f32" (none: widen to f32, `gemm`, round). It names the
/// CPU's trace; the route a product takes ([`bf16_matmul_route`]) may still be the widening one,
/// where that is faster. Where `CS336_CPU_ISA` is invalid no bf16 matmul runs (it fails with the
/// reason).
pub fn bf16_matmul_isa() -> &'static str {
    bf16_gemm::offered_kernel().map_or("none (CS336_CPU_ISA is invalid)", |k| k.name())
}

/// The kernel bf16 matmuls take on this thread and why (`bf16_gemm::route`), or why none runs.
pub fn bf16_matmul_route() -> Result<bf16_gemm::Route> {
    bf16_gemm::current_route()
}

/// This CPU's trace name (`trace::name`): its model and the kernels its float32 and bf16
/// matmuls run with on this thread, after `CS336_CPU_ISA`.
pub fn trace_name() -> Result<String> {
    let bf16 = bf16_gemm::offered_kernel()?;
    let tag = crate::trace::name::cpu_kernels_tag(bf16.name(), isa::f32_matmul_isa().name())
        .map_err(|msg| Error::CpuIsa(format!("no trace name for this CPU: {msg}")))?;
    Ok(crate::trace::name::cpu_trace_name(
        &crate::host::cpu_model(),
        std::env::consts::ARCH,
        tag,
    ))
}

use crate::base::dtype::convert;
use crate::base::op::ReduceWalk;
use crate::base::{BinaryOp, DType, Element, Layout, ReduceOp, UnaryOp};
use crate::error::{Error, Result};
use crate::with_cpu_buffer;
use elementwise::{Lane, Level};

/// Applies `f` to every element of a strided view, producing a contiguous vector.
fn map<T: Copy, R>(v: &[T], layout: &Layout, f: impl Fn(T) -> R) -> Vec<R> {
    if let Some(range) = layout.contiguous_range() {
        v[range].iter().map(|&x| f(x)).collect()
    } else {
        layout.storage_indices().map(|i| f(v[i])).collect()
    }
}

fn zip_map<T: Copy, R>(a: &[T], la: &Layout, b: &[T], lb: &Layout, f: impl Fn(T, T) -> R) -> Vec<R> {
    if let (Some(ra), Some(rb)) = (la.contiguous_range(), lb.contiguous_range()) {
        a[ra].iter().zip(&b[rb]).map(|(&x, &y)| f(x, y)).collect()
    } else {
        la.storage_indices()
            .zip(lb.storage_indices())
            .map(|(i, j)| f(a[i], b[j]))
            .collect()
    }
}

fn unary_float<T: BufferElement + Lane>(op: UnaryOp, v: &[T], layout: &Layout) -> Result<CpuBuffer> {
    let op = op.simplified();
    if let Some(range) = layout.contiguous_range() {
        return Ok(T::wrap(elementwise::unary(op, Level::current()?, &v[range])));
    }
    Ok(T::wrap(map(v, layout, |x| T::from_f32(op.apply_f32(x.to_f32())))))
}

fn unary_int<T: BufferElement>(op: UnaryOp, v: &[T], layout: &Layout) -> Result<CpuBuffer> {
    op.check_dtype(T::DTYPE)?;
    // Through i64, not f64: f64 would round i64 values above 2^53 and saturate i32 overflow.
    Ok(T::wrap(map(v, layout, |x| {
        T::from_i64(op.apply_i64(x.to_i64()).unwrap_or(0))
    })))
}

pub fn unary(op: UnaryOp, buf: &CpuBuffer, layout: &Layout) -> Result<CpuBuffer> {
    layout.check_bounds(op.name(), buf.len())?;
    Ok(match buf {
        CpuBuffer::F32(v) => unary_float(op, v, layout)?,
        CpuBuffer::F16(v) => unary_float(op, v, layout)?,
        CpuBuffer::BF16(v) => unary_float(op, v, layout)?,
        CpuBuffer::I32(v) => unary_int(op, v, layout)?,
        CpuBuffer::I64(v) => unary_int(op, v, layout)?,
    })
}

fn binary_float<T: BufferElement + Lane>(
    op: BinaryOp,
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
) -> Result<CpuBuffer> {
    if let (Some(ra), Some(rb)) = (la.contiguous_range(), lb.contiguous_range())
        && ra.len() == rb.len()
    {
        return Ok(T::wrap(elementwise::binary(op, Level::current()?, &a[ra], &b[rb])));
    }
    Ok(T::wrap(zip_map(a, la, b, lb, |x, y| {
        T::from_f32(op.apply_f32(x.to_f32(), y.to_f32()))
    })))
}

fn binary_int<T: BufferElement>(op: BinaryOp, a: &[T], la: &Layout, b: &[T], lb: &Layout) -> Result<CpuBuffer> {
    op.check_dtype(T::DTYPE)?;
    // Through i64, not f64 (see `unary_int`): exact, and i32 overflow wraps as in PyTorch.
    Ok(T::wrap(zip_map(a, la, b, lb, |x, y| {
        T::from_i64(op.apply_i64(x.to_i64(), y.to_i64()).unwrap_or(0))
    })))
}

pub fn binary(op: BinaryOp, a: &CpuBuffer, la: &Layout, b: &CpuBuffer, lb: &Layout) -> Result<CpuBuffer> {
    la.check_bounds(op.name(), a.len())?;
    lb.check_bounds(op.name(), b.len())?;
    Ok(match (a, b) {
        (CpuBuffer::F32(x), CpuBuffer::F32(y)) => binary_float(op, x, la, y, lb)?,
        (CpuBuffer::F16(x), CpuBuffer::F16(y)) => binary_float(op, x, la, y, lb)?,
        (CpuBuffer::BF16(x), CpuBuffer::BF16(y)) => binary_float(op, x, la, y, lb)?,
        (CpuBuffer::I32(x), CpuBuffer::I32(y)) => binary_int(op, x, la, y, lb)?,
        (CpuBuffer::I64(x), CpuBuffer::I64(y)) => binary_int(op, x, la, y, lb)?,
        _ => {
            return Err(Error::DTypeMismatch {
                op: op.name(),
                lhs: a.dtype().name(),
                rhs: b.dtype().name(),
            });
        }
    })
}

/// Reduces the dimensions in `dims` (see `ReduceOp::walk`: each output element is one
/// consecutive run of the walk).
///
/// Floats round once into the dtype. Where each output is one contiguous run of the buffer (a
/// whole contiguous tensor, or its last dimensions), the vectorised, threaded loops of
/// `elementwise::reduce_runs` run, and a sum's order is fixed, the same on every instruction set
/// and thread count: blocks of 4096 elements from the run's start; in a block, element `i` goes to
/// f32 lane `i mod 64`, lanes folded in halves (lane `i` gains lane `i + 32`, then `i + 16`, …
/// `i + 1`); block sums added in f64, in index order; a NaN sum is `f64::NAN` (a cascade, as
/// PyTorch's CPU sum is: no f32 lane adds more than 64 elements). Other layouts add in f64, in
/// index order, one element at a time, and integers in index order. `max`/`min` give the same
/// bits on both paths.
pub fn reduce(op: ReduceOp, buf: &CpuBuffer, layout: &Layout, dims: &[usize]) -> Result<CpuBuffer> {
    let ReduceWalk { walk, outputs, run } = op.walk(layout, dims, buf.len())?;
    op.check_dtype(buf.dtype())?;
    if let Some(range) = walk.contiguous_range()
        && run > 0
        && range.len() == run * outputs
    {
        fn fast<T: BufferElement + Lane>(
            op: ReduceOp,
            v: &[T],
            range: std::ops::Range<usize>,
            run: usize,
        ) -> Result<Option<CpuBuffer>> {
            Ok(match v.get(range) {
                Some(x) => Some(T::wrap(elementwise::reduce_runs(op, Level::current()?, x, run))),
                None => None,
            })
        }
        let done = match buf {
            CpuBuffer::F32(v) => fast(op, v, range, run)?,
            CpuBuffer::BF16(v) => fast(op, v, range, run)?,
            CpuBuffer::F16(v) => fast(op, v, range, run)?,
            CpuBuffer::I32(_) | CpuBuffer::I64(_) => None,
        };
        if let Some(out) = done {
            return Ok(out);
        }
    }
    reduce_in_order(op, buf, &walk, run, outputs)
}

/// [`reduce`] one element at a time, in the walk's order.
pub(crate) fn reduce_in_order(
    op: ReduceOp,
    buf: &CpuBuffer,
    walk: &Layout,
    run: usize,
    outputs: usize,
) -> Result<CpuBuffer> {
    fn go<T: BufferElement>(op: ReduceOp, v: &[T], walk: &Layout, run: usize, out_len: usize) -> Result<CpuBuffer> {
        let mut out = Vec::with_capacity(out_len);
        let mut idx = walk.storage_indices();
        if !T::DTYPE.is_float() {
            // Integers reduce exactly in i64 (sums wrap, as in PyTorch); through f64 they would
            // round above 2^53 and saturate.
            for _ in 0..out_len {
                let values = idx.by_ref().take(run).map(|i| v[i].to_i64());
                let acc = match op {
                    ReduceOp::Sum | ReduceOp::Mean => values.fold(0, i64::wrapping_add),
                    // `run` > 0 here: empty max/min were refused by the walk.
                    ReduceOp::Max => values.max().unwrap_or(i64::MIN),
                    ReduceOp::Min => values.min().unwrap_or(i64::MAX),
                };
                out.push(T::from_i64(acc));
            }
            return Ok(T::wrap(out));
        }
        for _ in 0..out_len {
            // Other layouts: floats accumulate in f64, in index order, then round once into the
            // dtype (rare; the fast path's max and min are held to this loop's bits).
            let mut acc = match op {
                ReduceOp::Max => f64::NEG_INFINITY,
                ReduceOp::Min => f64::INFINITY,
                ReduceOp::Sum | ReduceOp::Mean => 0.0,
            };
            for i in idx.by_ref().take(run) {
                let x = v[i].to_f64();
                acc = match op {
                    ReduceOp::Sum | ReduceOp::Mean => acc + x,
                    // NaN propagates, as in PyTorch.
                    ReduceOp::Max | ReduceOp::Min if x.is_nan() || acc.is_nan() => f64::NAN,
                    ReduceOp::Max => acc.max(x),
                    ReduceOp::Min => acc.min(x),
                };
            }
            if op == ReduceOp::Mean {
                acc /= run as f64;
            }
            out.push(T::from_f64(acc));
        }
        Ok(T::wrap(out))
    }
    with_cpu_buffer!(buf, v => go(op, v, walk, run, outputs))
}

/// A contiguous copy of a strided view (what `contiguous()` does).
pub fn gather(buf: &CpuBuffer, layout: &Layout) -> CpuBuffer {
    fn go<T: BufferElement>(v: &[T], layout: &Layout) -> CpuBuffer {
        match layout.contiguous_range() {
            // Every element is copied as it is (bits included), split over the team's threads.
            Some(range) => T::wrap(elementwise::copy(&v[range])),
            None => T::wrap(map(v, layout, |x| x)),
        }
    }
    with_cpu_buffer!(buf, v => go(v, layout))
}

pub fn cast(buf: &CpuBuffer, layout: &Layout, dtype: DType) -> CpuBuffer {
    fn to<S: Element, D: BufferElement>(v: &[S], layout: &Layout) -> CpuBuffer {
        if S::DTYPE.is_float() && D::DTYPE.is_float() {
            // Every f16/bf16 value is exact in f32, and f32 -> f16/bf16 rounds correctly.
            D::wrap(map(v, layout, |x| D::from_f32(x.to_f32())))
        } else {
            // Integer to integer goes through i64 (exact, wrapping), not f64.
            D::wrap(map(v, layout, convert::<S, D>))
        }
    }
    fn from<S: Element>(v: &[S], layout: &Layout, dtype: DType) -> CpuBuffer {
        match dtype {
            DType::F32 => to::<S, f32>(v, layout),
            DType::F16 => to::<S, half::f16>(v, layout),
            DType::BF16 => to::<S, half::bf16>(v, layout),
            DType::I32 => to::<S, i32>(v, layout),
            DType::I64 => to::<S, i64>(v, layout),
        }
    }
    with_cpu_buffer!(buf, v => from(v, layout, dtype))
}

pub fn triu(buf: &CpuBuffer, layout: &Layout, diagonal: i64) -> Result<CpuBuffer> {
    layout.check_bounds("triu", buf.len())?;
    let n = layout.ndim();
    let (rows, cols) = (layout.shape[n - 2], layout.shape[n - 1]);
    fn go<T: BufferElement>(v: &[T], layout: &Layout, rows: usize, cols: usize, diagonal: i64) -> CpuBuffer {
        let mut out = map(v, layout, |x| x);
        for (k, x) in out.iter_mut().enumerate() {
            let (i, j) = ((k / cols) % rows, k % cols);
            if (j as i64) < i as i64 + diagonal {
                *x = T::zero();
            }
        }
        T::wrap(out)
    }
    Ok(with_cpu_buffer!(buf, v => go(v, layout, rows, cols, diagonal)))
}
