//! Compute accounting: FLOPs, FLOP/s, and what hardware promises.

use serde_json::json;

use super::{SectionCtx, record};
use crate::device::peaks::{self, MathMode, PromisedPeak};
use crate::device::{Device, F32Matmul, cpu};
use crate::error::Result;
use crate::flops::FlopCounter;
use crate::tensor::{DType, Tensor};
use crate::timing::{self, Budget, Clock, Contender, Timing};
use crate::trace::Unit;

/// A FLOP is one floating-point operation; FLOP/s is a speed. Training budgets are totals, chips
/// are rated in speed.
pub fn tensor_operations_flops(cx: &mut SectionCtx) -> Result<()> {
    // Reference points (totals): GPT-3 3.14e23, GPT-4 about 2e25, and the 1e26 FLOP line above
    // which the 2023 US executive order required reporting.
    cx.record("gpt3_flops", 3.14e23, Unit::Flop)?;
    cx.record("gpt4_flops", 2e25, Unit::Flop)?;
    cx.record("reporting_threshold_flops", 1e26, Unit::Flop)?;
    // Speeds, from datasheets (dense): A100 bf16 and H100 SXM bf16.
    let a100 = peaks::datasheet_for("A100").map_or(f64::NAN, |p| p.bf16);
    cx.record_untimed("a100_flop_per_sec", a100, Unit::FlopPerSec)?;
    cx.record_untimed("h100_flop_per_sec", peaks::H100_SXM_BF16_DENSE, Unit::FlopPerSec)?;

    // 8 H100s running flat out for one week (the original calls it two weeks but computes one).
    let num_h100s = 8;
    record!(cx, num_h100s, Unit::Count)?;
    let seconds = 60.0 * 60.0 * 24.0 * 7.0;
    cx.record_untimed("one_week_seconds", seconds, Unit::Seconds)?;
    let total_flops = num_h100s as f64 * seconds * peaks::H100_SXM_BF16_DENSE;
    record!(cx, total_flops, Unit::Flop)?;

    // A linear model y = x @ w: B points of dimension D mapped to K outputs.
    let (b, d, k) = linear_model_sizes(&cx.device);
    cx.record("B", b, Unit::Count)?;
    cx.record("D", d, Unit::Count)?;
    cx.record("K", k, Unit::Count)?;
    // Random data, never zeros (a GPU multiplies zeros faster than real data), made where it is
    // used: on a GPU the 2 GiB x is drawn on the device.
    let x = Tensor::randn_on(&[b, d], DType::F32, &cx.device, &mut cx.rng)?;
    let w = Tensor::randn_on(&[d, k], DType::F32, &cx.device, &mut cx.rng)?;
    // One multiply and one add for each (i, j, k) triple.
    let flop_per_multiply_add = 2;
    record!(cx, flop_per_multiply_add, Unit::Flop)?;
    let actual_num_flops = flop_per_multiply_add * b * d * k;
    record!(cx, actual_num_flops, Unit::Flop)?;
    let counter = FlopCounter::start();
    let y = x.matmul(&w)?;
    cx.record("counted_num_flops", counter.finish().total(), Unit::Flop)?;
    cx.record("y_shape", y.shape().to_vec(), Unit::None)?;

    // Wall-clock time: warm up, then repeat for a fixed time (1 s each: the chapter's headline
    // numbers, so three times the lecture's usual 0.3 s), in blocks that take
    // turns between the precisions so a busy moment of the machine slows all of them; the median
    // and the spread. MFU = what we achieved / what the hardware promises (dense, for this dtype).
    // The float32 row is pedantic on a GPU: float32 in every step, the order of the reductions
    // included. On a GPU two more: cuBLAS's default float32 (what PyTorch's float32 matmul runs:
    // float32 arithmetic, but the library may split and reorder the reductions), and the same
    // float32 tensors on the tensor cores as TF32 (inputs rounded to 10-bit mantissas, float32
    // accumulation: what `torch.backends.cuda.matmul.allow_tf32` allows). And bfloat16: half the
    // bytes, and on most hardware a faster unit.
    let (x16, w16) = (x.to_dtype(DType::BF16)?, w.to_dtype(DType::BF16)?);
    let mut runs = vec![
        ("", MathMode::Fp32, F32Matmul::Pedantic, &x, &w),
        ("bf16_", MathMode::Bf16, F32Matmul::Default, &x16, &w16),
    ];
    if cx.device.is_cuda() {
        runs.push(("fp32_default_", MathMode::Fp32, F32Matmul::Default, &x, &w));
        runs.push(("tf32_", MathMode::Tf32, F32Matmul::Tf32, &x, &w));
    }
    let products: Vec<_> = runs.iter().map(|&(_, _, f32_mode, a, b)| (f32_mode, a, b)).collect();
    let headline = Budget {
        min_time: std::time::Duration::from_secs(1),
        ..Budget::lecture()
    };
    let times = time_in_turns(&cx.device, headline, &products)?;
    for (&(prefix, mode, _, _, _), time) in runs.iter().zip(&times) {
        record_speed(cx, prefix, mode, time, actual_num_flops)?;
    }
    // What the bfloat16 product hands back, and whether its partial sums may have been added in
    // less than float32 precision on the way.
    cx.record("bf16_output_dtype", x16.matmul(&w16)?.dtype().name(), Unit::None)?;
    let reduced = cx.device.bf16_matmul_reduced_precision_reduction();
    cx.record("bf16_reduced_precision_reduction", reduced, Unit::None)?;
    if cx.device.is_cpu() {
        // Which instructions did the work. Our own code (the bfloat16 kernel, the peak loops)
        // goes up to the level CS336_CPU_ISA allows, else the best this CPU has; the gemm crate
        // picks its own float32 kernel, so each MFU above is against the loop of the instruction
        // set its matmul ran with.
        let (level, set_by) = cpu::isa::current_with_source()?;
        cx.record("cpu_isa", level.name(), Unit::None)?;
        cx.record("cpu_isa_set_by", isa_set_by(set_by), Unit::None)?;
        cx.record("f32_matmul_isa", cpu::isa::f32_matmul_isa().name(), Unit::None)?;
        // AMX tiles, AVX512_BF16 dot products, or a widening to float32 (then bfloat16 cannot
        // beat float32).
        cx.record("bf16_matmul_isa", cpu::bf16_matmul_isa(), Unit::None)?;
        // The level's own peaks, beside the ones MFU is computed against.
        cx.record_timed("cpu_isa_peaks", level_peaks_json(level), Unit::None)?;
        // The textbook peak for comparison with the measured one.
        cx.record("cpu_peak_formula", cpu_formula_json(), Unit::None)?;
    }

    // Throughput against size: small products cannot keep the units busy.
    let (sweep, sweep_peaks) = throughput_sweep(cx)?;
    cx.record_timed("throughput_sweep", sweep, Unit::None)?;
    // On a CPU the peaks are measured (a timed FMA loop).
    record!(cx, timed sweep_peaks, Unit::None)?;
    Ok(())
}

/// The lecture's sizes on a GPU; on a CPU sizes that keep the run short.
pub(crate) fn linear_model_sizes(device: &Device) -> (usize, usize, usize) {
    if device.is_cpu() {
        (1024, 256, 64)
    } else {
        (16384, 32768, 8192)
    }
}

/// Records a timed product under the lecture's names, prefixed by precision ("" for float32,
/// "tf32_", "bf16_"): time and spread, FLOP/s, and the promised peak with the MFU against it (or
/// why there is none).
#[track_caller]
fn record_speed(cx: &mut SectionCtx, prefix: &str, mode: MathMode, timing: &Timing, flops: usize) -> Result<()> {
    cx.record(&format!("{prefix}actual_time"), timing.median_s, Unit::Seconds)?;
    cx.record_timed(&format!("{prefix}actual_time_spread"), timing.to_json(), Unit::None)?;
    let achieved = timing.flop_per_sec(flops as u64);
    cx.record(&format!("{prefix}actual_flop_per_sec"), achieved, Unit::FlopPerSec)?;
    match peaks::promised(&cx.device, mode) {
        Ok(peak) => {
            cx.record(
                &format!("{prefix}promised_flop_per_sec"),
                peak.flop_per_sec,
                Unit::FlopPerSec,
            )?;
            cx.record(&format!("{prefix}promised_peak_source"), peak.how.clone(), Unit::None)?;
            if let Some(name) = peak.peak_loop {
                cx.record(&format!("{prefix}promised_peak_loop"), name, Unit::None)?;
            }
            cx.record_timed(&format!("{prefix}mfu"), peak.mfu(achieved), Unit::Ratio)
        }
        Err(why) => cx.record(&format!("{prefix}mfu_unavailable_reason"), why, Unit::None),
    }
}

/// Times a·b for each (float32 matmul mode, a, b), in turns (each mode switched on for its own
/// calls only; it only matters on a GPU).
fn time_in_turns(device: &Device, budget: Budget, products: &[(F32Matmul, &Tensor, &Tensor)]) -> Result<Vec<Timing>> {
    let clock = Clock::for_device(device);
    let mut contenders: Vec<_> = products
        .iter()
        .map(|&(mode, a, b)| {
            timing::contender(clock.clone(), move || {
                let was = device.set_f32_matmul(mode);
                let product = a.matmul(b).map(drop);
                device.set_f32_matmul(was);
                product
            })
        })
        .collect();
    let mut turns: Vec<Contender<'_>> = contenders.iter_mut().map(|c| c as Contender<'_>).collect();
    timing::in_turns(budget, &mut turns)
}

fn cpu_formula_json() -> serde_json::Value {
    let one = |mode: MathMode| match cpu::peak::formula(mode) {
        Ok(f) => {
            json!({"flop_per_sec": f.flop_per_sec, "physical_cores": f.physical_cores, "flop_per_instruction": f.flop_per_instruction,
                        "instructions_per_cycle": f.instructions_per_cycle, "clock_hz": f.clock_hz, "assumptions": f.assumptions})
        }
        Err(why) => json!({"unavailable": why}),
    };
    json!({"fp32": one(MathMode::Fp32), "bf16": one(MathMode::Bf16)})
}

fn isa_set_by(source: cpu::isa::Source) -> &'static str {
    match source {
        cpu::isa::Source::Detected => "detected: the best this CPU has",
        cpu::isa::Source::Env => "CS336_CPU_ISA",
        cpu::isa::Source::Override => "a test (cpu::isa::with_isa)",
    }
}

/// The peaks of the loops our own code runs at `level`, for float32 and bf16, named.
fn level_peaks_json(level: cpu::isa::CpuIsa) -> serde_json::Value {
    let one = |mode: MathMode| {
        let peak_loop = cpu::peak::level_loop(mode, level);
        match cpu::peak::measure(peak_loop) {
            Ok(m) => json!({"loop": peak_loop.name(), "flop_per_sec": m.flop_per_sec, "how": m.method}),
            Err(why) => json!({"loop": peak_loop.name(), "unavailable": why}),
        }
    };
    json!({"fp32": one(MathMode::Fp32), "bf16": one(MathMode::Bf16)})
}

fn peak_json(peak: &std::result::Result<PromisedPeak, String>) -> serde_json::Value {
    match peak {
        Ok(p) => {
            let mut peak = json!({"flop_per_sec": p.flop_per_sec, "kind": p.kind, "how": p.how});
            if let Some(name) = p.peak_loop {
                peak["loop"] = name.into();
            }
            peak
        }
        Err(why) => json!({"unavailable": why}),
    }
}

/// Square n×n·n×n products in fp32 and bf16 (and tf32 on a GPU): sizes, median time, FLOP/s and
/// MFU, plus the promised peaks to draw as lines.
fn throughput_sweep(cx: &mut SectionCtx) -> Result<(serde_json::Value, serde_json::Value)> {
    let sizes: &[usize] = if cx.device.is_cpu() {
        &[64, 128, 256, 512, 1024]
    } else {
        &[256, 512, 1024, 2048, 4096, 8192, 16384]
    };
    let mut modes = vec![MathMode::Fp32, MathMode::Bf16];
    if cx.device.is_cuda() {
        modes.push(MathMode::Tf32);
    }
    let peaks: Vec<_> = modes.iter().map(|&m| peaks::promised(&cx.device, m)).collect();
    let mut points = Vec::new();
    for &n in sizes {
        let a = Tensor::randn_on(&[n, n], DType::F32, &cx.device, &mut cx.rng)?;
        let b = Tensor::randn_on(&[n, n], DType::F32, &cx.device, &mut cx.rng)?;
        let (a16, b16) = (a.to_dtype(DType::BF16)?, b.to_dtype(DType::BF16)?);
        let products: Vec<_> = modes
            .iter()
            .map(|&m| match m {
                MathMode::Bf16 => (F32Matmul::Pedantic, &a16, &b16),
                MathMode::Tf32 => (F32Matmul::Tf32, &a, &b),
                _ => (F32Matmul::Pedantic, &a, &b),
            })
            .collect();
        let times = time_in_turns(&cx.device, Budget::lecture(), &products)?;
        for ((mode, peak), t) in modes.iter().zip(&peaks).zip(&times) {
            let flops = 2 * n * n * n;
            let fps = t.flop_per_sec(flops as u64);
            let mfu = peak.as_ref().ok().map(|p| p.mfu(fps));
            points.push(json!({"dtype": mode.name(), "n": n, "flops": flops, "median_s": t.median_s, "min_s": t.min_s, "q1_s": t.q1_s, "q3_s": t.q3_s, "max_s": t.max_s, "reps": t.reps, "flop_per_sec": fps, "mfu": mfu}));
        }
    }
    let peak_lines: serde_json::Map<String, serde_json::Value> = modes
        .iter()
        .zip(&peaks)
        .map(|(m, p)| (m.name().to_string(), peak_json(p)))
        .collect();
    Ok((serde_json::Value::Array(points), serde_json::Value::Object(peak_lines)))
}
