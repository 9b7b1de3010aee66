//! `cuda_bench`: the GPU measurements the check script compares against PyTorch, in one process:
//! cuBLAS matmul throughput in FP32, TF32 and BF16 (and BF16 with an FP32 output) at the lecture's
//! sizes, the device copy bandwidth, the AdaGrad update kernel's bandwidth (fast and reference
//! kernels), and host-to-device bandwidth from pageable and pinned memory. Prints a table and
//! writes the numbers as JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Parser;
use cs336::outln;

use cs336::bench::cuda::{self as gpu_bench, Bandwidth, GemmBench};
use cs336::device::cuda::ops::UpdateKernel;
use cs336::device::cuda::{self, GemmMode, GemmRoute};
use cs336::device::peaks::{self, MathMode};
use cs336::tensor::DType;

#[derive(Parser)]
#[command(about = "CUDA matmul and bandwidth measurements (needs a GPU)")]
struct Args {
    /// x: [B, D] times w: [D, K] (the lecture's linear model).
    #[arg(long, default_value_t = 16384)]
    b: usize,
    #[arg(long, default_value_t = 32768)]
    d: usize,
    #[arg(long, default_value_t = 8192)]
    k: usize,
    /// Untimed runs before timing.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Timed runs (the median is reported).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Elements of each AdaGrad array (f32: 4 bytes each; 3 arrays).
    #[arg(long, default_value_t = 1 << 28)]
    adagrad_elements: usize,
    /// Bytes for the host-to-device copies.
    #[arg(long, default_value_t = 1 << 28)]
    h2d_bytes: usize,
    /// Write the measurements here as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn main() -> ExitCode {
    cs336::console::exit(run())
}

fn mode_peak(name: &str, mode: GemmMode) -> Option<f64> {
    let math = match mode {
        GemmMode::Fp32 | GemmMode::Fp32Default => MathMode::Fp32,
        GemmMode::Tf32 => MathMode::Tf32,
        GemmMode::Bf16 | GemmMode::Bf16F32Out => MathMode::Bf16,
        GemmMode::Fp16 => MathMode::Fp16,
    };
    peaks::datasheet_for(name).map(|p| p.flop_per_sec(math))
}

fn run() -> Result<()> {
    let args = Args::parse();
    let gpu = match cuda::open(0) {
        Ok(g) => g,
        Err(why) => bail!("no usable GPU: {why}"),
    };
    let p = gpu.props().clone();
    outln!(
        "{} ({} SMs, {:.1} GiB, compute capability {}.{}, driver {} / CUDA {}, NVRTC {}, cuBLAS {}); kernels compiled in {:.1} s",
        p.name,
        p.sm_count,
        p.total_memory as f64 / (1u64 << 30) as f64,
        p.compute_capability.0,
        p.compute_capability.1,
        p.driver_version.as_deref().unwrap_or("?"),
        p.cuda_driver_api,
        p.nvrtc_version,
        p.cublas_version.as_deref().unwrap_or("?"),
        gpu.compile_seconds
    )?;

    let (m, n, k) = (args.b, args.k, args.d);
    let mut gemms: Vec<(GemmBench, Option<f64>)> = Vec::new();
    // bfloat16 on both libraries: cuBLASLt (the lecture's route, with its heuristic search and
    // workspace) and plain cuBLAS, so the table shows which reaches the peak.
    for (mode, route) in [
        (GemmMode::Fp32, GemmRoute::Cublas),
        (GemmMode::Fp32Default, GemmRoute::Cublas),
        (GemmMode::Tf32, GemmRoute::Cublas),
        (GemmMode::Bf16, GemmRoute::CublasLt),
        (GemmMode::Bf16, GemmRoute::Cublas),
        (GemmMode::Bf16F32Out, GemmRoute::CublasLt),
    ] {
        // FP32 is ~15x slower than BF16: fewer repetitions keep the run short.
        let reps = if mode.input_dtype() == DType::F32 && mode != GemmMode::Tf32 {
            args.reps.min(5)
        } else {
            args.reps
        };
        let bench = gpu_bench::bench_gemm(&gpu.0, (mode, route), (m, n, k), args.warmup, reps, 0)
            .with_context(|| format!("{} matmul on {}", mode.name(), route.name()))?;
        let peak = mode_peak(&p.name, mode);
        outln!(
            "  matmul {:<13} {:<9} {m}x{k} @ {k}x{n}: {:>9.3} ms  {:>7.1} TFLOP/s  MFU {}",
            mode.name(),
            route.name(),
            bench.timing.median_s * 1e3,
            bench.flop_per_sec / 1e12,
            peak.map_or("n/a".to_string(), |pk| format!("{:.3}", bench.flop_per_sec / pk))
        )?;
        gemms.push((bench, peak));
    }

    let mut bandwidths: Vec<Bandwidth> = Vec::new();
    bandwidths
        .push(gpu_bench::bench_copy(&gpu.0, args.adagrad_elements * 4, args.warmup, args.reps).context("device copy")?);
    for which in [UpdateKernel::Fast, UpdateKernel::Reference] {
        bandwidths.push(
            gpu_bench::bench_adagrad(&gpu.0, DType::F32, args.adagrad_elements, which, args.warmup, args.reps)
                .context("adagrad")?,
        );
    }
    bandwidths.push(
        gpu_bench::bench_adagrad(
            &gpu.0,
            DType::BF16,
            args.adagrad_elements,
            UpdateKernel::Fast,
            args.warmup,
            args.reps,
        )
        .context("adagrad bf16")?,
    );
    for pinned in [false, true] {
        bandwidths.push(
            gpu_bench::bench_host_to_device(&gpu.0, args.h2d_bytes, pinned, 1, args.reps.min(5))
                .context("host to device")?,
        );
    }
    let copy = bandwidths[0].bytes_per_sec;
    for bw in &bandwidths {
        outln!(
            "  {:<48} {:>8.1} GB/s  ({:.2} of device copy)",
            bw.what,
            bw.bytes_per_sec / 1e9,
            bw.bytes_per_sec / copy
        )?;
    }

    if let Some(path) = args.json {
        let doc = gpu_bench::report_json(
            &p,
            (args.b, args.d, args.k),
            (args.warmup, args.reps),
            &gemms,
            &bandwidths,
        );
        let text = serde_json::to_string_pretty(&doc)?;
        cs336::atomic_file::write(&path, text.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
        outln!("Wrote {}", path.display())?;
    }
    Ok(())
}
