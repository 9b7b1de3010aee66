//! The CPU's peak floating-point throughput, measured on this host.
//!
//! A CPU has no datasheet figure we could look up reliably (clocks vary with load, cloud
//! machines hide their model), so the "promised" peak is measured: every core runs a loop of
//! independent fused multiply-adds (16 chains, enough to hide the instruction's latency) on the
//! widest vector unit present (for bf16: the instruction the bf16 matmul uses, AMX tile products
//! where it runs on them), and the best of several trials counts. Nothing the matmul does
//! can beat that loop, so an MFU against it is a real ratio ≤ 1. The textbook formula
//! (cores × lanes × 2 × clock) is computed alongside, with its assumptions, for comparison.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::device::peaks::MathMode;

/// A measured peak and how it was obtained.
#[derive(Debug, Clone)]
pub struct MeasuredPeak {
    pub flop_per_sec: f64,
    pub threads: usize,
    /// The instruction in the loop, e.g. "vfmadd231ps zmm (AVX-512F)".
    pub instruction: &'static str,
    pub flop_per_instruction: u64,
    /// One sentence for the trace.
    pub method: String,
}

/// The textbook peak: cores × FLOPs per instruction × instructions per cycle × clock.
#[derive(Debug, Clone)]
pub struct FormulaPeak {
    pub physical_cores: usize,
    pub flop_per_instruction: u64,
    pub instructions_per_cycle: f64,
    pub clock_hz: f64,
    pub flop_per_sec: f64,
    pub assumptions: String,
}

/// The loop kernels: each runs `iters` rounds of `CHAINS` independent vector instructions.
#[cfg(target_arch = "x86_64")]
mod kernels {
    use std::arch::x86_64::*;

    pub const CHAINS: usize = 16;

    /// Opaque to the optimiser, so the loops cannot be folded (1.0·0.999 + 0.001 is a fixed
    /// point the compiler would otherwise see through).
    fn opaque(x: f32) -> f32 {
        std::hint::black_box(x)
    }

    #[target_feature(enable = "avx512f")]
    pub fn fma_avx512(iters: u64) -> f32 {
        let (a, b) = (_mm512_set1_ps(opaque(0.999)), _mm512_set1_ps(opaque(0.001)));
        let mut acc = [_mm512_set1_ps(opaque(1.0)); CHAINS];
        for _ in 0..iters {
            for c in acc.iter_mut() {
                *c = _mm512_fmadd_ps(*c, a, b);
            }
        }
        let mut sum = _mm512_setzero_ps();
        for c in acc {
            sum = _mm512_add_ps(sum, c);
        }
        _mm512_reduce_add_ps(sum)
    }

    #[target_feature(enable = "avx512bf16,avx512f")]
    pub fn dpbf16_avx512(iters: u64) -> f32 {
        let half = _mm512_set1_ps(opaque(0.5));
        let (a, b) = (_mm512_cvtne2ps_pbh(half, half), _mm512_cvtne2ps_pbh(half, half));
        let mut acc = [_mm512_set1_ps(opaque(0.0)); CHAINS];
        for _ in 0..iters {
            for c in acc.iter_mut() {
                *c = _mm512_dpbf16_ps(*c, a, b);
            }
        }
        let mut sum = _mm512_setzero_ps();
        for c in acc {
            sum = _mm512_add_ps(sum, c);
        }
        _mm512_reduce_add_ps(sum)
    }

    #[target_feature(enable = "avx2,fma")]
    pub fn fma_avx2(iters: u64) -> f32 {
        let (a, b) = (_mm256_set1_ps(opaque(0.999)), _mm256_set1_ps(opaque(0.001)));
        let mut acc = [_mm256_set1_ps(opaque(1.0)); CHAINS];
        for _ in 0..iters {
            for c in acc.iter_mut() {
                *c = _mm256_fmadd_ps(*c, a, b);
            }
        }
        let mut out = [0f32; 8];
        let mut sum = _mm256_setzero_ps();
        for c in acc {
            sum = _mm256_add_ps(sum, c);
        }
        // SAFETY: `out` has room for 8 floats; storeu has no alignment requirement.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), sum) };
        out.iter().sum()
    }
}

/// The widest loop this CPU can run for `mode`: the kernel, the instruction's name, FLOPs per
/// instruction and the textbook issue rate (instructions per cycle per core) for the formula.
type Kernel = fn(u64) -> f32;

#[derive(Clone, Copy)]
struct Loop {
    kernel: Kernel,
    instruction: &'static str,
    flop_per_instruction: u64,
    per_cycle: f64,
}

#[cfg(target_arch = "x86_64")]
fn kernel_for(mode: MathMode) -> Result<Loop, String> {
    use super::bf16_gemm::Bf16Kernel;
    use std::arch::is_x86_feature_detected as has;
    let with = |kernel: Kernel, instruction, flop_per_instruction| Loop {
        kernel,
        instruction,
        flop_per_instruction,
        per_cycle: 1.0,
    };
    // SAFETY (each closure): the feature the kernel is compiled for was detected at run time.
    let fp32 = || -> Result<Loop, String> {
        if has!("avx512f") {
            Ok(with(
                |n| unsafe { kernels::fma_avx512(n) },
                "vfmadd231ps zmm (AVX-512F, 16 fp32 lanes)",
                32,
            ))
        } else if has!("avx2") && has!("fma") {
            Ok(with(
                |n| unsafe { kernels::fma_avx2(n) },
                "vfmadd231ps ymm (AVX2+FMA, 8 fp32 lanes)",
                16,
            ))
        } else {
            Err("this CPU has neither AVX-512F nor AVX2+FMA; no FMA loop is implemented for it".into())
        }
    };
    match mode {
        MathMode::Fp32 => fp32(),
        // The peak of the instruction the bf16 matmul uses: AMX tiles where it runs on them.
        MathMode::Bf16 if Bf16Kernel::detect() == Bf16Kernel::Amx => Ok(Loop {
            kernel: |n| super::bf16_gemm::amx_peak_loop(n).unwrap_or(f32::NAN),
            instruction: "tdpbf16ps (AMX-BF16, a 16×32 by 32×16 bf16 tile product into 16×16 fp32 sums)",
            flop_per_instruction: 16 * 16 * 32 * 2,
            // One tile product every 16 cycles (Intel's optimisation manual, Sapphire Rapids).
            per_cycle: 1.0 / 16.0,
        }),
        MathMode::Bf16 if has!("avx512bf16") && has!("avx512f") => Ok(with(
            |n| unsafe { kernels::dpbf16_avx512(n) },
            "vdpbf16ps zmm (AVX512_BF16, 32 bf16 pairs into 16 fp32 lanes)",
            64,
        )),
        // Without a bf16 dot-product instruction, bf16 data is widened and multiplied on the fp32
        // units, so their peak is the bf16 peak too.
        MathMode::Bf16 => fp32(),
        MathMode::Tf32 | MathMode::Fp16 => Err(format!(
            "no {} peak is measured on CPUs (no such matmul path here)",
            mode.name()
        )),
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn kernel_for(mode: MathMode) -> Result<Loop, String> {
    Err(format!(
        "no FMA loop is implemented for {} on {}",
        mode.name(),
        std::env::consts::ARCH
    ))
}

#[cfg(target_arch = "x86_64")]
const CHAINS: u64 = kernels::CHAINS as u64;
#[cfg(not(target_arch = "x86_64"))]
const CHAINS: u64 = 16;

/// CPU time this thread has run for: time-slicing by other processes does not count, so a
/// trial on a busy machine still measures what a core does while it runs our loop.
#[cfg(unix)]
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill in.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(not(unix))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

/// Runs `kernel` on `threads` threads at once; returns each thread's running time (CPU time where
/// the OS reports it, else wall time).
fn run_threads(kernel: Kernel, threads: usize, iters: u64) -> Vec<Duration> {
    let barrier = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let (wall, cpu) = (Instant::now(), thread_cpu_time());
                    std::hint::black_box(kernel(std::hint::black_box(iters)));
                    match (cpu, thread_cpu_time()) {
                        (Some(a), Some(b)) => b.saturating_sub(a),
                        _ => wall.elapsed(),
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    })
}

fn measure_uncached(mode: MathMode) -> Result<MeasuredPeak, String> {
    let Loop {
        kernel,
        instruction,
        flop_per_instruction,
        ..
    } = kernel_for(mode)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Calibrate to about 60 ms per trial, then keep the best of several trials.
    let probe_iters = 20_000;
    let probe = run_threads(kernel, 1, probe_iters)
        .first()
        .map_or(1e-6, |d| d.as_secs_f64().max(1e-6));
    let iters = ((0.06 / probe) * probe_iters as f64).max(1000.0) as u64;
    let trials = 5;
    let flops_per_thread = iters as f64 * CHAINS as f64 * flop_per_instruction as f64;
    // Every thread's own rate (FLOPs over its CPU time), summed: all cores' peak. Two threads
    // sharing one core (SMT siblings) each see half the rate, so they add up to one core's.
    let total = |times: Vec<Duration>| {
        times
            .iter()
            .map(|t| flops_per_thread / t.as_secs_f64().max(1e-9))
            .sum::<f64>()
    };
    let best = (0..trials)
        .map(|_| total(run_threads(kernel, threads, iters)))
        .fold(0.0, f64::max);
    if !(best.is_finite() && best > 0.0) {
        return Err("the FMA loop took no measurable time".into());
    }
    let clock = if cfg!(unix) {
        "each thread's CPU time"
    } else {
        "wall time"
    };
    Ok(MeasuredPeak {
        flop_per_sec: best,
        threads,
        instruction,
        flop_per_instruction,
        method: format!(
            "measured: rounds of {CHAINS} {instruction} into independent accumulators, on {threads} threads at once, {iters} rounds, timed by {clock}, best of {trials} trials"
        ),
    })
}

/// The measured peak for `mode`, measured once per process.
pub fn measured(mode: MathMode) -> Result<MeasuredPeak, String> {
    static FP32: OnceLock<Result<MeasuredPeak, String>> = OnceLock::new();
    static BF16: OnceLock<Result<MeasuredPeak, String>> = OnceLock::new();
    match mode {
        MathMode::Fp32 => FP32.get_or_init(|| measure_uncached(mode)).clone(),
        MathMode::Bf16 => BF16.get_or_init(|| measure_uncached(mode)).clone(),
        other => measure_uncached(other),
    }
}

/// Physical cores (distinct physical id / core id pairs in /proc/cpuinfo), else logical ones.
fn physical_cores() -> usize {
    let logical = std::thread::available_parallelism().map_or(1, |n| n.get());
    let Ok(text) = std::fs::read_to_string("/proc/cpuinfo") else {
        return logical;
    };
    let mut cores = std::collections::BTreeSet::new();
    let (mut package, mut core) = (None, None);
    for line in text.lines().chain(std::iter::once("")) {
        match line.split_once(':').map(|(k, v)| (k.trim(), v.trim())) {
            Some(("physical id", v)) => package = Some(v.to_string()),
            Some(("core id", v)) => core = Some(v.to_string()),
            _ if line.trim().is_empty() => {
                if let (Some(p), Some(c)) = (package.take(), core.take()) {
                    cores.insert((p, c));
                }
            }
            _ => {}
        }
    }
    if cores.is_empty() {
        logical
    } else {
        cores.len().min(logical)
    }
}

/// The clock /proc/cpuinfo reports ("cpu MHz"): the current frequency, which under a hypervisor
/// is usually the nominal one, not the boost clock.
fn clock_hz() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "cpu MHz")
            .then(|| v.trim().parse::<f64>().ok().map(|mhz| mhz * 1e6))
            .flatten()
    })
}

/// cores × FLOPs per instruction × instructions per cycle × clock, with the textbook issue rate:
/// one vector instruction per cycle, one AMX tile product per 16 cycles. The issue rate is an
/// assumption (AMD Zen 4 runs one 512-bit FMA per cycle on two 256-bit pipes; Intel server cores
/// with two 512-bit FMA units manage two), which is why the measured loop is the promised peak.
pub fn formula(mode: MathMode) -> Result<FormulaPeak, String> {
    let Loop {
        instruction,
        flop_per_instruction,
        per_cycle: ipc,
        ..
    } = kernel_for(mode)?;
    let clock = clock_hz().ok_or("no clock in /proc/cpuinfo")?;
    let cores = physical_cores();
    Ok(FormulaPeak {
        physical_cores: cores,
        flop_per_instruction,
        instructions_per_cycle: ipc,
        clock_hz: clock,
        flop_per_sec: cores as f64 * flop_per_instruction as f64 * ipc * clock,
        assumptions: format!(
            "{cores} physical cores × {flop_per_instruction} FLOP per {instruction} × {ipc} per cycle × {:.0} MHz (cpu MHz from /proc/cpuinfo)",
            clock / 1e6
        ),
    })
}
