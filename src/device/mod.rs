//! Devices and their backends: the CPU (`cpu`) and one GPU through CUDA (`cuda`). A backend works
//! on its own buffers (`cpu::CpuBuffer`, `cuda::CudaBuffer`) described by layouts; it never sees a
//! tensor. The tensor layer routes each op to the backend that holds the data
//! (`tensor/backend.rs`).

pub mod cpu;
pub mod cuda;
pub mod hierarchy;
pub mod math_mode;
pub mod peaks;
pub mod probe;

use crate::error::{Error, Result};

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

    /// The name of this device's trace (`trace/lecture_02/<slug>.json`, the rule in
    /// `trace::name`): "cpu-amd-epyc-avx512-bf16", "nvidia-h200". On a CPU it follows the kernels
    /// this thread's matmuls run with, so it fails where `CS336_CPU_ISA` is invalid.
    pub fn slug(&self) -> crate::error::Result<String> {
        match self {
            Device::Cpu => cpu::trace_name(),
            Device::Cuda(c) => Ok(c.props().slug()),
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

    /// Where a GPU's 16-bit matmuls go: cuBLASLt (the default) or cuBLAS. Returns the previous
    /// setting; the CPU has its own kernels and ignores it (returning the default).
    pub fn set_gemm_route(&self, route: cuda::GemmRoute) -> cuda::GemmRoute {
        match self {
            Device::Cpu => cuda::GemmRoute::default(),
            Device::Cuda(c) => c.set_gemm_route(route),
        }
    }

    /// On a GPU, which library its bfloat16 matmuls ran in: cuBLASLt with its workspace (and how
    /// many products it refused, each run by cuBLAS instead), or cuBLAS and why. None on a CPU.
    pub fn bf16_matmul_route(&self) -> Option<String> {
        let Device::Cuda(c) = self else { return None };
        Some(match (c.route_for(cuda::GemmMode::Bf16), c.lt_unavailable()) {
            (cuda::GemmRoute::CublasLt, _) => {
                let (refused, last) = c.lt_fallbacks();
                let workspace = c.lt_workspace_bytes().unwrap_or(0);
                match last {
                    None => format!("cuBLASLt, heuristic search, {workspace}-byte workspace"),
                    Some(why) => format!(
                        "cuBLASLt, heuristic search, {workspace}-byte workspace; {refused} product(s) it refused ran on cuBLAS (last: {why})"
                    ),
                }
            }
            (cuda::GemmRoute::Cublas, Some(why)) => format!("cuBLAS (cublasGemmEx): {why}"),
            (cuda::GemmRoute::Cublas, None) => "cuBLAS (cublasGemmEx), as set".into(),
        })
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

/// Live tensor bytes on a device and their high-water mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryUse {
    /// Bytes live tensors hold now.
    pub allocated: usize,
    /// The most they held at once since the last [`reset_peak_memory`].
    pub peak: usize,
}

/// What `device`'s allocator counts: on a GPU the CUDA pool's live bytes (every thread's); on
/// the CPU the bytes of live tensors this thread made (`cpu::live` says why per thread).
pub fn memory_use(device: &Device) -> MemoryUse {
    match device {
        Device::Cpu => {
            let s = cpu::live::stats();
            MemoryUse {
                allocated: s.allocated,
                peak: s.peak,
            }
        }
        Device::Cuda(c) => {
            let s = c.memory_stats();
            MemoryUse {
                allocated: s.allocated,
                peak: s.peak,
            }
        }
    }
}

/// Starts `device`'s high-water mark again at what is live now
/// (`torch.cuda.reset_peak_memory_stats`).
pub fn reset_peak_memory(device: &Device) {
    match device {
        Device::Cpu => cpu::live::reset_peak(),
        Device::Cuda(c) => c.reset_peak_memory(),
    }
}

/// The high-water mark of a closure's run: what was live when it started and the most that was
/// live at once while it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeakMemory {
    pub before: usize,
    pub peak: usize,
}

impl PeakMemory {
    /// The most the closure added on top of what was live before it (its own high-water mark).
    pub fn added(&self) -> usize {
        self.peak.saturating_sub(self.before)
    }
}

/// Runs `f` and reads the most tensor memory `device` held while it ran, as the lecture's
/// `get_max_memory_usage` does with `torch.cuda.max_memory_allocated`. The counts are taken when
/// memory is allocated and freed on the host, so a GPU's queued work need not have finished.
pub fn max_memory<T>(device: &Device, f: impl FnOnce() -> Result<T>) -> Result<(T, PeakMemory)> {
    reset_peak_memory(device);
    let before = memory_use(device).allocated;
    let out = f()?;
    let peak = memory_use(device).peak;
    Ok((out, PeakMemory { before, peak }))
}
