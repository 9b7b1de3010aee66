//! In-place writes on the CPU: copying into an existing buffer and the optimizers' fused updates.
//!
//! The updates read the gradient once and read and write the parameter (and AdaGrad's state) once,
//! in f32 arithmetic; bf16 and f16 parameters are widened, updated and rounded back on store, so a
//! bf16 parameter loses any update smaller than half its spacing (the mixed-precision section
//! shows what that does to training). Large tensors are split across threads: the update is
//! memory bound and one core does not saturate memory bandwidth.

use super::team::Shared;
use super::team::{self, Split};

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

/// An update's parameter, state and gradient must have one length (the loops walk them together).
fn same_lengths(op: &'static str, lengths: &[usize]) -> Result<()> {
    if lengths.windows(2).all(|w| w[0] == w[1]) {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!("parameter, state and gradient must have one number of elements, got {lengths:?}"),
        ))
    }
}

/// The updates' cut: below `PARALLEL_MIN` elements a single thread is faster than handing out work.
const SPLIT: Split = Split {
    parallel_min: PARALLEL_MIN,
    chunk: CHUNK,
};

fn in_chunks(len: usize, chunk: &(dyn Fn(std::ops::Range<usize>) + Sync)) {
    team::in_chunks(len, SPLIT, chunk)
}

/// Runs `f` over matching chunks of the two slices, on several threads when they are large.
fn for_chunks<P: Send, G: Sync>(p: &mut [P], g: &[G], f: impl Fn(&mut [P], &[G]) + Sync) {
    debug_assert_eq!(p.len(), g.len(), "`sgd` checked the lengths");
    let pp = Shared(p.as_mut_ptr());
    in_chunks(p.len(), &|r| {
        // SAFETY: `in_chunks` hands out each range once, inside the slices' common length, so
        // the mutable chunks never overlap.
        let p = unsafe { std::slice::from_raw_parts_mut(pp.get().add(r.start), r.len()) };
        f(p, &g[r])
    });
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
    same_lengths("sgd_update", &[rp.len(), rg.len()])?;
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
    debug_assert!(
        p.len() == s.len() && p.len() == g.len(),
        "`adagrad` checked the lengths"
    );
    let (pp, sp) = (Shared(p.as_mut_ptr()), Shared(s.as_mut_ptr()));
    in_chunks(p.len(), &|r| {
        // SAFETY: as in `for_chunks`.
        let (p, s) = unsafe {
            (
                std::slice::from_raw_parts_mut(pp.get().add(r.start), r.len()),
                std::slice::from_raw_parts_mut(sp.get().add(r.start), r.len()),
            )
        };
        f(p, s, &g[r])
    });
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

/// The f32 AdaGrad loop. A square root and a division per element make it as much compute as
/// memory bound, so it is compiled three times: for the baseline x86-64 (4 lanes), AVX2 (8) and
/// AVX-512 (16), the widest the CPU has taken. Each rounds every operation the same way (IEEE;
/// Rust never fuses a multiply and an add on its own), so they agree bit for bit.
fn adagrad_f32(p: &mut [f32], s: &mut [f32], g: &[f32], lr: f32, eps: f32) {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (checked just above).
        return for_chunks3(p, s, g, |p, s, g| unsafe { adagrad_avx512(p, s, g, lr, eps) });
    }
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return for_chunks3(p, s, g, |p, s, g| unsafe { adagrad_avx2(p, s, g, lr, eps) });
    }
    for_chunks3(p, s, g, |p, s, g| adagrad_lanes(p, s, g, lr, eps));
}

#[inline(always)]
fn adagrad_lanes(p: &mut [f32], s: &mut [f32], g: &[f32], lr: f32, eps: f32) {
    for ((p, s), g) in p.iter_mut().zip(s.iter_mut()).zip(g) {
        *s += g * g;
        *p -= lr * g / (*s + eps).sqrt();
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn adagrad_avx512(p: &mut [f32], s: &mut [f32], g: &[f32], lr: f32, eps: f32) {
    adagrad_lanes(p, s, g, lr, eps)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn adagrad_avx2(p: &mut [f32], s: &mut [f32], g: &[f32], lr: f32, eps: f32) {
    adagrad_lanes(p, s, g, lr, eps)
}

/// `sum_sq += grad²; param -= lr · grad / √(sum_sq + eps)`.
pub fn adagrad(a: AdaGradArgs<'_>) -> Result<()> {
    let rp = a.param_layout.contiguous_range_in("adagrad_update", a.param.len())?;
    let rs = a.sum_sq_layout.contiguous_range_in("adagrad_update", a.sum_sq.len())?;
    let rg = a.grad_layout.contiguous_range_in("adagrad_update", a.grad.len())?;
    same_lengths("adagrad_update", &[rp.len(), rs.len(), rg.len()])?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Values spread over many magnitudes, with zeros among the gradients.
    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n)
            .map(|i| {
                let x = (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8;
                if x.is_multiple_of(17) {
                    0.0
                } else {
                    (x as f32 / (1 << 24) as f32 - 0.5) * 10f32.powi((x % 7) as i32 - 3)
                }
            })
            .collect()
    }

    /// The update split over the team (more elements than `PARALLEL_MIN`, a ragged last chunk) and
    /// compiled for whichever instruction set this CPU has equals the plain loop on one thread,
    /// bit for bit: the optimizer's results may not depend on the machine's width.
    #[test]
    fn adagrad_in_chunks_equals_the_plain_loop_bit_for_bit() {
        let n = PARALLEL_MIN * 3 + 123;
        let (mut p, mut s, g) = (
            values(n, 1),
            values(n, 2).iter().map(|x| x.abs()).collect::<Vec<_>>(),
            values(n, 3),
        );
        let (mut p_ref, mut s_ref) = (p.clone(), s.clone());
        for ((p, s), g) in p_ref.iter_mut().zip(s_ref.iter_mut()).zip(&g) {
            *s += g * g;
            *p -= 0.01 * g / (*s + 1e-10).sqrt();
        }
        let same = |x: &[f32], y: &[f32]| x.iter().zip(y).all(|(a, b)| a.to_bits() == b.to_bits());
        let (p0, s0) = (p.clone(), s.clone());
        adagrad_f32(&mut p, &mut s, &g, 0.01, 1e-10);
        assert!(same(&p, &p_ref) && same(&s, &s_ref), "the dispatched loop");
        // Every variant this CPU can run, called directly.
        #[cfg(target_arch = "x86_64")]
        for (name, has, f) in [
            (
                "avx2",
                is_x86_feature_detected!("avx2"),
                adagrad_avx2 as unsafe fn(&mut [f32], &mut [f32], &[f32], f32, f32),
            ),
            ("avx512f", is_x86_feature_detected!("avx512f"), adagrad_avx512),
        ] {
            if !has {
                continue;
            }
            let (mut p, mut s) = (p0.clone(), s0.clone());
            // SAFETY: the CPU has the variant's instruction set (checked just above).
            unsafe { f(&mut p, &mut s, &g, 0.01, 1e-10) };
            assert!(same(&p, &p_ref) && same(&s, &s_ref), "{name}");
        }
    }

    /// Operands of different lengths are refused with the lengths named, never sliced past.
    #[test]
    fn operands_of_different_lengths_are_refused() {
        let mut param = CpuBuffer::F32(vec![1.0; 8]);
        let grad = CpuBuffer::F32(vec![1.0; 6]);
        let err = sgd(
            &mut param,
            &Layout::contiguous(&[8]),
            &grad,
            &Layout::contiguous(&[6]),
            0.1,
        )
        .expect_err("8 against 6")
        .to_string();
        assert!(err.contains("[8, 6]"), "{err}");
        let mut sum_sq = CpuBuffer::F32(vec![0.0; 8]);
        let err = adagrad(AdaGradArgs {
            param: &mut param,
            param_layout: &Layout::contiguous(&[8]),
            sum_sq: &mut sum_sq,
            sum_sq_layout: &Layout::contiguous(&[8]),
            grad: &grad,
            grad_layout: &Layout::contiguous(&[6]),
            lr: 0.1,
            eps: 1e-10,
        })
        .expect_err("8 against 6")
        .to_string();
        assert!(err.contains("[8, 8, 6]"), "{err}");
    }
}
