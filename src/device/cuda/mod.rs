//! The CUDA backend (cudarc): one context and stream on one GPU, an allocator that counts bytes
//! exactly, cuBLAS for matmul, and the kernels from `kernels/` (compiled by NVRTC once per process)
//! for everything else.
//!
//! All work goes to the device's default stream, so operations run in the order they were issued
//! and cudarc's cross-stream event tracking is switched off (it would add two events to every
//! allocation). Host reads (`to_vec`, `get`) synchronise.

pub mod alloc;
pub mod blas;
mod compute;
pub mod events;
pub mod kernels;
pub mod launch;
pub mod ops;
mod props;
mod transfer;
mod update;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::cublas::{CudaBlas, sys as blas_sys};
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, DeviceRepr, DriverError, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

pub use alloc::{Allocator, CudaBuffer, CudaData, DeviceMem, MemoryStats};
pub use blas::{F32Matmul, GemmMode, GemmRoute};
pub use compute::*;
pub use props::{DeviceProps, slug};
pub use transfer::*;
pub use update::*;

use crate::base::DType;
use crate::device::probe;
use crate::error::{Error, Result};
use kernels::ParamSpec;
use launch::{Arg, Launch};

pub(crate) fn driver_error(what: &str, e: DriverError) -> Error {
    Error::Cuda(format!("{what}: {e:?}"))
}

/// The backend: everything needed to run tensor ops on one GPU.
pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    blas: Mutex<CudaBlas>,
    functions: HashMap<String, (CudaFunction, Vec<ParamSpec>)>,
    alloc: Arc<Allocator>,
    props: DeviceProps,
    f32_matmul: AtomicU8,
    /// cuBLASLt and its workspace, or why there is none (16-bit products then go to cuBLAS).
    lt: std::result::Result<Mutex<blas::lt::LtHandle>, String>,
    /// Where 16-bit products go (`GemmRoute`), and how many went to cuBLAS after cuBLASLt
    /// refused them, with the last reason.
    gemm_route: AtomicU8,
    lt_fallbacks: AtomicU64,
    lt_last_refusal: Mutex<Option<String>>,
    /// Synchronise after every launch so that a failing kernel is reported by name
    /// (CS336_CUDA_SYNC_CHECK=1; the agreement tests set it).
    check_each_launch: bool,
    /// Seconds NVRTC took to compile the kernels when the backend opened.
    pub compile_seconds: f64,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaBackend(cuda:{}, {})", self.props.ordinal, self.props.name)
    }
}

/// The handle a `Device::Cuda` carries.
#[derive(Clone)]
pub struct CudaDevice(pub Arc<CudaBackend>);

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl PartialEq for CudaDevice {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.props.ordinal == other.0.props.ordinal
    }
}

impl std::ops::Deref for CudaDevice {
    type Target = CudaBackend;
    fn deref(&self) -> &CudaBackend {
        &self.0
    }
}

static OPENED: Mutex<Option<Arc<CudaBackend>>> = Mutex::new(None);

/// The process's backend on GPU `ordinal` (opened on first use: context, cuBLAS, kernels compiled
/// once per process), or why CUDA cannot be used. Never panics: libraries are probed before
/// cudarc touches them, and a panic inside cudarc (a missing symbol in an old driver, say) is
/// caught and reported as the reason.
pub fn open(ordinal: usize) -> std::result::Result<CudaDevice, String> {
    let mut opened = OPENED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(b) = opened.as_ref() {
        return Ok(CudaDevice(Arc::clone(b)));
    }
    if let probe::CudaStatus::Unavailable(why) = probe::probe_libraries() {
        return Err(why);
    }
    let attempt = std::panic::catch_unwind(AssertUnwindSafe(|| -> std::result::Result<Arc<CudaBackend>, String> {
        let count =
            CudaContext::device_count().map_err(|e| format!("the CUDA driver could not be initialised ({e:?})"))?;
        if count <= 0 {
            return Err("the CUDA driver reports no device".to_string());
        }
        if ordinal >= count as usize {
            return Err(format!(
                "CUDA device {ordinal} was asked for, but the driver reports {count}"
            ));
        }
        CudaBackend::new(ordinal)
            .map(Arc::new)
            .map_err(|e| format!("opening CUDA device {ordinal} failed: {e}"))
    }));
    match attempt {
        Ok(Ok(backend)) => {
            *opened = Some(Arc::clone(&backend));
            Ok(CudaDevice(backend))
        }
        Ok(Err(why)) => Err(why),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(format!("the CUDA libraries failed while opening the device: {msg}"))
        }
    }
}

/// How many CUDA devices the driver reports (call after [`open`] succeeded).
pub fn device_count() -> Result<usize> {
    CudaContext::device_count()
        .map(|n| n.max(0) as usize)
        .map_err(|e| driver_error("cuDeviceGetCount", e))
}

impl CudaBackend {
    fn new(ordinal: usize) -> Result<CudaBackend> {
        let ctx = CudaContext::new(ordinal).map_err(|e| driver_error("creating the context", e))?;
        // SAFETY: one stream only (below), so no allocation is ever used on a stream other than
        // the one it was made on; nothing has been allocated yet.
        unsafe { ctx.disable_event_tracking() };
        alloc::keep_freed_memory(&ctx)?;
        let stream = ctx.default_stream();
        let blas = CudaBlas::new(Arc::clone(&stream))
            .map_err(|e| Error::Cuda(format!("creating the cuBLAS handle: {e:?}")))?;
        // Plain FP32 unless a call asks for TF32 through its compute type.
        // SAFETY: a live handle.
        unsafe { blas_sys::cublasSetMathMode(*blas.handle(), blas_sys::cublasMath_t::CUBLAS_DEFAULT_MATH) }
            .result()
            .map_err(|e| Error::Cuda(format!("cublasSetMathMode: {e:?}")))?;
        let mut cublas_version = 0;
        // SAFETY: a live handle and one out-parameter.
        let cublas_version = unsafe { blas_sys::cublasGetVersion_v2(*blas.handle(), &mut cublas_version) }
            .result()
            .ok()
            .map(|()| {
                format!(
                    "{}.{}.{}",
                    cublas_version / 10000,
                    (cublas_version % 10000) / 100,
                    cublas_version % 100
                )
            });
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| driver_error("reading the compute capability", e))?;
        let arch = std::env::var("CS336_CUDA_ARCH").unwrap_or_else(|_| kernels::arch_for(major, minor));
        let props = DeviceProps::read(&ctx, &arch, cublas_version)?;
        // Made with the cuBLAS handle, so its workspace is there before any section measures memory.
        let lt = blas::lt::LtHandle::new(&stream, major).map(Mutex::new);
        let start = std::time::Instant::now();
        let functions = load_kernels(&ctx, &arch)?;
        let compile_seconds = start.elapsed().as_secs_f64();
        Ok(CudaBackend {
            ctx,
            stream,
            blas: Mutex::new(blas),
            functions,
            alloc: Arc::new(Allocator::default()),
            props,
            f32_matmul: AtomicU8::new(F32Matmul::Default.to_u8()),
            lt,
            gemm_route: AtomicU8::new(GemmRoute::default().to_u8()),
            lt_fallbacks: AtomicU64::new(0),
            lt_last_refusal: Mutex::new(None),
            check_each_launch: std::env::var("CS336_CUDA_SYNC_CHECK").is_ok_and(|v| v == "1"),
            compile_seconds,
        })
    }

    pub fn props(&self) -> &DeviceProps {
        &self.props
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub fn sm_count(&self) -> u32 {
        self.props.sm_count
    }

    /// How f32 matmuls are done (like `torch.set_float32_matmul_precision`); FP32 without TF32
    /// by default. Returns the previous setting.
    pub fn set_f32_matmul(&self, mode: F32Matmul) -> F32Matmul {
        F32Matmul::from_u8(self.f32_matmul.swap(mode.to_u8(), Ordering::SeqCst))
    }

    pub fn f32_matmul(&self) -> F32Matmul {
        F32Matmul::from_u8(self.f32_matmul.load(Ordering::SeqCst))
    }

    /// Where 16-bit matmuls go: cuBLASLt (the default, PyTorch's route) or cuBLAS. Returns the
    /// previous setting. Float32 always goes to cuBLAS (`blas::lt::route_for`).
    pub fn set_gemm_route(&self, route: GemmRoute) -> GemmRoute {
        GemmRoute::from_u8(self.gemm_route.swap(route.to_u8(), Ordering::SeqCst))
    }

    /// The route a product in `mode` takes now.
    pub fn route_for(&self, mode: GemmMode) -> GemmRoute {
        let preferred = GemmRoute::from_u8(self.gemm_route.load(Ordering::SeqCst));
        blas::lt::route_for(mode, preferred, self.lt.is_ok())
    }

    /// Why there is no cuBLASLt route, where there is none.
    pub fn lt_unavailable(&self) -> Option<&str> {
        self.lt.as_ref().err().map(String::as_str)
    }

    /// The cuBLASLt workspace in bytes, where there is one.
    pub fn lt_workspace_bytes(&self) -> Option<usize> {
        self.lt
            .as_ref()
            .ok()
            .map(|h| h.lock().unwrap_or_else(|p| p.into_inner()).workspace_bytes())
    }

    /// How many heuristic searches cuBLASLt ran (one per distinct product), where it is used.
    pub fn lt_searches(&self) -> Option<usize> {
        self.lt
            .as_ref()
            .ok()
            .map(|h| h.lock().unwrap_or_else(|p| p.into_inner()).searches())
    }

    /// How many products cuBLASLt refused (each then ran on cuBLAS), and the last reason.
    pub fn lt_fallbacks(&self) -> (u64, Option<String>) {
        let last = self.lt_last_refusal.lock().unwrap_or_else(|p| p.into_inner()).clone();
        (self.lt_fallbacks.load(Ordering::SeqCst), last)
    }

    /// The cuBLASLt handle, locked, with the context bound to this thread.
    pub(crate) fn lt(&self) -> Result<MutexGuard<'_, blas::lt::LtHandle>> {
        let lt = self.lt.as_ref().map_err(|why| Error::Cuda(why.clone()))?;
        self.ctx
            .bind_to_thread()
            .map_err(|e| driver_error("binding the context", e))?;
        Ok(lt.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Counts a product cuBLASLt refused, keeping the reason.
    pub(crate) fn note_lt_refusal(&self, why: String) {
        self.lt_fallbacks.fetch_add(1, Ordering::SeqCst);
        *self.lt_last_refusal.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
    }

    /// Waits for all queued work.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(|e| driver_error("synchronising", e))
    }

    /// The bytes the allocator counts as live, and their high-water mark.
    pub fn memory_stats(&self) -> MemoryStats {
        self.alloc.stats()
    }

    /// Starts the allocator's high-water mark again at what is live now.
    pub fn reset_peak_memory(&self) {
        self.alloc.reset_peak()
    }

    /// The driver's view: (free, total) bytes of device memory, after the queued work (and so
    /// the queued frees) has finished and the pool has handed its unused memory back (it keeps
    /// freed memory otherwise, see [`alloc::pool_settings`]).
    pub fn driver_memory(&self) -> Result<(usize, usize)> {
        self.synchronize()?;
        alloc::release_unused(&self.ctx)?;
        self.ctx.mem_get_info().map_err(|e| driver_error("cuMemGetInfo", e))
    }

    /// `len` uninitialised elements of `T`, counted by the allocator.
    pub fn alloc_raw<T: DeviceRepr>(&self, len: usize) -> Result<DeviceMem<T>> {
        self.alloc.alloc::<T>(&self.stream, len)
    }

    /// A buffer of `len` uninitialised elements of `dtype` (callers write every element).
    pub fn alloc(self: &Arc<Self>, dtype: DType, len: usize) -> Result<CudaBuffer> {
        let data = match dtype {
            DType::F32 => CudaData::F32(self.alloc_raw(len)?),
            DType::F16 => CudaData::F16(self.alloc_raw(len)?),
            DType::BF16 => CudaData::BF16(self.alloc_raw(len)?),
            DType::I32 => CudaData::I32(self.alloc_raw(len)?),
            DType::I64 => CudaData::I64(self.alloc_raw(len)?),
        };
        Ok(CudaBuffer {
            data,
            backend: Arc::clone(self),
        })
    }

    /// Runs a planned launch after checking it against the kernel's parameter list.
    pub fn launch(&self, l: &Launch) -> Result<()> {
        let (func, params) = self
            .functions
            .get(&l.kernel)
            .ok_or_else(|| Error::Cuda(format!("no kernel named {} in kernels/*.cu", l.kernel)))?;
        l.check_against(params)?;
        let mut builder = self.stream.launch_builder(func);
        for arg in &l.args {
            match arg {
                Arg::Ptr(v) | Arg::U64(v) => builder.arg(v),
                Arg::I64(v) => builder.arg(v),
                Arg::U32(v) => builder.arg(v),
                Arg::F32(v) => builder.arg(v),
                Arg::Strided(v) => builder.arg(v),
            };
        }
        let cfg = LaunchConfig {
            grid_dim: l.grid,
            block_dim: l.block,
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments match the kernel's parameter list (checked above); the plans
        // bounds-check every view against its buffer before addresses are handed out.
        unsafe { builder.launch(cfg) }.map_err(|e| driver_error(&format!("launching {}", l.kernel), e))?;
        if self.check_each_launch {
            self.stream
                .synchronize()
                .map_err(|e| driver_error(&format!("kernel {} failed", l.kernel), e))?;
        }
        Ok(())
    }

    /// The cuBLAS handle, locked (a handle must not be used by two threads at once).
    pub(crate) fn blas(&self) -> Result<MutexGuard<'_, CudaBlas>> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| driver_error("binding the context", e))?;
        Ok(self.blas.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Compiles every kernel file (in parallel: NVRTC compiles independent programs concurrently),
/// loads the machine code, and looks up every kernel with its parameter list. With
/// CS336_KERNEL_CACHE set to a folder, compiled files are kept there and reused by later
/// processes (keyed by a hash of the source, options, architecture and NVRTC version).
fn load_kernels(ctx: &Arc<CudaContext>, arch: &str) -> Result<HashMap<String, (CudaFunction, Vec<ParamSpec>)>> {
    let cache = std::env::var_os("CS336_KERNEL_CACHE").map(std::path::PathBuf::from);
    let compiled: Vec<Result<kernels::Compiled>> = std::thread::scope(|s| {
        let handles: Vec<_> = kernels::SOURCES
            .iter()
            .map(|src| {
                let cache = cache.clone();
                s.spawn(move || match cache {
                    Some(dir) => kernels::compile_cached(&dir, src.file, src.text, arch),
                    None => kernels::compile(src.file, src.text, arch),
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Cuda("an NVRTC compile thread panicked".into())))
            })
            .collect()
    });
    let mut functions = HashMap::new();
    for c in compiled {
        let c = c?;
        let image = match c.cubin {
            Some(bin) => Ptx::from_binary(bin),
            None => Ptx::from_src(c.ptx.clone()),
        };
        let module = ctx
            .load_module(image)
            .map_err(|e| driver_error(&format!("loading kernels/{} ({})", c.file, c.arch), e))?;
        for (name, params) in kernels::parse_entries(&c.ptx)? {
            let func = module
                .load_function(&name)
                .map_err(|e| driver_error(&format!("finding kernel {name}"), e))?;
            functions.insert(name, (func, params));
        }
    }
    Ok(functions)
}
