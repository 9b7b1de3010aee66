//! The one dispatch point: every op that touches data is a `Storage` method here, routed to the
//! backend that holds the data (as candle's `Storage` does). The backends (`device::cpu`,
//! `device::cuda`) see buffers and layouts only; results come back as fresh, contiguous buffers
//! for the tensor layer to wrap.

use std::ops::Range;

use super::storage::{Buffer, Storage};
use crate::base::{BinaryOp, DType, Layout, ReduceOp, UnaryOp};
use crate::device::Device;
use crate::device::cpu::{self, CpuBuffer};
use crate::device::cuda::{self, CudaDevice, ops::Distribution};
use crate::error::{Error, Result};

impl Storage {
    fn mismatch(&self, op: &'static str, other: &Device) -> Error {
        Error::DeviceMismatch {
            op,
            lhs: self.device().to_string(),
            rhs: other.to_string(),
        }
    }

    fn same_device(&self, op: &'static str, other: &Storage) -> Result<()> {
        if self.device() != other.device() {
            return Err(self.mismatch(op, other.device()));
        }
        Ok(())
    }

    pub(crate) fn unary(&self, op: UnaryOp, layout: &Layout) -> Result<Buffer> {
        Ok(match &*self.read() {
            Buffer::Cpu(x) => {
                cpu::check_room(op.name(), x.dtype(), layout.numel())?;
                Buffer::Cpu(cpu::unary(op, x, layout)?)
            }
            Buffer::Cuda(x) => Buffer::Cuda(cuda::unary(op, x, layout)?),
        })
    }

    /// The operands have already been broadcast to one shape.
    pub(crate) fn binary(&self, op: BinaryOp, la: &Layout, rhs: &Storage, lb: &Layout) -> Result<Buffer> {
        self.same_device(op.name(), rhs)?;
        let (a, b) = (self.read(), rhs.read());
        Ok(match (&*a, &*b) {
            (Buffer::Cpu(x), Buffer::Cpu(y)) => {
                // The broadcast shape: two long vectors make a square.
                cpu::check_room(op.name(), x.dtype(), la.numel())?;
                Buffer::Cpu(cpu::binary(op, x, la, y, lb)?)
            }
            (Buffer::Cuda(x), Buffer::Cuda(y)) => Buffer::Cuda(cuda::binary(op, x, la, y, lb)?),
            _ => return Err(self.mismatch(op.name(), rhs.device())),
        })
    }

    /// Reduces `dims` (sorted, distinct); the result has those dimensions removed.
    pub(crate) fn reduce(&self, op: ReduceOp, layout: &Layout, dims: &[usize]) -> Result<Buffer> {
        Ok(match &*self.read() {
            Buffer::Cpu(x) => Buffer::Cpu(cpu::reduce(op, x, layout, dims)?),
            Buffer::Cuda(x) => Buffer::Cuda(cuda::reduce(op, x, layout, dims)?),
        })
    }

    /// `a`: [batch…, m, k], `b`: [batch…, k, n] with identical (already broadcast) batch shapes.
    pub(crate) fn matmul(&self, la: &Layout, rhs: &Storage, lb: &Layout) -> Result<Buffer> {
        self.same_device("matmul", rhs)?;
        let (a, b) = (self.read(), rhs.read());
        Ok(match (&*a, &*b) {
            (Buffer::Cpu(x), Buffer::Cpu(y)) => {
                // [batch…, m, n]: a column times a row makes a square.
                let rows = la.shape[..la.ndim().saturating_sub(1)].iter();
                let out = rows.chain(lb.shape.last()).try_fold(1usize, |n, &d| n.checked_mul(d));
                cpu::check_room("matmul", x.dtype(), out.unwrap_or(usize::MAX))?;
                Buffer::Cpu(cpu::matmul(x, la, y, lb)?)
            }
            (Buffer::Cuda(x), Buffer::Cuda(y)) => Buffer::Cuda(cuda::matmul(x, la, y, lb)?),
            _ => return Err(self.mismatch("matmul", rhs.device())),
        })
    }

    /// A contiguous copy of a strided view.
    pub(crate) fn gather(&self, layout: &Layout) -> Result<Buffer> {
        Ok(match &*self.read() {
            Buffer::Cpu(x) => {
                // A broadcast view made contiguous takes its full size.
                cpu::check_room("contiguous", x.dtype(), layout.numel())?;
                Buffer::Cpu(cpu::gather(x, layout))
            }
            Buffer::Cuda(x) => Buffer::Cuda(cuda::gather(x, layout)?),
        })
    }

    pub(crate) fn cast(&self, layout: &Layout, dtype: DType) -> Result<Buffer> {
        Ok(match &*self.read() {
            Buffer::Cpu(x) => {
                cpu::check_room("to_dtype", dtype, layout.numel())?;
                Buffer::Cpu(cpu::cast(x, layout, dtype))
            }
            Buffer::Cuda(x) => Buffer::Cuda(cuda::cast(x, layout, dtype)?),
        })
    }

    pub(crate) fn triu(&self, layout: &Layout, diagonal: i64) -> Result<Buffer> {
        Ok(match &*self.read() {
            Buffer::Cpu(x) => {
                cpu::check_room("triu", x.dtype(), layout.numel())?;
                Buffer::Cpu(cpu::triu(x, layout, diagonal)?)
            }
            Buffer::Cuda(x) => Buffer::Cuda(cuda::triu(x, layout, diagonal)?),
        })
    }

    /// One element, by storage position (from a GPU: one element copied back, synchronising).
    pub(crate) fn get_f64(&self, pos: usize) -> Result<f64> {
        let value = match &*self.read() {
            Buffer::Cpu(x) => x.get_f64(pos),
            Buffer::Cuda(x) => Some(cuda::get_f64(x, pos)?),
        };
        value.ok_or_else(|| Error::invalid("get", format!("storage position {pos} out of range")))
    }

    /// Writes one element, rounded into the dtype.
    pub(crate) fn set_f64(&self, pos: usize, value: f64) -> Result<()> {
        match &mut *self.write() {
            Buffer::Cpu(x) => {
                if x.set_f64(pos, value) {
                    Ok(())
                } else {
                    Err(Error::invalid("set", format!("storage position {pos} out of range")))
                }
            }
            Buffer::Cuda(x) => cuda::set_f64(x, pos, value),
        }
    }

    /// Elements `range` (a contiguous view's) copied to `device`; `pinned` stages a host-to-GPU
    /// copy in page-locked memory, as `DataLoader(pin_memory=True)` does.
    pub(crate) fn copy_to(&self, range: Range<usize>, device: &Device, pinned: bool) -> Result<Buffer> {
        Ok(match (&*self.read(), device) {
            (Buffer::Cpu(x), Device::Cuda(c)) if pinned => Buffer::Cuda(cuda::upload_pinned(&c.0, x, range)?),
            (Buffer::Cpu(x), Device::Cuda(c)) => Buffer::Cuda(cuda::upload(&c.0, x, range)?),
            (Buffer::Cuda(x), Device::Cpu) => {
                cpu::check_room("to_device", x.dtype(), range.len())?;
                Buffer::Cpu(cuda::download(x, range)?)
            }
            _ => return Err(self.mismatch("to_device", device)),
        })
    }

    /// Writes `src` (contiguous, of this storage's dtype) into `dst`, a contiguous view of this
    /// storage. The storages differ (checked by the caller).
    pub(crate) fn copy_from(&self, dst: &Layout, src: &Storage, sl: &Layout) -> Result<()> {
        self.same_device("copy_from", src)?;
        let from = src.read();
        match (&mut *self.write(), &*from) {
            (Buffer::Cpu(d), Buffer::Cpu(s)) => cpu::update::copy_into(d, dst, s, sl),
            (Buffer::Cuda(d), Buffer::Cuda(s)) => cuda::copy_into(d, dst, s, sl),
            _ => Err(self.mismatch("copy_from", src.device())),
        }
    }

    /// `param -= lr · grad` in place on this storage (shapes checked by the caller).
    pub(crate) fn sgd_update(&self, pl: &Layout, grad: &Storage, gl: &Layout, lr: f64) -> Result<()> {
        self.same_device("sgd_update", grad)?;
        let g = grad.read();
        match (&mut *self.write(), &*g) {
            (Buffer::Cpu(p), Buffer::Cpu(g)) => cpu::update::sgd(p, pl, g, gl, lr),
            (Buffer::Cuda(p), Buffer::Cuda(g)) => cuda::sgd_update(p, pl, g, gl, lr),
            _ => Err(self.mismatch("sgd_update", grad.device())),
        }
    }

    /// AdaGrad's fused update in place on this storage (the parameter) and `sum_sq`:
    /// `sum_sq += grad²; param -= lr · grad / √(sum_sq + eps)`.
    pub(crate) fn adagrad_update(
        &self,
        pl: &Layout,
        sum_sq: (&Storage, &Layout),
        grad: (&Storage, &Layout),
        lr: f64,
        eps: f64,
    ) -> Result<()> {
        let ((s, sl), (g, gl)) = (sum_sq, grad);
        self.same_device("adagrad_update", g)?;
        self.same_device("adagrad_update", s)?;
        let g_read = g.read();
        let (mut p_write, mut s_write) = (self.write(), s.write());
        match (&mut *p_write, &mut *s_write, &*g_read) {
            (Buffer::Cpu(p), Buffer::Cpu(s), Buffer::Cpu(g)) => cpu::update::adagrad(cpu::update::AdaGradArgs {
                param: p,
                param_layout: pl,
                sum_sq: s,
                sum_sq_layout: sl,
                grad: g,
                grad_layout: gl,
                lr,
                eps,
            }),
            (Buffer::Cuda(p), Buffer::Cuda(s), Buffer::Cuda(g)) => cuda::adagrad_update(p, pl, s, sl, g, gl, lr, eps),
            _ => Err(self.mismatch("adagrad_update", g.device())),
        }
    }
}

/// `n` elements of `value`, rounded into `dtype`, made directly on `device` (on a GPU by a fill
/// kernel: nothing is copied from the host).
pub(crate) fn full(device: &Device, dtype: DType, n: usize, value: f64) -> Result<Buffer> {
    Ok(match device {
        Device::Cpu if value == 0.0 => Buffer::Cpu(CpuBuffer::zeros(dtype, n)?),
        Device::Cpu => Buffer::Cpu(CpuBuffer::full(dtype, n, value)?),
        Device::Cuda(c) => Buffer::Cuda(cuda::full(&c.0, dtype, n, value)?),
    })
}

/// `n` random elements drawn on a GPU from `seed` (the CPU draws from its own `Rng` instead).
pub(crate) fn random_on_gpu(gpu: &CudaDevice, dist: Distribution, dtype: DType, n: usize, seed: u64) -> Result<Buffer> {
    Ok(Buffer::Cuda(cuda::random(&gpu.0, dist, dtype, n, seed)?))
}
