//! Arithmetic intensity and the roofline: an operation's time depends on two rates, the
//! accelerator's FLOP/s and the memory's bytes/s, and on how many FLOPs it does per byte it moves.

use serde_json::{Value, json};

use crate::bench::cuda as gpu_bench;
use crate::device::Device;
use crate::device::hierarchy;
use crate::device::peaks::{self, MathMode};
use crate::error::{Error, Result};
use crate::flops::FlopCounter;
use crate::lecture::givens::given;
use crate::lecture::roofline::{self, Hierarchy, Verdict};
use crate::lecture::fusion;
use crate::lecture::op_sweeps as sweeps;
use crate::lecture::what_if::Cost;
use crate::lecture::{SectionCtx, check, record};
use crate::tensor::{DType, Tensor};
use crate::timing::{self, Budget};

/// Two rates decide how long an operation takes: the FLOPs it does over the accelerator's FLOP/s,
/// and the bytes it moves over the memory's bytes/s. Whichever is longer is the one it waits for.
pub fn arithmetic_intensity(cx: &mut SectionCtx) -> Result<()> {
    // An H100 by its datasheet: dense bf16 FLOP/s and HBM3 bytes/s, and their ratio, the FLOPs it
    // must do per byte it reads to keep its tensor cores busy.
    let h100_flop_per_sec = peaks::H100_SXM_BF16_DENSE;
    record!(cx, given h100_flop_per_sec, flop_per_sec)?;
    let h100_bytes_per_sec = peaks::H100_SXM_HBM_BYTES_PER_SEC;
    record!(cx, given h100_bytes_per_sec, bytes_per_sec)?;
    let h100_accelerator_intensity = h100_flop_per_sec / h100_bytes_per_sec;
    record!(cx, computed h100_accelerator_intensity, flop_per_byte)?;

    // This device's compute ceilings, one per precision route (measured on a CPU, the datasheet's
    // on a GPU), and its bf16 peak, the one the lecture's accelerator intensity takes.
    let ceilings = roofline::ceilings(&cx.device)?;
    let peak = peaks::peak(&cx.device, MathMode::Bf16).map_err(|why| Error::invalid("arithmetic_intensity", why))?;
    record!(cx, (peak.value_kind()) compute_ceilings = roofline::ceilings_json(&ceilings))?;
    record!(cx, (peak.value_kind()) peak_flop_per_sec = peak.flop_per_sec, flop_per_sec)?;
    record!(cx, (peak.value_kind()) peak_source = peak.how.as_str())?;
    // Its memory: on a CPU the whole hierarchy, bandwidth against working-set size, with the
    // levels read off the curve; on a GPU its memory's copy bandwidth, far beyond its L2.
    let threads = rayon::current_num_threads();
    let hierarchy = match cx.device.is_cpu() {
        true => Some(Hierarchy::measure(threads)?),
        false => None,
    };
    let roofs = match &hierarchy {
        Some(h) => {
            record!(cx, clock hierarchy_one_thread = h.curves_json(false))?;
            record!(cx, clock hierarchy_all_threads = h.curves_json(true))?;
            record!(cx, computed hierarchy_threads = threads, count)?;
            // A clock's: whether the curve showed each cache is measured.
            record!(cx, clock reported_caches = h.reported_json())?;
            record!(cx, clock memory_levels_one_thread = roofline::levels_json(h.levels(false), 1))?;
            // Where the curve and the OS disagree: a reported cache the curve never falls near
            // (a VM reports its host's), a level no reported cache explains (the guest's share).
            record!(cx, clock hierarchy_agreement = h.agreement())?;
            h.levels(true)
                .iter()
                .map(|l| Roof {
                    level: l.name.clone(),
                    touched_bytes: l.found.up_to_bytes.unwrap_or(l.found.from_bytes),
                    bytes_per_sec: l.bytes_per_sec,
                    json: roofline::level_json(l, threads),
                })
                .collect()
        }
        None => gpu_memory_roof(&cx.device)?,
    };
    record!(cx, clock memory_roofs = Value::Object(roofs.iter().map(|r| (r.level.clone(), r.json.clone())).collect()))?;
    // Main memory's (the last roof): what a large working set streams at.
    let memory = roofs
        .last()
        .ok_or_else(|| Error::invalid("arithmetic_intensity", "no memory roof was measured"))?;
    let memory_bytes_per_sec = memory.bytes_per_sec;
    record!(cx, clock memory_bytes_per_sec, bytes_per_sec)?;
    let accelerator_intensity = peak.flop_per_sec / memory_bytes_per_sec;
    record!(cx, clock accelerator_intensity, flop_per_byte)?;
    if let Some(datasheet) = cx.device.cuda().and_then(|c| peaks::datasheet_for(&c.props().name)) {
        let datasheet_bytes_per_sec = datasheet.memory_bytes_per_sec;
        record!(cx, given datasheet_bytes_per_sec, bytes_per_sec)?;
    }
    // An operation's memory roof: the hierarchy's bandwidth at its working set, on the same
    // threads (the fastest of the five kernels there); on a GPU, its memory's.
    let roof_at = |bytes: usize| -> (f64, f64) {
        match hierarchy.as_ref().map(|h| h.envelope(true)) {
            Some(envelope) => {
                let best = hierarchy::at(envelope, bytes, |p| p.best_bytes_per_sec).unwrap_or(f64::NAN);
                (best, hierarchy::spread_at(envelope, bytes).unwrap_or(1.0))
            }
            None => (memory.bytes_per_sec, 1.0),
        }
    };
    let level_at = |bytes: usize| -> String {
        (roofs.iter())
            .find(|r| r.touched_bytes >= bytes)
            .unwrap_or(memory)
            .level
            .clone()
    };
    let ceiling_of = |matmul: bool| -> Result<(&'static str, f64)> {
        let name = roofline::route(&cx.device, matmul)?;
        let c = (ceilings.iter().find(|c| c.name == name))
            .ok_or_else(|| Error::invalid("arithmetic_intensity", format!("no ceiling measured for the {name} route")))?;
        Ok((c.name, c.flop_per_sec))
    };
    let (vector_ceiling, matmul_ceiling) = (ceiling_of(false)?, ceiling_of(true)?);

    // The lecture's five operations in bf16: vectors of n elements, n×n matrices.
    let n = given!(cx, n: Count = _device => 1024 * 1024, count, "elements of each vector (relu, gelu, dot)")?;
    let m = given!(cx, matrix_n: Count = _device => 1024, count, "rows and columns of each matrix (matvec, matmul)")?;
    let element_bytes = DType::BF16.size_in_bytes();
    record!(cx, computed element_bytes, bytes)?;
    let bf16 = |shape: &[usize], cx: &mut SectionCtx| {
        Tensor::randn_on(shape, DType::F32, &cx.device, &mut cx.rng)?.to_dtype(DType::BF16)
    };
    let (x, y) = (bf16(&[n], cx)?, bf16(&[n], cx)?);
    let (a, b, v) = (bf16(&[m, m], cx)?, bf16(&[m, m], cx)?, bf16(&[m], cx)?);
    let ops: [Op<'_>; 5] = [
        Op::new("relu", vec![&x], 4 * n, n, || x.relu()),
        Op::new("gelu", vec![&x], 4 * n, 20 * n, || x.gelu()),
        Op::new("dot", vec![&x, &y], 4 * n + 2, 2 * n, || x.matmul(&y)),
        Op::new("matvec", vec![&a, &v], 2 * (m * m + m) + 2 * m, 2 * m * m, || {
            a.matmul(&v)
        }),
        Op::new("matmul", vec![&a, &b], 3 * 2 * m * m, 2 * m * m * m, || a.matmul(&b)),
    ];
    // Bytes read and written, and FLOPs: by the formula, and from the tensors and the library's
    // FLOP counter, which must agree.
    let counts = ops.iter().map(Op::count).collect::<Result<Vec<_>>>()?;
    let counted: Vec<(usize, u64)> = counts.iter().map(|c| (c.bytes, c.flops)).collect();
    let by_formula: Vec<(usize, u64)> = ops.iter().map(|op| (op.bytes_formula, op.flops_formula as u64)).collect();
    check!(cx, counts_as_formula: counted == by_formula)?;
    record!(cx, computed op_counts = counts_json(&ops, &counts))?;
    // Every operation but the matrix product does a few FLOPs per byte at most, whatever its size:
    // far below what an H100 needs to keep busy.
    let highest_other_intensity = (ops.iter().zip(&counts))
        .filter(|(op, _)| op.name != "matmul")
        .map(|(_, c)| c.flops as f64 / c.bytes as f64)
        .fold(0.0, f64::max);
    check!(cx, others_below_a_fiftieth: 50.0 * highest_other_intensity < h100_accelerator_intensity)?;

    // Each timed in turns with the others, so that a busy moment slows them all.
    let mut times = time_in_turns(&cx.device, &ops)?;
    // No operation may move bytes faster than the memory did at its working set, beyond the two
    // timings' spreads. One that does is timed again, its roof measured again; if it still does,
    // the run stops and names it.
    let mut roofs_at: Vec<(f64, f64)> = counts.iter().map(|c| roof_at(c.bytes)).collect();
    let above = |time: &timing::Timing, count: &Count, (roof, spread): (f64, f64)| {
        count.bytes as f64 / time.median_s > roof * spread * time.spread()
    };
    for (i, op) in ops.iter().enumerate() {
        if above(&times[i], &counts[i], roofs_at[i]) {
            times[i] = timing::time(&cx.device, Budget::lecture(), || (op.run)().map(drop))?;
            if let Some(h) = &hierarchy {
                roofs_at[i].0 = roofs_at[i].0.max(h.roof_again(counts[i].bytes)?);
            }
        }
    }
    let above_roof: Vec<String> = (ops.iter().enumerate())
        .filter(|&(i, _)| above(&times[i], &counts[i], roofs_at[i]))
        .map(|(i, op)| {
            let bytes_per_sec = counts[i].bytes as f64 / times[i].median_s;
            format!("{} at {:.3e} bytes/s, its roof {:.3e} at {} bytes", op.name, bytes_per_sec, roofs_at[i].0, counts[i].bytes)
        })
        .collect();
    // At the tests' budget each timing is one cold call, which proves nothing about a roof.
    check!(cx, no_point_above_its_roof: above_roof.is_empty() || timing::budget::is_test())?;
    let mut measured = serde_json::Map::new();
    let mut spreads = serde_json::Map::new();
    for (((op, count), time), &(roof, roof_spread)) in ops.iter().zip(&counts).zip(&times).zip(&roofs_at) {
        let (ceiling, ceiling_flop_per_sec) = if op.name == "matmul" { matmul_ceiling } else { vector_ceiling };
        let (bytes, flops) = (count.bytes as f64, count.flops as f64);
        let intensity = flops / bytes;
        let (flop_per_sec, bytes_per_sec) = (flops / time.median_s, bytes / time.median_s);
        let verdict = Verdict::of(bytes, flops, time.min_s, roof, ceiling_flop_per_sec);
        spreads.insert(op.name.to_string(), time.to_json());
        let mut row = json!({
            "level": level_at(count.bytes), "roof_bytes_per_sec": roof,
            "allowance": roof_spread * time.spread(),
            "ceiling": ceiling, "ceiling_flop_per_sec": ceiling_flop_per_sec,
            "communication_time_s": verdict.memory_time_s, "computation_time_s": verdict.compute_time_s,
            "predicted_time_s": verdict.memory_time_s.max(verdict.compute_time_s),
            "time_s": time.median_s, "best_time_s": time.min_s,
            "flop_per_sec": flop_per_sec, "bytes_per_sec": bytes_per_sec,
            // The share of its ceiling it reached, and the share the roofline allows at its
            // intensity and the memory's bandwidth at its size.
            "mfu": flop_per_sec / ceiling_flop_per_sec,
            "roofline_mfu": (intensity * roof / ceiling_flop_per_sec).min(1.0),
            "memory_share": bytes_per_sec / roof,
        });
        verdict.add_to(&mut row);
        measured.insert(op.name.to_string(), row);
    }
    record!(cx, clock op_timings = Value::Object(measured))?;
    record!(cx, clock op_time_spreads = Value::Object(spreads))?;
    record!(cx, computed overhead_factor = roofline::OVERHEAD_FACTOR, ratio)?;
    // The lecture's "GeLU is no slower than ReLU": the same bytes, twenty times the FLOPs.
    let gelu_over_relu_time = times[1].median_s / times[0].median_s;
    record!(cx, clock gelu_over_relu_time, ratio)?;

    // bf16 matrix products from small to large: intensity n/3 walks them up the slope of the
    // roofline and onto its flat part.
    let matmul_sweep = matmul_sweep(cx)?;
    record!(cx, clock matmul_sweep)?;

    // Each operation from about a thousand elements to beyond the last level: the call's own cost
    // at small sizes, then the caches, then memory.
    // On a CPU to four times the last cache the curve found (at least 64 MiB, at most the
    // curve's largest size); on a GPU to 2 GiB.
    let largest = match &hierarchy {
        Some(h) => {
            let last_cache = roofs.iter().rev().nth(1).map_or(0, |r| r.touched_bytes);
            (4 * last_cache).max(64 << 20).min(h.largest())
        }
        None => 2 << 30,
    };
    let (op_sweeps, bound_from) = sweeps::op_sweeps(cx, largest, &roof_at, vector_ceiling.1)?;
    record!(cx, clock op_sweeps)?;
    record!(cx, clock op_bound_from = bound_from)?;

    // The practical rule, tested: GeLU fused against PyTorch's naive form of it, five ops that
    // each read and write the whole tensor, at the sweeps' largest working set (beyond the last
    // level, where bytes moved should set the time).
    let fusion = fusion::measure(&cx.device, &mut cx.rng, largest / (2 * element_bytes), roof_at(largest).0)?;
    record!(cx, clock fusion)?;
    Ok(())
}

/// One of the five operations: its inputs, its bytes and FLOPs by formula, and how to run it.
struct Op<'a> {
    name: &'static str,
    inputs: Vec<&'a Tensor>,
    bytes_formula: usize,
    flops_formula: usize,
    run: Box<dyn Fn() -> Result<Tensor> + 'a>,
}

/// What one run of an op moved and computed, from its tensors and the FLOP counter.
struct Count {
    bytes: usize,
    flops: u64,
}

impl<'a> Op<'a> {
    fn new(
        name: &'static str,
        inputs: Vec<&'a Tensor>,
        bytes_formula: usize,
        flops_formula: usize,
        run: impl Fn() -> Result<Tensor> + 'a,
    ) -> Op<'a> {
        Op {
            name,
            inputs,
            bytes_formula,
            flops_formula,
            run: Box::new(run),
        }
    }

    /// Runs it once: the bytes of its inputs and output, and the FLOPs it reported (the section
    /// checks both against the formula).
    fn count(&self) -> Result<Count> {
        let counter = FlopCounter::start();
        let out = (self.run)()?;
        let flops = counter.finish().total();
        let bytes = self.inputs.iter().map(|t| t.nbytes()).sum::<usize>() + out.nbytes();
        Ok(Count { bytes, flops })
    }
}

fn counts_json(ops: &[Op<'_>], counts: &[Count]) -> Value {
    let rows = ops.iter().zip(counts).map(|(op, c)| {
        let row = json!({
            "bytes": c.bytes, "bytes_formula": op.bytes_formula,
            "flops": c.flops, "flops_formula": op.flops_formula,
            "intensity": c.flops as f64 / c.bytes as f64,
        });
        (op.name.to_string(), row)
    });
    Value::Object(rows.collect())
}

/// Times every op, in turns.
fn time_in_turns(device: &Device, ops: &[Op<'_>]) -> Result<Vec<timing::Timing>> {
    timing::time_each(device, Budget::lecture(), ops.iter().map(|op| move || (op.run)().map(drop)))
}

/// One memory level as the roofline draws it.
struct Roof {
    level: String,
    /// The largest working set it holds (for main memory, where its plateau starts).
    touched_bytes: usize,
    /// Its bandwidth: on a CPU the fastest kernel's over its plateau, on a GPU a copy's.
    bytes_per_sec: f64,
    /// As the trace records it.
    json: Value,
}

/// A GPU's HBM, far beyond its L2: a copy and a read (a sum) of 1 GiB.
fn gpu_memory_roof(device: &Device) -> Result<Vec<Roof>> {
    let gpu = device
        .cuda()
        .ok_or_else(|| Error::invalid("arithmetic_intensity", "a GPU's memory roof asked of the CPU"))?;
    // 1 GiB: twenty times an H100's 50 MB L2.
    let bytes = 1 << 30;
    let copy = gpu_bench::bench_copy(&gpu.0, bytes, 3, 10)?;
    let x = Tensor::zeros_on(&[bytes / 4], DType::F32, device)?;
    let read = timing::time(device, Budget::lecture(), || x.sum_all().map(drop))?;
    let read_bytes_per_sec = bytes as f64 / read.median_s;
    let json = json!({
        "touched_bytes": 2 * bytes, "copy_bytes_per_sec": copy.bytes_per_sec,
        "read_bytes_per_sec": read_bytes_per_sec, "bytes_per_sec": copy.bytes_per_sec, "threads": 1,
    });
    Ok(vec![Roof {
        level: "HBM".into(),
        touched_bytes: 2 * bytes,
        bytes_per_sec: copy.bytes_per_sec,
        json,
    }])
}

/// Square bf16 products, n = 16 … 1024 on a CPU, 256 … 8192 on a GPU: their intensity (n/3) and
/// the FLOP/s they reached.
fn matmul_sweep(cx: &mut SectionCtx) -> Result<Value> {
    let sizes: &[usize] = if cx.device.is_cpu() {
        &[16, 32, 64, 128, 256, 512, 1024]
    } else {
        &[256, 512, 1024, 2048, 4096, 8192]
    };
    let mut points = Vec::new();
    for &n in sizes {
        let a = Tensor::randn_on(&[n, n], DType::F32, &cx.device, &mut cx.rng)?.to_dtype(DType::BF16)?;
        let b = Tensor::randn_on(&[n, n], DType::F32, &cx.device, &mut cx.rng)?.to_dtype(DType::BF16)?;
        let time = timing::time(&cx.device, Budget::lecture(), || a.matmul(&b).map(drop))?;
        let (flops, bytes) = (2 * n * n * n, 3 * 2 * n * n);
        points.push(json!({
            "n": n, "flops": flops, "bytes": bytes, "intensity": flops as f64 / bytes as f64,
            "time_s": time.median_s, "flop_per_sec": flops as f64 / time.median_s,
        }));
    }
    Ok(Value::Array(points))
}

/// What a what-if of this section needs (`what_if::check_cost`), with each given as `get` reads it.
pub(super) fn cost(get: &dyn Fn(&str) -> f64) -> Cost {
    let (n, m) = (get("n"), get("matrix_n"));
    // Two bf16 vectors and three matrices; a product's FLOPs, timed for 0.3 s in turns
    // with the rest: about thirty of each op. The bandwidth buffers (up to four times the
    // last-level cache) come on top, and do not depend on the givens.
    Cost {
        bytes: 2.0 * (3.0 * n + 4.0 * m * m + m) + 512e6,
        flops: 30.0 * (2.0 * m * m * m + 2.0 * m * m + 24.0 * n),
        trace_bytes: 0.0,
    }
}
