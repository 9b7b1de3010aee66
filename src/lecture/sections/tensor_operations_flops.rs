//! Compute accounting: FLOPs, FLOP/s, and what hardware promises.

use serde_json::json;

use crate::device::cuda::GemmRoute;
use crate::device::peaks::{self, MathMode, Peak};
use crate::device::{Device, F32Matmul, cpu};
use crate::error::Result;
use crate::flops::FlopCounter;
use crate::lecture::givens::given;
use crate::lecture::what_if::Cost;
use crate::lecture::{SectionCtx, check, record};
use crate::tensor::{DType, Tensor};
use crate::timing::{self, Budget, Timing};
use crate::trace::Kind;

/// A FLOP is one floating-point operation; FLOP/s is a speed. Training budgets are totals, chips
/// are rated in speed.
pub fn tensor_operations_flops(cx: &mut SectionCtx) -> Result<()> {
    // Reference points (totals): GPT-3 3.14e23, GPT-4 about 2e25, the 1e26 FLOP line above
    // which the 2023 US executive order required reporting, and the EU AI Act's 1e25 FLOP line
    // (still in force) above which a model counts as posing systemic risk.
    record!(cx, given gpt3_flops = 3.14e23, flop)?;
    record!(cx, given gpt4_flops = 2e25, flop)?;
    record!(cx, given reporting_threshold_flops = 1e26, flop)?;
    record!(cx, given eu_ai_act_threshold_flops = 1e25, flop)?;
    // Speeds, from datasheets (dense): A100 bf16 and H100 SXM bf16.
    let a100_flop_per_sec = peaks::datasheet_for("A100").map_or(f64::NAN, |p| p.bf16);
    record!(cx, given a100_flop_per_sec, flop_per_sec)?;
    let h100_flop_per_sec = peaks::H100_SXM_BF16_DENSE;
    record!(cx, given h100_flop_per_sec, flop_per_sec)?;
    // The B200 (2026's table), dense: its float32 rate and its bf16 tensor-core rate.
    let b200 = peaks::datasheet_for("B200");
    let b200_fp32_flop_per_sec = b200.map_or(f64::NAN, |p| p.fp32);
    record!(cx, given b200_fp32_flop_per_sec, flop_per_sec)?;
    let b200_flop_per_sec = b200.map_or(f64::NAN, |p| p.bf16);
    record!(cx, given b200_flop_per_sec, flop_per_sec)?;
    // The newer chip is faster, and only in the narrow formats its tensor cores take.
    check!(cx, b200_beats_h100: b200_flop_per_sec > h100_flop_per_sec)?;
    check!(cx, b200_fp32_far_below_bf16: 10.0 * b200_fp32_flop_per_sec < b200_flop_per_sec)?;

    // 8 H100s running flat out for one week (2025 called this two weeks but computed one), and
    // for the two weeks 2026 computes.
    let num_h100s = 8;
    record!(cx, given num_h100s)?;
    let one_week_seconds = 60.0 * 60.0 * 24.0 * 7.0;
    record!(cx, computed one_week_seconds, seconds)?;
    let total_flops = num_h100s as f64 * one_week_seconds * h100_flop_per_sec;
    record!(cx, computed total_flops, flop)?;
    let two_weeks_total_flops = num_h100s as f64 * 2.0 * one_week_seconds * h100_flop_per_sec;
    record!(cx, computed two_weeks_total_flops, flop)?;
    check!(cx, two_weeks_twice_one: two_weeks_total_flops == 2.0 * total_flops)?;

    // A linear model y = x @ w: B points of dimension D mapped to K outputs.
    let b = given!(cx, B: Count = device => linear_model_sizes(device).0, count, "rows of x: data points")?;
    let d = given!(cx, D: Count = device => linear_model_sizes(device).1, count, "columns of x and rows of w: inputs")?;
    let k = given!(cx, K: Count = device => linear_model_sizes(device).2, count, "columns of w: outputs")?;
    // Random data, never zeros (a GPU multiplies zeros faster than real data), made where it is
    // used: on a GPU the 2 GiB x is drawn on the device.
    let x = Tensor::randn_on(&[b, d], DType::F32, &cx.device, &mut cx.rng)?;
    let w = Tensor::randn_on(&[d, k], DType::F32, &cx.device, &mut cx.rng)?;
    // One multiply and one add for each (i, j, k) triple.
    let flop_per_multiply_add = 2;
    record!(cx, given flop_per_multiply_add, flop)?;
    let actual_num_flops = flop_per_multiply_add * b * d * k;
    record!(cx, computed actual_num_flops, flop)?;
    let counter = FlopCounter::start();
    let y = x.matmul(&w)?;
    let counted_num_flops = counter.finish().total();
    record!(cx, computed counted_num_flops, flop)?;
    check!(cx, counter_agrees: counted_num_flops == actual_num_flops as u64)?;
    record!(cx, computed y_shape = y.shape())?;

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
    // On a GPU bfloat16 goes through cuBLASLt's heuristic search, PyTorch's route, and is timed
    // through plain cuBLAS (`cublasGemmEx`) too: which of the two reaches the peak is measured.
    let lt = GemmRoute::CublasLt;
    let mut products = vec![
        (MathMode::Fp32, F32Matmul::Pedantic, lt, &x, &w),
        (MathMode::Bf16, F32Matmul::Default, lt, &x16, &w16),
    ];
    if cx.device.is_cuda() {
        products.push((MathMode::Fp32, F32Matmul::Default, lt, &x, &w));
        products.push((MathMode::Tf32, F32Matmul::Tf32, lt, &x, &w));
        products.push((MathMode::Bf16, F32Matmul::Default, GemmRoute::Cublas, &x16, &w16));
    }
    let headline = Budget {
        min_time: std::time::Duration::from_secs(1),
        ..Budget::lecture()
    };
    let times = time_in_turns(&cx.device, headline, &products)?;
    let speeds: Vec<Speed> = (products.iter().zip(times))
        .map(|(&(mode, ..), time)| Speed::of(&cx.device, mode, time, actual_num_flops))
        .collect();

    // float32
    let fp32 = &speeds[0];
    record!(cx, clock actual_time = fp32.time.median_s, seconds)?;
    record!(cx, clock actual_time_spread = fp32.time.to_json())?;
    record!(cx, clock actual_flop_per_sec = fp32.flop_per_sec, flop_per_sec)?;
    match &fp32.peak {
        Ok(peak) => {
            record!(cx, (peak.value_kind()) peak_flop_per_sec = peak.flop_per_sec, flop_per_sec)?;
            record!(cx, (peak.value_kind()) peak_source = peak.how.as_str())?;
            if let Some(peak_loop) = peak.peak_loop {
                record!(cx, device peak_loop)?;
            }
            record!(cx, clock mfu = peak.mfu(fp32.flop_per_sec), ratio)?;
        }
        Err(why) => record!(cx, device mfu_unavailable_reason = why.as_str())?,
    }
    // bfloat16
    let bf16 = &speeds[1];
    record!(cx, clock bf16_actual_time = bf16.time.median_s, seconds)?;
    record!(cx, clock bf16_actual_time_spread = bf16.time.to_json())?;
    record!(cx, clock bf16_actual_flop_per_sec = bf16.flop_per_sec, flop_per_sec)?;
    match &bf16.peak {
        Ok(peak) => {
            record!(cx, (peak.value_kind()) bf16_peak_flop_per_sec = peak.flop_per_sec, flop_per_sec)?;
            record!(cx, (peak.value_kind()) bf16_peak_source = peak.how.as_str())?;
            if let Some(bf16_peak_loop) = peak.peak_loop {
                record!(cx, device bf16_peak_loop)?;
            }
            record!(cx, clock bf16_mfu = peak.mfu(bf16.flop_per_sec), ratio)?;
        }
        Err(why) => record!(cx, device bf16_mfu_unavailable_reason = why.as_str())?,
    }
    if let [_, _, fp32_default, tf32, bf16_cublas] = speeds.as_slice() {
        // cuBLAS's default float32, and TF32 (datasheet peaks: a GPU's are never measured).
        record!(cx, clock fp32_default_actual_time = fp32_default.time.median_s, seconds)?;
        record!(cx, clock fp32_default_actual_time_spread = fp32_default.time.to_json())?;
        record!(cx, clock fp32_default_actual_flop_per_sec = fp32_default.flop_per_sec, flop_per_sec)?;
        match &fp32_default.peak {
            Ok(peak) => {
                record!(cx, given fp32_default_peak_flop_per_sec = peak.flop_per_sec, flop_per_sec)?;
                record!(cx, given fp32_default_peak_source = peak.how.as_str())?;
                record!(cx, clock fp32_default_mfu = peak.mfu(fp32_default.flop_per_sec), ratio)?;
            }
            Err(why) => record!(cx, device fp32_default_mfu_unavailable_reason = why.as_str())?,
        }
        record!(cx, clock tf32_actual_time = tf32.time.median_s, seconds)?;
        record!(cx, clock tf32_actual_time_spread = tf32.time.to_json())?;
        record!(cx, clock tf32_actual_flop_per_sec = tf32.flop_per_sec, flop_per_sec)?;
        match &tf32.peak {
            Ok(peak) => {
                record!(cx, given tf32_peak_flop_per_sec = peak.flop_per_sec, flop_per_sec)?;
                record!(cx, given tf32_peak_source = peak.how.as_str())?;
                record!(cx, clock tf32_mfu = peak.mfu(tf32.flop_per_sec), ratio)?;
            }
            Err(why) => record!(cx, device tf32_mfu_unavailable_reason = why.as_str())?,
        }
        // The same bfloat16 product through plain cuBLAS (`cublasGemmEx`), beside cuBLASLt's
        // headline above; and the route the headline took (cuBLASLt unless it is missing or
        // refused a product, each of which ran on cuBLAS instead).
        record!(cx, clock bf16_cublas_actual_flop_per_sec = bf16_cublas.flop_per_sec, flop_per_sec)?;
        if let Some(bf16_matmul_route) = cx.device.bf16_matmul_route() {
            record!(cx, device bf16_matmul_route)?;
        }
        // On a GPU the bfloat16 unit's peak is the tensor cores', the one the MFU divides by.
        if let Ok(peak) = &bf16.peak {
            record!(cx, (peak.value_kind()) bf16_unit_flop_per_sec = peak.flop_per_sec, flop_per_sec)?;
        }
    }
    // What the bfloat16 product hands back, and whether its partial sums may have been added in
    // less than float32 precision on the way.
    record!(cx, computed bf16_output_dtype = x16.matmul(&w16)?.dtype().name())?;
    let bf16_reduced_precision_reduction = cx.device.bf16_matmul_reduced_precision_reduction();
    record!(cx, device bf16_reduced_precision_reduction)?;
    if cx.device.is_cpu() {
        // Which instructions did the work. Our own code (the bfloat16 kernel, the peak loops)
        // goes up to the level CS336_CPU_ISA allows, else the best this CPU has; the gemm crate
        // picks its own float32 kernel, so each MFU above is against the loop of the instruction
        // set its matmul ran with.
        let (level, set_by) = cpu::isa::current_with_source()?;
        record!(cx, device cpu_isa = level.name())?;
        record!(cx, device cpu_isa_set_by = isa_set_by(set_by))?;
        record!(cx, device f32_matmul_isa = cpu::isa::f32_matmul_isa().name())?;
        // The fastest bfloat16 instruction the level offers (AMX tiles, AVX512_BF16 dot
        // products, or none), and the route the products took: that unit, or a widening to
        // float32 where timing the units found the float32 one faster (then the bfloat16 MFU is
        // against the float32 peak, and the unit's own peak stands beside it in `cpu_isa_peaks`).
        record!(cx, device bf16_matmul_isa = cpu::bf16_matmul_isa())?;
        let route = cpu::bf16_matmul_route()?;
        record!(cx, device bf16_matmul_route = route.kernel.name())?;
        record!(cx, clock bf16_matmul_route_reason = route.reason.as_str())?;
        let bf16_widened = route.kernel == cpu::bf16_gemm::Bf16Kernel::PortableF32;
        record!(cx, device bf16_widened)?;
        let bf16_has_instruction = cpu::bf16_gemm::offered_kernel()? != cpu::bf16_gemm::Bf16Kernel::PortableF32;
        record!(cx, device bf16_has_instruction)?;
        // The bfloat16 instruction's own peak, whichever unit the products took: beside the
        // peak the bfloat16 MFU divides by, it says why the route was taken.
        let unit_loop = cpu::measured_peak::level_loop(MathMode::Bf16, level);
        if let Ok(unit) = cpu::measured_peak::measure(unit_loop) {
            record!(cx, clock bf16_unit_flop_per_sec = unit.flop_per_sec, flop_per_sec)?;
        }
        // The level's own peaks, beside the ones MFU is computed against.
        record!(cx, clock cpu_isa_peaks = level_peaks_json(level))?;
        // The textbook peak (cores × clock × FLOPs per instruction × instructions per cycle, the
        // first two read from this machine) for comparison with the measured one.
        record!(cx, device cpu_peak_formula = cpu_formula_json())?;
    }

    // Throughput against size: small products cannot keep the units busy.
    let (throughput_sweep, sweep_peaks) = throughput_sweep(cx)?;
    record!(cx, clock throughput_sweep)?;
    // The peaks drawn as lines: measured on a CPU (a timed FMA loop), a datasheet's on a GPU.
    let peaks_kind = if cx.device.is_cpu() { Kind::Clock } else { Kind::Given };
    record!(cx, (peaks_kind) sweep_peaks)?;
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

/// One timed product: its spread, the FLOP/s it reached, and the peak its MFU is against (or why
/// there is none).
struct Speed {
    time: Timing,
    flop_per_sec: f64,
    peak: std::result::Result<Peak, String>,
}

impl Speed {
    fn of(device: &Device, mode: MathMode, time: Timing, flops: usize) -> Speed {
        let flop_per_sec = time.flop_per_sec(flops as u64);
        Speed {
            time,
            flop_per_sec,
            peak: peaks::peak(device, mode),
        }
    }
}

/// Times a·b for each (float32 matmul mode, GPU library route, a, b), in turns (each setting
/// switched on for its own calls only; they only matter on a GPU).
fn time_in_turns(
    device: &Device,
    budget: Budget,
    products: &[(MathMode, F32Matmul, GemmRoute, &Tensor, &Tensor)],
) -> Result<Vec<Timing>> {
    let runs = products.iter().map(|&(_, mode, route, a, b)| {
        move || {
            let (was, was_route) = (device.set_f32_matmul(mode), device.set_gemm_route(route));
            let product = a.matmul(b).map(drop);
            device.set_f32_matmul(was);
            device.set_gemm_route(was_route);
            product
        }
    });
    timing::time_each(device, budget, runs)
}

fn cpu_formula_json() -> serde_json::Value {
    let one = |mode: MathMode| match cpu::measured_peak::formula(mode) {
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
        let peak_loop = cpu::measured_peak::level_loop(mode, level);
        match cpu::measured_peak::measure(peak_loop) {
            Ok(m) => json!({"loop": peak_loop.name(), "flop_per_sec": m.flop_per_sec, "how": m.method}),
            Err(why) => json!({"loop": peak_loop.name(), "unavailable": why}),
        }
    };
    json!({"fp32": one(MathMode::Fp32), "bf16": one(MathMode::Bf16)})
}

fn peak_json(peak: &std::result::Result<Peak, String>) -> serde_json::Value {
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
/// MFU, plus the peaks to draw as lines.
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
    let peaks: Vec<_> = modes.iter().map(|&m| peaks::peak(&cx.device, m)).collect();
    let mut points = Vec::new();
    for &n in sizes {
        let a = Tensor::randn_on(&[n, n], DType::F32, &cx.device, &mut cx.rng)?;
        let b = Tensor::randn_on(&[n, n], DType::F32, &cx.device, &mut cx.rng)?;
        let (a16, b16) = (a.to_dtype(DType::BF16)?, b.to_dtype(DType::BF16)?);
        let products: Vec<_> = modes
            .iter()
            .map(|&m| match m {
                MathMode::Bf16 => (m, F32Matmul::Pedantic, GemmRoute::CublasLt, &a16, &b16),
                MathMode::Tf32 => (m, F32Matmul::Tf32, GemmRoute::CublasLt, &a, &b),
                _ => (m, F32Matmul::Pedantic, GemmRoute::CublasLt, &a, &b),
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

/// What a what-if of this section needs (`what_if::check_cost`), with each given as `get` reads it.
pub(super) fn cost(get: &dyn Fn(&str) -> f64) -> Cost {
    let (b, d, k) = (get("B"), get("D"), get("K"));
    let elements = b * d + d * k + b * k;
    // x, w and y in float32 and in bfloat16; timed for at least a second in each dtype,
    // at least a few times each: the FLOPs of about ten products per dtype.
    Cost {
        bytes: elements * (4.0 + 2.0),
        flops: 2.0 * b * d * k * 2.0 * 10.0,
        trace_bytes: 0.0,
    }
}
