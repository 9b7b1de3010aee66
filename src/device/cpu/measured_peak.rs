//! The CPU's peak floating-point throughput, measured on this host.
//!
//! A CPU has no datasheet figure we could look up reliably (clocks vary with load, cloud
//! machines hide their model), so the peak an MFU divides by is measured: every core runs a loop of
//! independent fused multiply-adds (enough chains to hide the instruction's latency, see
//! `fma_loops.rs`) on the instruction set the matmul runs with (float32: `gemm`'s kernel; bf16:
//! the instruction our bf16 kernel uses, AMX tile products where it runs on them), and the best of
//! several trials counts. Nothing the matmul does
//! can beat that loop, so an MFU against it is a real ratio ≤ 1. The textbook formula
//! (cores × lanes × 2 × clock) is computed alongside, with its assumptions, for comparison.

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::bf16_gemm::{self, Bf16Kernel};
use super::fma_loops::{Kernel, PORTABLE_LANES, PeakLoop, thread_cpu_time};
use super::isa::{self, CpuIsa};
use crate::device::math_mode::MathMode;

/// A measured peak and how it was obtained.
#[derive(Debug, Clone)]
pub struct MeasuredPeak {
    /// The loop that was timed.
    pub peak_loop: PeakLoop,
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

/// The loop whose peak an MFU for `mode` is computed against: the instruction set the matmul
/// actually runs with. float32 matmuls run on `gemm`'s kernel, which `CS336_CPU_ISA` cannot limit;
/// bf16 ones on the route our kernel takes (where that widens to float32, on `gemm` again).
pub fn matmul_loop(mode: MathMode) -> Result<PeakLoop, String> {
    match mode {
        MathMode::Fp32 => Ok(isa::f32_matmul_isa()),
        MathMode::Bf16 => match bf16_gemm::current_kernel().map_err(|e| e.to_string())? {
            Bf16Kernel::Amx => Ok(PeakLoop::AmxBf16),
            Bf16Kernel::Avx512Bf16 => Ok(PeakLoop::Avx512Bf16),
            // Without a bf16 dot-product instruction, or where it is the slower unit, bf16 data
            // is widened and multiplied on the fp32 units, so their peak is the bf16 peak too.
            Bf16Kernel::PortableF32 => Ok(isa::f32_matmul_isa()),
        },
        MathMode::Tf32 | MathMode::Fp16 => Err(format!(
            "no {} peak is measured on CPUs (no such matmul path here)",
            mode.name()
        )),
    }
}

/// The loop of the widest instruction our own code uses for `mode` at `level`: the level's own
/// peak, recorded beside the one MFU is computed against.
pub fn level_loop(mode: MathMode, level: CpuIsa) -> PeakLoop {
    match (mode, Bf16Kernel::best_within(level)) {
        (MathMode::Bf16, Bf16Kernel::Amx) => PeakLoop::AmxBf16,
        (MathMode::Bf16, Bf16Kernel::Avx512Bf16) => PeakLoop::Avx512Bf16,
        _ => level.fp32_loop(),
    }
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

fn measure_uncached(peak_loop: PeakLoop) -> Result<MeasuredPeak, String> {
    let kernel = peak_loop
        .kernel()
        .ok_or_else(|| format!("this CPU cannot run the {} loop", peak_loop.name()))?;
    let (instruction, flop_per_instruction) = (peak_loop.instruction(), peak_loop.flop_per_instruction());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Calibrate to about 60 ms per trial, then keep the best of several trials.
    let probe_iters = 20_000;
    let probe = run_threads(kernel, 1, probe_iters)
        .first()
        .map_or(1e-6, |d| d.as_secs_f64().max(1e-6));
    let iters = ((0.06 / probe) * probe_iters as f64).max(1000.0) as u64;
    let trials = 5;
    let flops_per_thread = iters as f64 * peak_loop.flop_per_round() as f64;
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
    let chains = match peak_loop {
        PeakLoop::PortableFma => format!("{} chains of {PORTABLE_LANES} lanes of", peak_loop.chains()),
        _ => format!("{}", peak_loop.chains()),
    };
    Ok(MeasuredPeak {
        peak_loop,
        flop_per_sec: best,
        threads,
        instruction,
        flop_per_instruction,
        method: format!(
            "measured ({name} loop): rounds of {chains} {instruction} into independent accumulators, on {threads} threads at once, {iters} rounds, timed by {clock}, best of {trials} trials",
            name = peak_loop.name()
        ),
    })
}

type Peaks = [Option<Result<MeasuredPeak, String>>; PeakLoop::ALL.len()];

/// Each loop's peak, measured once per process unless a disturbed section's retry forgets it.
static PEAKS: Mutex<Peaks> = Mutex::new([const { None }; PeakLoop::ALL.len()]);

thread_local! {
    /// Whether this thread's section read a peak since the last `take_read`: an MFU computed
    /// against a peak measured on a busy machine is wrong too, so its section is re-measured with it.
    static READ: Cell<bool> = const { Cell::new(false) };
}

fn slot(peak_loop: PeakLoop) -> usize {
    PeakLoop::ALL.iter().position(|&l| l == peak_loop).unwrap_or(0)
}

/// The cache, usable even after a thread panicked holding it (its entries are whole values).
fn peaks() -> MutexGuard<'static, Peaks> {
    PEAKS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The measured peak of `peak_loop`, measured once per process.
pub fn measure(peak_loop: PeakLoop) -> Result<MeasuredPeak, String> {
    READ.with(|r| r.set(true));
    peaks()[slot(peak_loop)]
        .get_or_insert_with(|| measure_uncached(peak_loop))
        .clone()
}

/// Whether this thread read a measured peak since the last call.
pub fn take_read() -> bool {
    READ.with(Cell::take)
}

/// Forgets every measured peak, so the next read measures again (a retry of a disturbed section).
pub fn forget() {
    *peaks() = [const { None }; PeakLoop::ALL.len()];
}

/// The peaks measured so far, by loop.
pub fn measured_so_far() -> Vec<(PeakLoop, f64)> {
    PeakLoop::ALL
        .iter()
        .zip(peaks().iter())
        .filter_map(|(&l, p)| Some((l, p.as_ref()?.as_ref().ok()?.flop_per_sec)))
        .collect()
}

/// `peak_loop`'s peak measured afresh, leaving the one the run's sections used in place: the
/// check after the last section that the machine ran as fast at the end as when it was measured.
pub fn measure_again(peak_loop: PeakLoop) -> Result<f64, String> {
    measure_uncached(peak_loop).map(|m| m.flop_per_sec)
}

/// The measured peak an MFU for `mode` is computed against: that of [`matmul_loop`].
pub fn measured(mode: MathMode) -> Result<MeasuredPeak, String> {
    measure(matmul_loop(mode)?)
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
/// with two 512-bit FMA units manage two), which is why the measured loop is the peak.
/// For float32 the loop is the matrix library's; for bfloat16 the CPU's own bfloat16
/// instruction at this level, whichever unit the products took (its peak is the one to derive).
pub fn formula(mode: MathMode) -> Result<FormulaPeak, String> {
    let peak_loop = match mode {
        MathMode::Bf16 => level_loop(mode, isa::current().map_err(|e| e.to_string())?),
        _ => matmul_loop(mode)?,
    };
    let (instruction, flop_per_instruction) = (peak_loop.instruction(), peak_loop.flop_per_instruction());
    let ipc = peak_loop.instructions_per_cycle();
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
