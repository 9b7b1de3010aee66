//! The roofline section's operations from about a thousand elements to beyond the last level of
//! the memory: at small sizes a call costs more than its bytes (waking threads, a launch), then
//! each cache's plateau, then memory. Each size is set against the memory's bandwidth at that
//! working set, and the size from which an operation stays bound by a rate is recorded.

use serde_json::{Map, Value, json};

use super::SectionCtx;
use super::roofline::Verdict;
use crate::device::cpu::stream;
use crate::error::Result;
use crate::flops::FlopCounter;
use crate::tensor::{DType, Tensor};
use crate::timing;

/// The operations swept: the section's memory-bound ones, and an addition (two inputs, one output).
pub const OPS: [&str; 5] = ["relu", "gelu", "add", "dot", "matvec"];
/// The first size, elements; each next one has four times as many.
const FIRST: usize = 1024;

/// Each operation's points (bf16, as the section's) up to `largest` bytes touched, and for each
/// the first working set at which it was bound by a rate (null where none was) and the larger
/// ones at which it was overhead-bound again.
/// `roof_at` gives the memory's bandwidth at a working set; `ceiling` the FLOP/s of the float32
/// units these operations run on.
pub fn op_sweeps(
    cx: &mut SectionCtx,
    largest: usize,
    roof_at: &dyn Fn(usize) -> (f64, f64),
    ceiling: f64,
) -> Result<(Value, Value)> {
    let device = cx.device.clone();
    let (mut sweeps, mut bound_from) = (Map::new(), Map::new());
    for op in OPS {
        let mut points = Vec::new();
        let mut n = FIRST;
        loop {
            // Bytes by formula, to stop before allocating past the limit.
            let side = (n as f64).sqrt() as usize;
            let expected = match op {
                "relu" | "gelu" => 4 * n,
                "add" => 6 * n,
                "dot" => 4 * n + 2,
                _ => 2 * n + 4 * side,
            };
            if expected > largest && !points.is_empty() {
                break;
            }
            let full = |shape: &[usize]| Tensor::full_on(shape, 0.5, DType::BF16, &device);
            // A matrix-vector product of n elements: a √n × √n matrix.
            let inputs: Vec<Tensor> = match op {
                "relu" | "gelu" => vec![full(&[n])?],
                "add" | "dot" => vec![full(&[n])?, full(&[n])?],
                _ => vec![full(&[side, side])?, full(&[side])?],
            };
            let run = || match op {
                "relu" => inputs[0].relu(),
                "gelu" => inputs[0].gelu(),
                "add" => inputs[0].add(&inputs[1]),
                _ => inputs[0].matmul(&inputs[1]),
            };
            // One call counts the bytes and FLOPs (and warms the caches and the allocator).
            let counter = FlopCounter::start();
            let out = run()?;
            let flops = counter.finish().total() as f64;
            let bytes = inputs.iter().map(Tensor::nbytes).sum::<usize>() + out.nbytes();
            drop(out);
            // The counting call was the warm-up.
            let budget = timing::Budget {
                warmup: 0,
                ..stream::sweep_budget()
            };
            let time = timing::time(&device, budget, || run().map(drop))?;
            let (roof, _) = roof_at(bytes);
            let verdict = Verdict::of(bytes as f64, flops, time.min_s, roof, ceiling);
            let mut point = json!({
                "elements": n, "bytes": bytes, "flops": flops,
                "time_s": time.median_s, "best_time_s": time.min_s,
                "bytes_per_sec": bytes as f64 / time.median_s, "flop_per_sec": flops / time.median_s,
                "roof_bytes_per_sec": roof, "memory_share": bytes as f64 / time.median_s / roof,
            });
            verdict.add_to(&mut point);
            points.push(point);
            n *= 4;
        }
        // The first size at which it was bound by a rate, and any larger ones where it was
        // overhead-bound again (a fresh output too large for the allocator to keep, say).
        let first = points.iter().position(|p| p["overhead_bound"] == false);
        let again: Vec<Value> = (points.iter().skip(first.map_or(points.len(), |i| i + 1)))
            .filter(|p| p["overhead_bound"] == true)
            .map(|p| p["bytes"].clone())
            .collect();
        let from = first.map_or(Value::Null, |i| points[i]["bytes"].clone());
        bound_from.insert(
            op.to_string(),
            json!({"from_bytes": from, "overhead_again_at_bytes": again}),
        );
        sweeps.insert(op.to_string(), Value::Array(points));
    }
    Ok((Value::Object(sweeps), Value::Object(bound_from)))
}
