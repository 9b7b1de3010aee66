//! Devices and the one dispatch point: every tensor op that touches data comes through here and is
//! routed to the backend that owns the data. Adding an op means one function here plus one per
//! backend.

pub mod cpu;
pub mod cuda;
pub mod peaks;
pub mod probe;

use crate::error::{Error, Result};
use crate::tensor::{BinaryOp, Buffer, CpuBuffer, DType, Layout, ReduceOp, Tensor, UnaryOp};

pub use cuda::{CudaDevice, F32Matmul};

#[derive(Debug, Clone, PartialEq)]
pub enum Device {
    Cpu,
    /// One GPU through the CUDA backend (the handle is shared by every tensor on it).
    Cuda(CudaDevice),
}

impl Device {
    pub fn is_cpu(&self) -> bool {
        matches!(self, Device::Cpu)
    }

    pub fn is_cuda(&self) -> bool {
        matches!(self, Device::Cuda(_))
    }

    /// The CUDA backend, when this is a GPU.
    pub fn cuda(&self) -> Option<&CudaDevice> {
        match self {
            Device::Cuda(c) => Some(c),
            Device::Cpu => None,
        }
    }

    /// Memory the device has: host RAM for the CPU, device memory for a GPU.
    pub fn memory_bytes(&self) -> Option<u64> {
        match self {
            Device::Cpu => crate::host::memory_bytes(),
            Device::Cuda(c) => Some(c.props().total_memory as u64),
        }
    }

    /// Short name used in file names (`trace/lecture_02/<slug>.json`), naming the model so that
    /// two machines never share a file: "cpu-intel-r-xeon-r-processor", "nvidia-h200".
    pub fn slug(&self) -> String {
        match self {
            Device::Cpu => crate::host::cpu_slug(),
            Device::Cuda(c) => c.props().slug(),
        }
    }

    /// How float32 matmuls are done on a GPU (TF32 tensor cores, FP32 as cuBLAS likes it, or
    /// pedantic FP32). Returns the previous setting; the CPU has one float32 matmul and ignores
    /// it (returning `Default`).
    pub fn set_f32_matmul(&self, mode: F32Matmul) -> F32Matmul {
        match self {
            Device::Cpu => F32Matmul::Default,
            Device::Cuda(c) => c.set_f32_matmul(mode),
        }
    }

    /// Facts about a bfloat16 matmul on this device: the output dtype, and whether partial sums
    /// may be reduced in a precision below float32 (cuBLAS's default math mode allows it for a
    /// bf16 output; the CPU kernel accumulates every product in float32 and rounds once).
    pub fn bf16_matmul_reduced_precision_reduction(&self) -> bool {
        match self {
            Device::Cpu => false,
            Device::Cuda(_) => cuda::GemmMode::Bf16.reduced_precision_reduction(),
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

/// CUDA when it is usable (libraries present, a device reported, the backend opened), else the
/// CPU with the reason; `--device cuda` without a usable GPU is an error that says why.
pub fn choose(request: DeviceRequest) -> Result<DeviceChoice> {
    if request == DeviceRequest::Cpu {
        return Ok(DeviceChoice {
            device: Device::Cpu,
            cuda_unavailable_reason: Some("the CPU was requested (--device cpu)".to_string()),
        });
    }
    match (cuda::open(0), request) {
        (Ok(dev), _) => Ok(DeviceChoice {
            device: Device::Cuda(dev),
            cuda_unavailable_reason: None,
        }),
        (Err(why), DeviceRequest::Cuda) => Err(Error::Cuda(format!(
            "--device cuda was requested but CUDA cannot be used: {why}"
        ))),
        (Err(why), _) => Ok(DeviceChoice {
            device: Device::Cpu,
            cuda_unavailable_reason: Some(why),
        }),
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(c) => write!(f, "cuda:{}", c.props().ordinal),
        }
    }
}

fn same_device(op: &'static str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.device() != b.device() {
        return Err(Error::DeviceMismatch {
            op,
            lhs: a.device().to_string(),
            rhs: b.device().to_string(),
        });
    }
    Ok(())
}

fn mixed(op: &'static str, a: &Tensor, b: &Tensor) -> Error {
    Error::DeviceMismatch {
        op,
        lhs: a.device().to_string(),
        rhs: b.device().to_string(),
    }
}

/// Output tensors are always fresh and contiguous.
fn wrap(buffer: Buffer, shape: &[usize], device: &Device) -> Result<Tensor> {
    Tensor::from_buffer(buffer, shape, device.clone())
}

pub(crate) fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    let out = match &*x.storage().read() {
        Buffer::Cpu(buf) => Buffer::Cpu(cpu::unary(op, buf, x.layout())?),
        Buffer::Cuda(buf) => Buffer::Cuda(cuda::unary(op, buf, x.layout())?),
    };
    wrap(out, x.shape(), x.device())
}

/// `a` and `b` have already been broadcast to the same shape.
pub(crate) fn binary(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    same_device(op.name(), a, b)?;
    let (ga, gb) = (a.storage().read(), b.storage().read());
    let out = match (&*ga, &*gb) {
        (Buffer::Cpu(x), Buffer::Cpu(y)) => Buffer::Cpu(cpu::binary(op, x, a.layout(), y, b.layout())?),
        (Buffer::Cuda(x), Buffer::Cuda(y)) => Buffer::Cuda(cuda::binary(op, x, a.layout(), y, b.layout())?),
        _ => return Err(mixed(op.name(), a, b)),
    };
    wrap(out, a.shape(), a.device())
}

/// Reduces `dims` of `x`; the result has those dims removed (callers add them back for keepdim).
pub(crate) fn reduce(op: ReduceOp, x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    let out_shape: Vec<usize> = x
        .shape()
        .iter()
        .enumerate()
        .filter(|(d, _)| !dims.contains(d))
        .map(|(_, &n)| n)
        .collect();
    let out = match &*x.storage().read() {
        Buffer::Cpu(buf) => Buffer::Cpu(cpu::reduce(op, buf, x.layout(), dims)?),
        Buffer::Cuda(buf) => Buffer::Cuda(cuda::reduce(op, buf, x.layout(), dims)?),
    };
    wrap(out, &out_shape, x.device())
}

/// `a`: [batch…, m, k], `b`: [batch…, k, n] with identical (already broadcast) batch shapes.
pub(crate) fn matmul(a: &Tensor, b: &Tensor, out_shape: &[usize]) -> Result<Tensor> {
    same_device("matmul", a, b)?;
    let (ga, gb) = (a.storage().read(), b.storage().read());
    let out = match (&*ga, &*gb) {
        (Buffer::Cpu(x), Buffer::Cpu(y)) => Buffer::Cpu(cpu::matmul(x, a.layout(), y, b.layout())?),
        (Buffer::Cuda(x), Buffer::Cuda(y)) => Buffer::Cuda(cuda::matmul(x, a.layout(), y, b.layout())?),
        _ => return Err(mixed("matmul", a, b)),
    };
    wrap(out, out_shape, a.device())
}

/// Always copies, into fresh contiguous storage.
pub(crate) fn contiguous_copy(x: &Tensor) -> Result<Tensor> {
    let out = match &*x.storage().read() {
        Buffer::Cpu(buf) => Buffer::Cpu(cpu::gather(buf, x.layout())),
        Buffer::Cuda(buf) => Buffer::Cuda(cuda::gather(buf, x.layout())?),
    };
    wrap(out, x.shape(), x.device())
}

pub(crate) fn cast(x: &Tensor, dtype: DType) -> Result<Tensor> {
    let out = match &*x.storage().read() {
        Buffer::Cpu(buf) => Buffer::Cpu(cpu::cast(buf, x.layout(), dtype)),
        Buffer::Cuda(buf) => Buffer::Cuda(cuda::cast(buf, x.layout(), dtype)?),
    };
    wrap(out, x.shape(), x.device())
}

pub(crate) fn triu(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    let out = match &*x.storage().read() {
        Buffer::Cpu(buf) => Buffer::Cpu(cpu::triu(buf, x.layout(), diagonal)?),
        Buffer::Cuda(buf) => Buffer::Cuda(cuda::triu(buf, x.layout(), diagonal)?),
    };
    wrap(out, x.shape(), x.device())
}

/// A tensor of `shape` filled with `value` (rounded into `dtype`), made directly on `device`.
pub(crate) fn full(shape: &[usize], value: f64, dtype: DType, device: &Device) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let buffer = match device {
        Device::Cpu => Buffer::Cpu(if value == 0.0 {
            CpuBuffer::zeros(dtype, n)
        } else {
            CpuBuffer::from_f64(dtype, std::iter::repeat_n(value, n))
        }),
        Device::Cuda(c) => Buffer::Cuda(cuda::full(&c.0, dtype, n, value)?),
    };
    wrap(buffer, shape, device)
}

/// Random values drawn on a GPU from a seed (the CPU draws from its own `Rng` instead).
pub(crate) fn random_on_gpu(
    dev: &CudaDevice,
    dist: cuda::ops::Distribution,
    shape: &[usize],
    dtype: DType,
    seed: u64,
) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let buffer = Buffer::Cuda(cuda::random(&dev.0, dist, dtype, n, seed)?);
    wrap(buffer, shape, &Device::Cuda(dev.clone()))
}

/// The storage range of a contiguous tensor's elements (`0..0` when it is empty: an empty view's
/// offset may lie past the end of its storage).
fn contiguous_range(op: &'static str, x: &Tensor) -> Result<std::ops::Range<usize>> {
    x.layout().contiguous_range().ok_or_else(|| Error::NotContiguous {
        op,
        shape: x.shape().to_vec(),
        strides: x.strides().to_vec(),
    })
}

/// Copies `x` to `device` (a no-op view when it is already there).
pub(crate) fn to_device(x: &Tensor, device: &Device) -> Result<Tensor> {
    if x.device() == device {
        return Ok(x.clone());
    }
    // Only the elements the view shows travel, in row-major order.
    let x = x.contiguous()?;
    let range = contiguous_range("to_device", &x)?;
    let out = match (&*x.storage().read(), device) {
        (Buffer::Cpu(buf), Device::Cuda(c)) => Buffer::Cuda(cuda::upload(&c.0, buf, range)?),
        (Buffer::Cuda(buf), Device::Cpu) => Buffer::Cpu(cuda::download(buf, range)?),
        _ => {
            return Err(Error::DeviceMismatch {
                op: "to_device",
                lhs: x.device().to_string(),
                rhs: device.to_string(),
            });
        }
    };
    wrap(out, x.shape(), device)
}

/// `to_device` for host data going to a GPU through pinned (page-locked) memory and an
/// asynchronous copy, as `DataLoader(pin_memory=True)` and `.to(device, non_blocking=True)` do.
/// On the CPU it is `to_device`.
pub fn to_device_pinned(x: &Tensor, device: &Device) -> Result<Tensor> {
    let (Device::Cuda(c), Device::Cpu) = (device, x.device()) else {
        return to_device(x, device);
    };
    let x = x.contiguous()?;
    let range = contiguous_range("to_device_pinned", &x)?;
    let out = match &*x.storage().read() {
        Buffer::Cpu(buf) => Buffer::Cuda(cuda::upload_pinned(&c.0, buf, range)?),
        Buffer::Cuda(_) => return Err(Error::invalid("to_device_pinned", "the source is not in host memory")),
    };
    wrap(out, x.shape(), device)
}

/// Waits until every queued operation on `device` has finished (a GPU's calls return before the
/// work is done; the CPU backend runs synchronously).
pub fn synchronize(device: &Device) -> Result<()> {
    match device {
        Device::Cpu => Ok(()),
        Device::Cuda(c) => c.synchronize(),
    }
}

/// Bytes held by live tensors on `device`, as its allocator counts them
/// (`torch.cuda.memory_allocated`). The CPU backend keeps no count: None.
pub fn memory_allocated(device: &Device) -> Option<usize> {
    device.cuda().map(|c| c.memory_stats().allocated)
}

/// The fused mean squared error of two tensors of one shape, as a 0-dimensional tensor. On the
/// CPU: `pred.sub(target).square().mean_all()`, which the GPU kernel reproduces bit for bit.
pub fn mse_loss(pred: &Tensor, target: &Tensor) -> Result<Tensor> {
    same_device("mse_loss", pred, target)?;
    if pred.shape() != target.shape() {
        return Err(Error::shape(
            "mse_loss",
            pred.shape(),
            target.shape(),
            "prediction and target must have one shape",
        ));
    }
    if pred.device().is_cpu() {
        return pred.sub(target)?.square()?.mean_all();
    }
    let (gp, gt) = (pred.storage().read(), target.storage().read());
    let out = match (&*gp, &*gt) {
        (Buffer::Cuda(p), Buffer::Cuda(t)) => Buffer::Cuda(cuda::mse_loss(p, pred.layout(), t, target.layout())?),
        _ => return Err(mixed("mse_loss", pred, target)),
    };
    let n = pred.numel() as u64;
    // The same FLOPs the unfused ops count: sub, square (one per element each), mean (one per element).
    crate::flops::record("mse_loss", 3 * n);
    wrap(out, &[], pred.device())
}

/// Checks that a layout stays inside its buffer before any unchecked access.
pub(crate) fn check_bounds(op: &'static str, layout: &Layout, len: usize) -> Result<()> {
    match layout.max_storage_index() {
        Some(max) if max >= len => Err(Error::invalid(
            op,
            format!("layout {layout:?} reaches past the end of its storage ({len} elements)"),
        )),
        _ => Ok(()),
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
        (Buffer::Cuda(d), Buffer::Cuda(s)) => cuda::copy_into(d, dst.layout(), s, source.layout()),
        _ => Err(mixed("copy_from", dst, src)),
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
        (Buffer::Cuda(p), Buffer::Cuda(g)) => cuda::sgd_update(p, param.layout(), g, grad.layout(), lr),
        _ => Err(mixed("sgd_update", param, &grad)),
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
        (Buffer::Cpu(p), Buffer::Cpu(s), Buffer::Cpu(g)) => cpu::update::adagrad(cpu::update::AdaGradArgs {
            param: p,
            param_layout: param.layout(),
            sum_sq: s,
            sum_sq_layout: sum_sq.layout(),
            grad: g,
            grad_layout: grad.layout(),
            lr,
            eps,
        }),
        (Buffer::Cuda(p), Buffer::Cuda(s), Buffer::Cuda(g)) => {
            cuda::adagrad_update(p, param.layout(), s, sum_sq.layout(), g, grad.layout(), lr, eps)
        }
        _ => Err(mixed("adagrad_update", param, &grad)),
    }
}
