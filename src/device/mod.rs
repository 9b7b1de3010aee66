//! Devices and the one dispatch point: every tensor op that touches data comes through here and is
//! routed to the backend that owns the data. Adding an op means one function here plus one per
//! backend.

pub mod cpu;
pub mod peaks;
pub mod probe;

use crate::error::{Error, Result};
use crate::tensor::{Buffer, DType, Layout, ReduceOp, Tensor, UnaryOp, BinaryOp};

#[derive(Debug, Clone, PartialEq)]
pub enum Device {
    Cpu,
}

impl Device {
    pub fn is_cpu(&self) -> bool {
        matches!(self, Device::Cpu)
    }

    /// Memory the device has: host RAM for the CPU.
    pub fn memory_bytes(&self) -> Option<u64> {
        match self {
            Device::Cpu => crate::trace::provenance::host_memory_bytes(),
        }
    }

    /// Short name used in file names (`trace/lecture_02/<slug>.json`).
    pub fn slug(&self) -> String {
        match self {
            Device::Cpu => "cpu".to_string(),
        }
    }
}

/// The device a run uses and why: the best available unless one is forced.
#[derive(Debug, Clone)]
pub struct DeviceChoice {
    pub device: Device,
    /// Why CUDA is not in use (None when it is).
    pub cuda_unavailable_reason: Option<String>,
}

/// Which device the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceRequest {
    Auto,
    Cpu,
    Cuda,
}

pub fn choose(request: DeviceRequest) -> Result<DeviceChoice> {
    let cuda_reason = match probe::probe_libraries() {
        probe::CudaStatus::Unavailable(why) => why,
        probe::CudaStatus::LibrariesPresent => "the CUDA libraries are present, but this build has no CUDA backend yet".to_string(),
    };
    match request {
        DeviceRequest::Cuda => Err(Error::Cuda(format!("--device cuda was requested but CUDA cannot be used: {cuda_reason}"))),
        DeviceRequest::Cpu => Ok(DeviceChoice { device: Device::Cpu, cuda_unavailable_reason: Some(format!("the CPU was requested (--device cpu); {cuda_reason}")) }),
        DeviceRequest::Auto => Ok(DeviceChoice { device: Device::Cpu, cuda_unavailable_reason: Some(cuda_reason) }),
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
        }
    }
}

fn same_device(op: &'static str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.device() != b.device() {
        return Err(Error::DeviceMismatch { op, lhs: a.device().to_string(), rhs: b.device().to_string() });
    }
    Ok(())
}

/// Output tensors are always fresh and contiguous.
fn wrap(buffer: Buffer, shape: &[usize], device: &Device) -> Result<Tensor> {
    Tensor::from_buffer(buffer, shape, device.clone())
}

pub(crate) fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    let out = match &*x.storage().read() {
        Buffer::Cpu(buf) => Buffer::Cpu(cpu::unary(op, buf, x.layout())?),
    };
    wrap(out, x.shape(), x.device())
}

/// `a` and `b` have already been broadcast to the same shape.
pub(crate) fn binary(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    same_device(op.name(), a, b)?;
    let (ga, gb) = (a.storage().read(), b.storage().read());
    let out = match (&*ga, &*gb) {
        (Buffer::Cpu(x), Buffer::Cpu(y)) => Buffer::Cpu(cpu::binary(op, x, a.layout(), y, b.layout())?),
    };
    wrap(out, a.shape(), a.device())
}

/// Reduces `dims` of `x`; the result has those dims removed (callers add them back for keepdim).
pub(crate) fn reduce(op: ReduceOp, x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    let out_shape: Vec<usize> = x.shape().iter().enumerate().filter(|(d, _)| !dims.contains(d)).map(|(_, &n)| n).collect();
    let out = match &*x.storage().read() {
        Buffer::Cpu(buf) => Buffer::Cpu(cpu::reduce(op, buf, x.layout(), dims)?),
    };
    wrap(out, &out_shape, x.device())
}

/// `a`: [batch…, m, k], `b`: [batch…, k, n] with identical (already broadcast) batch shapes.
pub(crate) fn matmul(a: &Tensor, b: &Tensor, out_shape: &[usize]) -> Result<Tensor> {
    same_device("matmul", a, b)?;
    let (ga, gb) = (a.storage().read(), b.storage().read());
    let out = match (&*ga, &*gb) {
        (Buffer::Cpu(x), Buffer::Cpu(y)) => Buffer::Cpu(cpu::matmul(x, a.layout(), y, b.layout())?),
    };
    wrap(out, out_shape, a.device())
}

/// Always copies, into fresh contiguous storage.
pub(crate) fn contiguous_copy(x: &Tensor) -> Result<Tensor> {
    let out = match &*x.storage().read() {
        Buffer::Cpu(buf) => Buffer::Cpu(cpu::gather(buf, x.layout())),
    };
    wrap(out, x.shape(), x.device())
}

pub(crate) fn cast(x: &Tensor, dtype: DType) -> Result<Tensor> {
    let out = match &*x.storage().read() {
        Buffer::Cpu(buf) => Buffer::Cpu(cpu::cast(buf, x.layout(), dtype)),
    };
    wrap(out, x.shape(), x.device())
}

pub(crate) fn triu(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    let out = match &*x.storage().read() {
        Buffer::Cpu(buf) => Buffer::Cpu(cpu::triu(buf, x.layout(), diagonal)?),
    };
    wrap(out, x.shape(), x.device())
}

/// Copies `x` to `device` (a no-op view when it is already there).
pub(crate) fn to_device(x: &Tensor, device: &Device) -> Result<Tensor> {
    if x.device() == device {
        return Ok(x.clone());
    }
    match device {
        Device::Cpu => Ok(x.clone()),
    }
}

/// Checks that a layout stays inside its buffer before any unchecked access.
pub(crate) fn check_bounds(op: &'static str, layout: &Layout, len: usize) -> Result<()> {
    match layout.max_storage_index() {
        Some(max) if max >= len => Err(Error::invalid(op, format!("layout {layout:?} reaches past the end of its storage ({len} elements)"))),
        _ => Ok(()),
    }
}

/// Waits until every queued operation on `device` has finished (timing needs it on a GPU, whose
/// calls return before the work is done; the CPU backend runs synchronously).
pub fn synchronize(device: &Device) -> Result<()> {
    match device {
        Device::Cpu => Ok(()),
    }
}

/// Writes `src` (converted to `dst`'s dtype) into `dst`'s storage. `dst` is contiguous, the shapes
/// match and the storages differ (checked by the caller).
pub(crate) fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    same_device("copy_from", dst, src)?;
    let source = cast(src, dst.dtype())?.contiguous()?;
    let from = source.storage().read();
    let mut to = dst.storage().write();
    match (&mut *to, &*from) {
        (Buffer::Cpu(d), Buffer::Cpu(s)) => cpu::update::copy_into(d, dst.layout(), s, source.layout()),
    }
}

/// `param -= lr · grad` in place (shapes checked by the caller; `param` contiguous).
pub(crate) fn sgd_update(param: &Tensor, grad: &Tensor, lr: f64) -> Result<()> {
    same_device("sgd_update", param, grad)?;
    let grad = grad.contiguous()?;
    let g = grad.storage().read();
    let mut p = param.storage().write();
    match (&mut *p, &*g) {
        (Buffer::Cpu(p), Buffer::Cpu(g)) => cpu::update::sgd(p, param.layout(), g, grad.layout(), lr),
    }
}

/// AdaGrad's fused update in place: `sum_sq += grad²; param -= lr · grad / √(sum_sq + eps)`.
pub(crate) fn adagrad_update(param: &Tensor, sum_sq: &Tensor, grad: &Tensor, lr: f64, eps: f64) -> Result<()> {
    same_device("adagrad_update", param, grad)?;
    same_device("adagrad_update", param, sum_sq)?;
    let grad = grad.contiguous()?;
    let g = grad.storage().read();
    let mut p = param.storage().write();
    let mut s = sum_sq.storage().write();
    match (&mut *p, &mut *s, &*g) {
        (Buffer::Cpu(p), Buffer::Cpu(s), Buffer::Cpu(g)) => {
            cpu::update::adagrad(cpu::update::AdaGradArgs { param: p, param_layout: param.layout(), sum_sq: s, sum_sq_layout: sum_sq.layout(), grad: g, grad_layout: grad.layout(), lr, eps })
        }
    }
}
