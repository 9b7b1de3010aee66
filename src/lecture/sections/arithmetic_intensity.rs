//! Arithmetic intensity and the roofline: an operation's time depends on two rates, the
//! accelerator's FLOP/s and the memory's bytes/s, and on how many FLOPs it does per byte it moves.

use serde_json::{Value, json};

use crate::bench::cuda as gpu_bench;
use crate::device::Device;
use crate::device::cpu::bandwidth::{self, Level, Stream};
use crate::device::promised::{self, MathMode};
use crate::error::{Error, Result};
use crate::flops::FlopCounter;
use crate::lecture::givens::given;
use crate::lecture::what_if::Cost;
use crate::lecture::{SectionCtx, check, record};
use crate::tensor::{DType, Tensor};
use crate::timing::{self, Budget, Clock, Contender};

/// Two rates decide how long an operation takes: the FLOPs it does over the accelerator's FLOP/s,
/// and the bytes it moves over the memory's bytes/s. Whichever is longer is the one it waits for.
pub fn arithmetic_intensity(cx: &mut SectionCtx) -> Result<()> {
    // An H100 by its datasheet: dense bf16 FLOP/s and HBM3 bytes/s, and their ratio, the FLOPs it
    // must do per byte it reads to keep its tensor cores busy.
    let h100_flop_per_sec = promised::H100_SXM_BF16_DENSE;
    record!(cx, given h100_flop_per_sec, flop_per_sec)?;
    let h100_bytes_per_sec = promised::H100_SXM_HBM_BYTES_PER_SEC;
    record!(cx, given h100_bytes_per_sec, bytes_per_sec)?;
    let h100_accelerator_intensity = h100_flop_per_sec / h100_bytes_per_sec;
    record!(cx, computed h100_accelerator_intensity, flop_per_byte)?;

    // This device's two rates: its bf16 peak (measured on a CPU, the datasheet's on a GPU) and its
    // memory's speed, measured here at every level that has one.
    let peak = promised::peak(&cx.device, MathMode::Bf16).map_err(|why| Error::invalid("arithmetic_intensity", why))?;
    record!(cx, (peak.value_kind()) peak_flop_per_sec = peak.flop_per_sec, flop_per_sec)?;
    record!(cx, (peak.value_kind()) peak_source = peak.how.as_str())?;
    let roofs = memory_roofs(&cx.device)?;
    record!(cx, clock memory_roofs = roofs_json(&roofs))?;
    // Main memory's (the last roof): what a large working set streams at.
    let memory = roofs
        .last()
        .ok_or_else(|| Error::invalid("arithmetic_intensity", "no memory roof was measured"))?;
    let memory_bytes_per_sec = memory.copy_bytes_per_sec;
    record!(cx, clock memory_bytes_per_sec, bytes_per_sec)?;
    let accelerator_intensity = peak.flop_per_sec / memory_bytes_per_sec;
    record!(cx, clock accelerator_intensity, flop_per_byte)?;
    if let Some(datasheet) = cx.device.cuda().and_then(|c| promised::datasheet_for(&c.props().name)) {
        let datasheet_bytes_per_sec = datasheet.memory_bytes_per_sec;
        record!(cx, given datasheet_bytes_per_sec, bytes_per_sec)?;
    }

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
    let times = time_in_turns(&cx.device, &ops)?;
    let threads = rayon::current_num_threads();
    let caches = if cx.device.is_cpu() {
        Some(bandwidth::caches()?)
    } else {
        None
    };
    let mut measured = serde_json::Map::new();
    let mut spreads = serde_json::Map::new();
    for ((op, count), time) in ops.iter().zip(&counts).zip(&times) {
        let level = match caches {
            Some(caches) => Level::of(count.bytes, threads, caches).name(),
            None => memory.level,
        };
        let roof = roofs.iter().find(|r| r.level == level).unwrap_or(memory);
        let (bytes, flops) = (count.bytes as f64, count.flops as f64);
        let intensity = flops / bytes;
        let (flop_per_sec, bytes_per_sec) = (flops / time.median_s, bytes / time.median_s);
        let communication_time_s = bytes / roof.copy_bytes_per_sec;
        let computation_time_s = flops / peak.flop_per_sec;
        let mfu = flop_per_sec / peak.flop_per_sec;
        let memory_share = bytes_per_sec / roof.copy_bytes_per_sec;
        spreads.insert(op.name.to_string(), time.to_json());
        measured.insert(
            op.name.to_string(),
            json!({
                "level": level, "roof_bytes_per_sec": roof.copy_bytes_per_sec,
                "communication_time_s": communication_time_s, "computation_time_s": computation_time_s,
                "predicted_time_s": communication_time_s.max(computation_time_s),
                "time_s": time.median_s,
                "flop_per_sec": flop_per_sec, "bytes_per_sec": bytes_per_sec,
                // The share of the peak it reached, and the share the roofline allows at its
                // intensity and its level's bandwidth.
                "mfu": mfu, "roofline_mfu": (intensity * roof.copy_bytes_per_sec / peak.flop_per_sec).min(1.0),
                "memory_share": memory_share,
                // Which rate it came closer to using up, measured: that is the one it waits for.
                "bound": if memory_share >= mfu { "memory" } else { "compute" },
            }),
        );
    }
    record!(cx, clock op_timings = Value::Object(measured))?;
    record!(cx, clock op_time_spreads = Value::Object(spreads))?;
    // The lecture's "GeLU is no slower than ReLU": the same bytes, twenty times the FLOPs.
    let gelu_over_relu_time = times[1].median_s / times[0].median_s;
    record!(cx, clock gelu_over_relu_time, ratio)?;

    // bf16 matrix products from small to large: intensity n/3 walks them up the slope of the
    // roofline and onto its flat part.
    let matmul_sweep = matmul_sweep(cx)?;
    record!(cx, clock matmul_sweep)?;
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

fn time_in_turns(device: &Device, ops: &[Op<'_>]) -> Result<Vec<timing::Timing>> {
    let clock = Clock::for_device(device);
    let mut contenders: Vec<_> = ops
        .iter()
        .map(|op| timing::contender(clock.clone(), move || (op.run)().map(drop)))
        .collect();
    let mut turns: Vec<Contender<'_>> = contenders.iter_mut().map(|c| c as Contender<'_>).collect();
    timing::in_turns(Budget::lecture(), &mut turns)
}

/// One level's measured bandwidths.
struct Roof {
    level: &'static str,
    /// Bytes the measurement's buffers touched.
    touched_bytes: usize,
    copy_bytes_per_sec: f64,
    read_bytes_per_sec: f64,
    threads: usize,
}

/// A CPU's L2, last-level cache and main memory; a GPU's HBM, far beyond its L2.
fn memory_roofs(device: &Device) -> Result<Vec<Roof>> {
    if let Some(gpu) = device.cuda() {
        // 1 GiB: twenty times an H100's 50 MB L2.
        let bytes = 1 << 30;
        let copy = gpu_bench::bench_copy(&gpu.0, bytes, 3, 10)?;
        // A read: the sum of a float32 vector of that size.
        let x = Tensor::zeros_on(&[bytes / 4], DType::F32, device)?;
        let read = timing::time(device, Budget::lecture(), || x.sum_all().map(drop))?;
        return Ok(vec![Roof {
            level: "HBM",
            touched_bytes: 2 * bytes,
            copy_bytes_per_sec: copy.bytes_per_sec,
            read_bytes_per_sec: bytes as f64 / read.median_s,
            threads: 1,
        }]);
    }
    let caches = bandwidth::caches()?;
    let threads = rayon::current_num_threads();
    Level::ALL
        .iter()
        .map(|&level| {
            let touched = level.touched_bytes(threads, caches);
            let copy = bandwidth::measure(Stream::Copy, touched, threads, Budget::lecture())?;
            let read = bandwidth::measure(Stream::Read, touched, threads, Budget::lecture())?;
            Ok(Roof {
                level: level.name(),
                touched_bytes: touched,
                copy_bytes_per_sec: copy.bytes_per_sec,
                read_bytes_per_sec: read.bytes_per_sec,
                threads,
            })
        })
        .collect()
}

fn roofs_json(roofs: &[Roof]) -> Value {
    let rows = roofs.iter().map(|r| {
        let row = json!({
            "touched_bytes": r.touched_bytes, "copy_bytes_per_sec": r.copy_bytes_per_sec,
            "read_bytes_per_sec": r.read_bytes_per_sec, "threads": r.threads,
        });
        (r.level.to_string(), row)
    });
    Value::Object(rows.collect())
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
