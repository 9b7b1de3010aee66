//! In-place writes on the CPU: copying into an existing buffer and the optimizers' fused updates.
//!
//! The updates read the gradient once and read and write the parameter (and AdaGrad's state) once,
//! in f32 arithmetic; bf16 and f16 parameters are widened, updated and rounded back on store, so a
//! bf16 parameter loses any update smaller than half its spacing (the mixed-precision section
//! shows what that does to training). Large tensors are split across threads: the update is
//! memory bound and one core does not saturate memory bandwidth.

use rayon::prelude::*;

use super::{BufferElement, CpuBuffer};
use crate::base::{DType, Layout};
use crate::error::{Error, Result};

/// Below this many elements a single thread is faster than handing out work.
const PARALLEL_MIN: usize = 1 << 15;
const CHUNK: usize = 1 << 14;

fn mismatch(op: &'static str, a: &CpuBuffer, b: &CpuBuffer) -> Error {
    Error::DTypeMismatch {
        op,
        lhs: a.dtype().name(),
        rhs: b.dtype().name(),
    }
}

/// `dst[layout] = src[layout]`; both contiguous and of one dtype (the tensor layer casts first).
pub fn copy_into(dst: &mut CpuBuffer, dl: &Layout, src: &CpuBuffer, sl: &Layout) -> Result<()> {
    let (rd, rs) = (
        dl.contiguous_range_in("copy_from", dst.len())?,
        sl.contiguous_range_in("copy_from", src.len())?,
    );
    fn go<T: BufferElement>(
        dst: &mut CpuBuffer,
        rd: std::ops::Range<usize>,
        src: &CpuBuffer,
        rs: std::ops::Range<usize>,
    ) -> Option<()> {
        T::slice_mut(dst)?[rd].copy_from_slice(&T::slice(src)?[rs]);
        Some(())
    }
    let done = match dst.dtype() {
        DType::F32 => go::<f32>(dst, rd, src, rs),
        DType::F16 => go::<half::f16>(dst, rd, src, rs),
        DType::BF16 => go::<half::bf16>(dst, rd, src, rs),
        DType::I32 => go::<i32>(dst, rd, src, rs),
        DType::I64 => go::<i64>(dst, rd, src, rs),
    };
    done.ok_or_else(|| mismatch("copy_from", dst, src))
}

/// Runs `f` over matching chunks of the two slices, on several threads when they are large.
fn for_chunks<P: Send, G: Sync>(p: &mut [P], g: &[G], f: impl Fn(&mut [P], &[G]) + Sync) {
    if p.len() < PARALLEL_MIN {
        f(p, g);
    } else {
        p.par_chunks_mut(CHUNK)
            .zip(g.par_chunks(CHUNK))
            .for_each(|(p, g)| f(p, g));
    }
}

fn sgd_typed<T: BufferElement>(p: &mut [T], g: &[T], lr: f32) {
    for_chunks(p, g, |p, g| {
        for (p, g) in p.iter_mut().zip(g) {
            *p = T::from_f32(p.to_f32() - lr * g.to_f32());
        }
    });
}

/// `param -= lr · grad`.
pub fn sgd(param: &mut CpuBuffer, pl: &Layout, grad: &CpuBuffer, gl: &Layout, lr: f64) -> Result<()> {
    let (rp, rg) = (
        pl.contiguous_range_in("sgd_update", param.len())?,
        gl.contiguous_range_in("sgd_update", grad.len())?,
    );
    let lr = lr as f32;
    match (&mut *param, grad) {
        // f32 gets its own loop so the compiler sees plain float arithmetic and vectorises it.
        (CpuBuffer::F32(p), CpuBuffer::F32(g)) => for_chunks(&mut p[rp], &g[rg], |p, g| {
            for (p, g) in p.iter_mut().zip(g) {
                *p -= lr * g;
            }
        }),
        (CpuBuffer::BF16(p), CpuBuffer::BF16(g)) => sgd_typed(&mut p[rp], &g[rg], lr),
        (CpuBuffer::F16(p), CpuBuffer::F16(g)) => sgd_typed(&mut p[rp], &g[rg], lr),
        (p, g) if p.dtype() != g.dtype() => return Err(mismatch("sgd_update", p, g)),
        (p, _) => {
            return Err(Error::UnsupportedDType {
                op: "sgd_update",
                dtype: p.dtype().name(),
                why: "parameters must be floating point",
            });
        }
    }
    Ok(())
}

/// Everything one AdaGrad update touches.
pub struct AdaGradArgs<'a> {
    pub param: &'a mut CpuBuffer,
    pub param_layout: &'a Layout,
    pub sum_sq: &'a mut CpuBuffer,
    pub sum_sq_layout: &'a Layout,
    pub grad: &'a CpuBuffer,
    pub grad_layout: &'a Layout,
    pub lr: f64,
    pub eps: f64,
}

/// Runs `f` over matching chunks of parameter, state and gradient.
fn for_chunks3<T: Send + Sync>(p: &mut [T], s: &mut [T], g: &[T], f: impl Fn(&mut [T], &mut [T], &[T]) + Sync) {
    if p.len() < PARALLEL_MIN {
        f(p, s, g);
    } else {
        p.par_chunks_mut(CHUNK)
            .zip(s.par_chunks_mut(CHUNK))
            .zip(g.par_chunks(CHUNK))
            .for_each(|((p, s), g)| f(p, s, g));
    }
}

fn adagrad_typed<T: BufferElement>(p: &mut [T], s: &mut [T], g: &[T], lr: f32, eps: f32) {
    for_chunks3(p, s, g, |p, s, g| {
        for ((p, s), g) in p.iter_mut().zip(s.iter_mut()).zip(g) {
            let g = g.to_f32();
            // The state is rounded to its dtype before the parameter update uses it, as it would
            // be if it were stored and read back.
            *s = T::from_f32(s.to_f32() + g * g);
            *p = T::from_f32(p.to_f32() - lr * g / (s.to_f32() + eps).sqrt());
        }
    });
}

fn adagrad_f32(p: &mut [f32], s: &mut [f32], g: &[f32], lr: f32, eps: f32) {
    for_chunks3(p, s, g, |p, s, g| {
        for ((p, s), g) in p.iter_mut().zip(s.iter_mut()).zip(g) {
            *s += g * g;
            *p -= lr * g / (*s + eps).sqrt();
        }
    });
}

/// `sum_sq += grad²; param -= lr · grad / √(sum_sq + eps)`.
pub fn adagrad(a: AdaGradArgs<'_>) -> Result<()> {
    let rp = a.param_layout.contiguous_range_in("adagrad_update", a.param.len())?;
    let rs = a.sum_sq_layout.contiguous_range_in("adagrad_update", a.sum_sq.len())?;
    let rg = a.grad_layout.contiguous_range_in("adagrad_update", a.grad.len())?;
    let (lr, eps) = (a.lr as f32, a.eps as f32);
    if a.param.dtype() != a.sum_sq.dtype() {
        return Err(mismatch("adagrad_update", a.param, a.sum_sq));
    }
    match (&mut *a.param, &mut *a.sum_sq, a.grad) {
        (CpuBuffer::F32(p), CpuBuffer::F32(s), CpuBuffer::F32(g)) => {
            adagrad_f32(&mut p[rp], &mut s[rs], &g[rg], lr, eps)
        }
        (CpuBuffer::BF16(p), CpuBuffer::BF16(s), CpuBuffer::BF16(g)) => {
            adagrad_typed(&mut p[rp], &mut s[rs], &g[rg], lr, eps)
        }
        (CpuBuffer::F16(p), CpuBuffer::F16(s), CpuBuffer::F16(g)) => {
            adagrad_typed(&mut p[rp], &mut s[rs], &g[rg], lr, eps)
        }
        (p, _, g) if p.dtype() != g.dtype() => return Err(mismatch("adagrad_update", p, g)),
        (p, _, _) => {
            return Err(Error::UnsupportedDType {
                op: "adagrad_update",
                dtype: p.dtype().name(),
                why: "parameters must be floating point",
            });
        }
    }
    Ok(())
}
