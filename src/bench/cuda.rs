//! The GPU benchmarks `cuda_bench` runs (and the lecture's host-to-device measurement): cuBLAS
//! matmul throughput, device copy bandwidth, the AdaGrad kernels' bandwidth, and host-to-device
//! bandwidth from pageable and pinned memory. Each is timed by CUDA events on the stream (the
//! `timing` module's CUDA clock): `warmup` untimed calls, then `reps` timed ones; the median is
//! reported.

use std::sync::Arc;

use cudarc::driver::result as drv_result;
use serde::Serialize;

use crate::base::{DType, Layout};
use crate::device::cuda::blas::{self, GemmMode, GemmPtrs, GemmRoute};
use crate::device::cuda::ops::{self, Distribution, UpdateKernel};
use crate::device::cuda::{self, CudaBackend, DeviceProps, driver_error};
use crate::error::{Error, Result};
use crate::timing::{self, Budget, Clock, Timing};

/// `warmup` untimed calls of `f`, then `reps` calls each between two events.
fn time_median(b: &Arc<CudaBackend>, warmup: usize, reps: usize, f: impl FnMut() -> Result<()>) -> Result<Timing> {
    let mut c = timing::contender(Clock::Cuda(Arc::clone(b)), f);
    Ok(timing::in_turns(Budget::count(warmup, reps), &mut [&mut c])?[0])
}

/// One matmul size and precision, timed.
#[derive(Debug, Clone, Serialize)]
pub struct GemmBench {
    pub mode: &'static str,
    /// The library: "cublas" (`cublasGemmEx`) or "cublaslt" (heuristic search and workspace).
    pub route: &'static str,
    /// On cuBLASLt: which candidate of the search ran, of how many, and the workspace it used.
    pub lt_choice: Option<serde_json::Value>,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub flops: f64,
    pub timing: Timing,
    pub flop_per_sec: f64,
}

/// Times C = A·B for A: m×k, B: k×n (row-major, contiguous) in `mode` through `route`'s library,
/// on random normal data drawn on the device (never zeros: a GPU multiplies zeros faster than
/// real data).
pub fn bench_gemm(
    b: &Arc<CudaBackend>,
    (mode, route): (GemmMode, GemmRoute),
    (m, n, k): (usize, usize, usize),
    warmup: usize,
    reps: usize,
    seed: u64,
) -> Result<GemmBench> {
    let a = cuda::random(b, Distribution::Normal, mode.input_dtype(), m * k, seed)?;
    let w = cuda::random(b, Distribution::Normal, mode.input_dtype(), k * n, seed ^ 0x5eed)?;
    let c = b.alloc(mode.output_dtype(), m * n)?;
    let plan = blas::plan(&Layout::contiguous(&[m, k]), &Layout::contiguous(&[k, n]))
        .map_err(|_| Error::Cuda("contiguous matrices need no copy".into()))?;
    let ptrs = GemmPtrs {
        a: a.device_ptr(),
        b: w.device_ptr(),
        c: c.device_ptr(),
    };
    let mut last_choice = None;
    let timing = match route {
        GemmRoute::Cublas => {
            let handle = b.blas()?;
            // SAFETY: contiguous buffers of the mode's dtypes, sized for the plan.
            time_median(b, warmup, reps, || unsafe {
                blas::run(*handle.handle(), mode, &plan, ptrs)
            })?
        }
        GemmRoute::CublasLt => {
            let mut handle = b.lt()?;
            time_median(b, warmup, reps, || {
                last_choice = Some((
                    // SAFETY: as the cuBLAS arm above: contiguous buffers sized for the plan.
                    unsafe { blas::lt::run(&mut handle, mode, &plan, ptrs) }?,
                    handle.workspace_bytes(),
                ));
                Ok(())
            })?
        }
    };
    // What the last timed call chose (the search ran at the first warm-up call; PyTorch's cuBLASLt
    // route searches at every call, which at this shape costs nothing measurable).
    let lt_choice = last_choice.map(|(choice, limit)| {
        serde_json::json!({
            "candidate": choice.candidate,
            "candidates": choice.candidates,
            "workspace_bytes": choice.workspace_bytes,
            "workspace_limit_bytes": limit,
        })
    });
    let flops = 2.0 * m as f64 * n as f64 * k as f64;
    Ok(GemmBench {
        mode: mode.name(),
        route: route.name(),
        lt_choice,
        m,
        n,
        k,
        flops,
        flop_per_sec: flops / timing.median_s,
        timing,
    })
}

/// Bytes moved per repetition over time.
#[derive(Debug, Clone, Serialize)]
pub struct Bandwidth {
    pub what: String,
    pub bytes_per_rep: f64,
    pub timing: Timing,
    pub bytes_per_sec: f64,
}

impl Bandwidth {
    pub fn new(what: impl Into<String>, bytes_per_rep: f64, timing: Timing) -> Bandwidth {
        Bandwidth {
            what: what.into(),
            bytes_per_rep,
            bytes_per_sec: bytes_per_rep / timing.median_s,
            timing,
        }
    }
}

/// How the device copy is labelled (the summary script and the fractions refer to it).
pub const COPY_LABEL: &str = "device copy (read + write)";

/// A device-to-device copy of `bytes`: the ceiling for memory-bound kernels. Counts bytes read
/// plus bytes written (2 × bytes), as the kernels' figures do.
pub fn bench_copy(b: &Arc<CudaBackend>, bytes: usize, warmup: usize, reps: usize) -> Result<Bandwidth> {
    let src = cuda::random(b, Distribution::Uniform, DType::F32, bytes / 4, 1)?;
    let dst = b.alloc(DType::F32, bytes / 4)?;
    let n = (bytes / 4) * 4;
    b.context()
        .bind_to_thread()
        .map_err(|e| driver_error("binding the context", e))?;
    let timing = time_median(b, warmup, reps, || {
        // SAFETY: two live buffers of n bytes, ordered on the backend's stream.
        unsafe { drv_result::memcpy_dtod_async(dst.device_ptr(), src.device_ptr(), n, b.stream().cu_stream()) }
            .map_err(|e| driver_error("cuMemcpyDtoDAsync", e))
    })?;
    Ok(Bandwidth::new(COPY_LABEL, 2.0 * n as f64, timing))
}

/// The AdaGrad update over `n` elements of `dtype`: reads parameter, state and gradient, writes
/// parameter and state (5 × n × element size bytes).
pub fn bench_adagrad(
    b: &Arc<CudaBackend>,
    dtype: DType,
    n: usize,
    which: UpdateKernel,
    warmup: usize,
    reps: usize,
) -> Result<Bandwidth> {
    let p = cuda::random(b, Distribution::Normal, dtype, n, 2)?;
    let s = cuda::full(b, dtype, n, 0.0)?;
    let g = cuda::random(b, Distribution::Normal, dtype, n, 3)?;
    let plan = ops::adagrad(
        dtype,
        p.device_ptr(),
        s.device_ptr(),
        g.device_ptr(),
        n,
        1e-3,
        1e-5,
        which,
        b.sm_count(),
    )?;
    let timing = time_median(b, warmup, reps, || b.launch(&plan))?;
    let label = adagrad_label(dtype, &plan.kernel);
    Ok(Bandwidth::new(label, 5.0 * (n * dtype.size_in_bytes()) as f64, timing))
}

/// Host-to-device copies of `bytes` from ordinary (pageable) memory, which the driver must stage
/// through its own pinned buffer, or from pinned (page-locked) memory, which the GPU reads
/// directly and asynchronously.
pub fn bench_host_to_device(
    b: &Arc<CudaBackend>,
    bytes: usize,
    pinned: bool,
    warmup: usize,
    reps: usize,
) -> Result<Bandwidth> {
    let mut dst = b.alloc_raw::<u8>(bytes)?;
    let stream = Arc::clone(b.stream());
    let timing = if pinned {
        // SAFETY: filled before use.
        let mut host = unsafe { b.context().alloc_pinned_with_flags::<u8>(bytes, 0) }
            .map_err(|e| driver_error("allocating pinned host memory", e))?;
        host.as_mut_slice()
            .map_err(|e| driver_error("mapping pinned memory", e))?
            .iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = i as u8);
        let t = time_median(b, warmup, reps, || {
            stream
                .memcpy_htod(&host, dst.slice_mut())
                .map_err(|e| driver_error("copying pinned memory to the device", e))
        })?;
        // The copies are asynchronous: wait before the pinned buffer is freed.
        b.synchronize()?;
        t
    } else {
        let host: Vec<u8> = (0..bytes).map(|i| i as u8).collect();
        time_median(b, warmup, reps, || {
            stream
                .memcpy_htod(&host, dst.slice_mut())
                .map_err(|e| driver_error("copying pageable memory to the device", e))
        })?
    };
    Ok(Bandwidth::new(
        if pinned {
            "host to device, pinned"
        } else {
            "host to device, pageable"
        },
        bytes as f64,
        timing,
    ))
}

/// The report `cuda_bench` writes and `.ci/gpu_summary.py` reads: the device, the sizes, each
/// matmul (with its datasheet peak and MFU when the device is in the table) and each bandwidth
/// (with its fraction of the device copy's, the first entry).
pub fn report_json(
    props: &DeviceProps,
    (b, d, k): (usize, usize, usize),
    (warmup, reps): (usize, usize),
    gemms: &[(GemmBench, Option<f64>)],
    bandwidths: &[Bandwidth],
) -> serde_json::Value {
    let copy = bandwidths.first().map_or(f64::NAN, |c| c.bytes_per_sec);
    serde_json::json!({
        "device": props.details(), "name": props.name, "sizes": {"B": b, "D": d, "K": k},
        "warmup": warmup, "reps": reps,
        "matmul": gemms.iter().map(|(g, peak)| serde_json::json!({"mode": g.mode, "route": g.route, "lt_choice": g.lt_choice, "m": g.m, "n": g.n, "k": g.k, "flops": g.flops,
            "median_s": g.timing.median_s, "min_s": g.timing.min_s, "max_s": g.timing.max_s, "flop_per_sec": g.flop_per_sec,
            "peak_flop_per_sec": peak, "mfu": peak.map(|pk| g.flop_per_sec / pk)})).collect::<Vec<_>>(),
        "bandwidth": bandwidths.iter().map(|b| serde_json::json!({"what": b.what, "bytes_per_rep": b.bytes_per_rep, "median_s": b.timing.median_s,
            "bytes_per_sec": b.bytes_per_sec, "fraction_of_copy": b.bytes_per_sec / copy})).collect::<Vec<_>>(),
    })
}

/// The label `bench_adagrad` gives a measurement (the summary script finds the fast kernel by it).
pub fn adagrad_label(dtype: DType, kernel: &str) -> String {
    format!("adagrad update, {} kernel `{kernel}`", dtype.name())
}
