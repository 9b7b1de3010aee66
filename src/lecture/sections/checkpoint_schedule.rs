//! The checkpointing schedule, run: for networks of growing depth, keep every layer's input, keep
//! every few, or keep none, and measure what each costs in memory (the high-water mark) and in
//! recomputed FLOPs. The orders the lecture states, O(L), O(√L) and O(L²), are read off the run.

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::autograd::{Var, mse_loss, no_grad};
use crate::device::max_memory;
use crate::error::{Error, Result};
use crate::flops::FlopCounter;
use crate::lecture::givens::{MAX_COUNT, Narrower, given};
use crate::lecture::graph::{graph_bytes, graph_nodes};
use crate::lecture::what_if::{Cost, Overhead};
use crate::lecture::{SectionCtx, record};
use crate::nn::{Block, DeepNetwork, Module};
use crate::tensor::{DType, Tensor};

/// Which layer inputs the forward pass keeps for backward.
#[derive(Clone, Copy)]
enum Schedule {
    /// Plain backward: the graph keeps every layer's input (no recomputation).
    All,
    /// Keep the input of every `n`-th layer; backward recomputes one segment of `n` layers at a
    /// time from its kept input.
    Every(usize),
    /// Keep nothing but the data: backward recomputes each layer's input from the data.
    None,
}

impl Schedule {
    /// The name the trace and the book use.
    fn name(self, sqrt: bool) -> String {
        match self {
            Schedule::All => "every layer kept".into(),
            Schedule::Every(_) if sqrt => "every √L layers".into(),
            Schedule::Every(n) => format!("every {n} layers"),
            Schedule::None => "none kept".into(),
        }
    }
}

/// What one backward pass under a schedule took.
struct Step {
    /// The most activation bytes held at once, counted tensor by tensor: kept inputs plus the
    /// graph of the segment backward is in (parameters and the data are not counted).
    counted_peak: usize,
    /// Layer inputs the forward pass kept (the data not counted).
    kept_inputs: usize,
}

/// `layers` applied to `h` without a graph: a recomputation keeps nothing.
fn forward_without_graph(layers: &[Block], h: &Tensor) -> Result<Tensor> {
    let _no_graph = no_grad();
    let mut h = Var::constant(h.clone());
    for layer in layers {
        h = layer.forward(&h)?;
    }
    Ok(h.value().clone())
}

/// One forward and backward of `model` on `(x, y)` under `schedule`, leaving each weight's
/// gradient to the hooks the caller installed. Backward goes one segment at a time, last first:
/// it rebuilds the segment's graph from its input (kept, or recomputed from the data), and sends
/// the gradient at that input to the segment before. With `graphs`, each segment's graph is
/// listed there as it is rebuilt, with the segment's index.
fn step(
    model: &DeepNetwork,
    x: &Tensor,
    y: &Var,
    schedule: Schedule,
    mut graphs: Option<&mut Vec<(usize, Vec<Value>)>>,
) -> Result<Step> {
    let num_layers = model.layers.len();
    let (segment, keep) = match schedule {
        Schedule::All => (num_layers.max(1), true),
        Schedule::Every(n) => (n.max(1), true),
        Schedule::None => (1, false),
    };
    let segments: Vec<&[Block]> = model.layers.chunks(segment).collect();
    let params: Vec<Tensor> = model.state_dict().into_iter().map(|(_, t)| t).collect();
    let data = [x.clone(), y.value().clone()];
    // The forward pass without a graph, keeping each segment's input when the schedule does.
    let mut kept = vec![x.clone()];
    if keep {
        let mut h = x.clone();
        for s in &segments[..segments.len().saturating_sub(1)] {
            h = forward_without_graph(s, &h)?;
            kept.push(h.clone());
        }
    }
    let kept_inputs = kept.len() - 1;
    let mut counted_peak = 0;
    let mut upstream: Option<Tensor> = None;
    for (s, layers) in segments.iter().enumerate().rev() {
        let start = match kept.get(s) {
            Some(t) => t.clone(),
            None => forward_without_graph(&model.layers[..s * segment], x)?,
        };
        // The data needs no gradient; a later segment's input does, to pass it on.
        let input = if s == 0 {
            Var::constant(start)
        } else {
            Var::parameter(start)
        };
        let mut h = input.clone();
        for layer in *layers {
            h = layer.forward(&h)?;
        }
        // The last segment ends in the loss; the others in a product with the gradient that
        // arrived at their output, whose gradient with respect to `h` is exactly that gradient.
        let out = match upstream.take() {
            None => mse_loss(&h, y)?,
            Some(g) => h.mul(&Var::constant(g))?.sum_all()?,
        };
        if let Some(graphs) = graphs.as_deref_mut() {
            // A segment's own ops: up to its output (the last one's up to the loss).
            let root = if s + 1 == segments.len() { &out } else { &h };
            let named = model.named_parameters();
            graphs.push((s, graph_nodes(root, &named, &[("x", x), ("y", y.value())], 0)));
        }
        let held = &kept[1..kept.len().min(s + 1)];
        let held_bytes: usize = held.iter().map(Tensor::nbytes).sum();
        counted_peak = counted_peak.max(held_bytes + graph_bytes(&out, &params, &data, held));
        drop(h);
        out.backward()?;
        kept.truncate(s.max(1));
        upstream = input.grad();
    }
    Ok(Step {
        counted_peak,
        kept_inputs,
    })
}

/// Takes each weight's gradient out of `model` as soon as backward has made it, keeping a copy
/// on the host: the memory measured is then the activations' (an optimizer fused into backward
/// frees gradients the same way), and the gradients can still be compared across schedules.
fn take_gradients(model: &DeepNetwork) -> Result<Arc<Mutex<Vec<Vec<f64>>>>> {
    let grads = Arc::new(Mutex::new(vec![Vec::new(); model.layers.len()]));
    for (i, block) in model.layers.iter().enumerate() {
        let grads = Arc::clone(&grads);
        block
            .linear
            .weight
            .on_grad_accumulated(Arc::new(move |slot: &mut Option<Tensor>| {
                if let Some(g) = slot.take() {
                    grads.lock()[i] = g.to_vec_f64()?;
                }
                Ok(())
            }))?;
    }
    Ok(grads)
}

/// The segments' graphs as one list, first segment first: a segment's kept input points at the
/// output of the segment before (the forward pass kept it), and every op outside the last
/// segment is marked as run again during backward.
fn checkpoint_graph(mut segments: Vec<(usize, Vec<Value>)>) -> Vec<Value> {
    segments.sort_by_key(|(s, _)| *s);
    let last = segments.len().saturating_sub(1);
    let mut nodes: Vec<Value> = Vec::new();
    let mut previous_output: Option<usize> = None;
    for (s, graph) in segments {
        let offset = nodes.len();
        for mut node in graph {
            let shifted: Vec<usize> = (node["inputs"].as_array().into_iter().flatten())
                .filter_map(Value::as_u64)
                .map(|i| i as usize + offset)
                .collect();
            node["inputs"] = json!(shifted);
            node["segment"] = json!(s);
            match node["op"].as_str() {
                Some("kept input") => node["inputs"] = json!(previous_output.into_iter().collect::<Vec<_>>()),
                Some("parameter") => {}
                _ => node["recomputed"] = json!(s < last),
            }
            nodes.push(node);
        }
        previous_output = nodes.len().checked_sub(1);
    }
    nodes
}

/// How fast `ys` grows with `xs` on log–log axes between the two largest: the exponent p of
/// y ∝ x^p. None where a value is not positive.
fn slope(xs: &[usize], ys: &[f64]) -> Option<f64> {
    let n = xs.len();
    if n < 2 || ys[n - 2] <= 0.0 || ys[n - 1] <= 0.0 {
        return None;
    }
    Some((ys[n - 1] / ys[n - 2]).ln() / (xs[n - 1] as f64 / xs[n - 2] as f64).ln())
}

/// [`slope`], where the run must have one.
fn positive_slope(name: &str, xs: &[usize], ys: &[f64]) -> Result<f64> {
    slope(xs, ys).ok_or_else(|| {
        Error::invalid(
            "checkpoint_schedule",
            format!("{name}: a value at the two deepest networks is not positive ({ys:?})"),
        )
    })
}

/// The scale of the data `x`, and of the targets `y` (see `checkpoint_schedule`).
const DATA_SCALE: f64 = 1152921504606846976.0; // 2^60
const TARGET_SCALE: f64 = 1073741824.0; // 2^30

/// What this section asks of a given beyond its type (`givens::Narrower`): the depths are 4, 16,
/// 64, … up to `max_num_layers`, and the slopes need the two deepest (`max_num_layers=1` ran, and
/// then failed).
pub(super) const NARROWERS: &[Narrower] = &[Narrower {
    name: "max_num_layers",
    words: "a power of 4 from 16 to 2⁵² (16, 64, 256, …)",
    holds: |x| {
        (16.0..=MAX_COUNT).contains(&x) && x.fract() == 0.0 && {
            let n = x as u64;
            n.is_power_of_two() && n.trailing_zeros().is_multiple_of(2)
        }
    },
}];

/// Keep every layer, every few, every √L or none: for networks of growing depth, the peak
/// activation memory of one training step (measured, and counted tensor by tensor) and the
/// forward FLOPs spent again.
pub fn checkpoint_schedule(cx: &mut SectionCtx) -> Result<()> {
    let b = given!(cx, batch_size: Count = device => if device.is_cuda() { 1024usize } else { 256 }, count, "data points in the batch")?;
    let d =
        given!(cx, d: Count = device => if device.is_cuda() { 1024usize } else { 128 }, count, "width of every block")?;
    let max_num_layers =
        given!(cx, max_num_layers: Count = 256, count, "the deepest network (depths 4, 16, 64, … up to it)")?;
    let segment_layers =
        given!(cx, segment_layers: Count = 4, count, "layers between kept inputs in the fixed schedule")?;
    let depths: Vec<usize> = std::iter::successors(Some(4usize), |l| l.checked_mul(4))
        .take_while(|&l| l <= max_num_layers)
        .collect();
    if depths.len() < 2 || depths.last() != Some(&max_num_layers) {
        return Err(Error::invalid(
            "checkpoint_schedule",
            format!(
                "max_num_layers ({max_num_layers}) must be a power of 4 of at least 16, so that two depths give a slope"
            ),
        ));
    }
    record!(cx, computed depths = depths.clone())?;
    // The data at a scale that keeps every float normal. Each Xavier-scaled ReLU block halves
    // the variance, so at 256 layers the activations of unit-scale data fall to 2^-128, below
    // float32's smallest normal number, and so do the gradients reaching the first layers. A CPU
    // computes with such subnormals many times slower (this section took 7.1 s instead of 1.7 s
    // here). Scaling x by 2^60 and y by 2^30 keeps both within range (2^60 down to 2^-68, and
    // 2^30 down to 2^-98) and changes nothing this section records: bytes, FLOPs and whether the
    // schedules' gradients agree.
    let x = Tensor::randn(&[b, d], DType::F32, &mut cx.rng)?
        .mul_scalar(DATA_SCALE)?
        .to_device(&cx.device)?;
    let y = Var::constant(
        Tensor::randn(&[b, d], DType::F32, &mut cx.rng)?
            .mul_scalar(TARGET_SCALE)?
            .to_device(&cx.device)?,
    );
    // One block's forward matmul: the unit recomputation is counted in.
    let layer_flops = 2 * b * d * d;
    record!(cx, computed layer_flops, flop)?;

    let mut rows = Vec::new();
    // Per schedule, in the order the book lists them (from least kept to most), per depth.
    const NONE: usize = 0;
    const SQRT: usize = 1;
    const EVERY: usize = 2;
    const ALL: usize = 3;
    let mut peaks = vec![Vec::new(); 4];
    let mut recomputed = vec![Vec::new(); 4];
    let mut working_set = Vec::new();
    let mut same_gradients = true;
    for &num_layers in &depths {
        let model = DeepNetwork::on(d, num_layers, &cx.device, &mut cx.rng)?;
        let sqrt = (num_layers as f64).sqrt().round() as usize;
        let schedules = [
            Schedule::None,
            Schedule::Every(sqrt),
            Schedule::Every(segment_layers),
            Schedule::All,
        ];
        let mut runs = Vec::new();
        for schedule in schedules {
            let copy = model.deep_clone()?;
            let grads = take_gradients(&copy)?;
            let counter = FlopCounter::start();
            let (taken, memory) = max_memory(&cx.device, || step(&copy, &x, &y, schedule, None))?;
            let matmul_flops = counter.finish().by_op.get("matmul").copied().unwrap_or(0);
            let grads = std::mem::take(&mut *grads.lock());
            runs.push((taken, memory.added(), matmul_flops, grads));
        }
        // Recomputation is what a schedule multiplied beyond the plain step's products.
        let (plain_flops, plain_grads) = (runs[ALL].2, runs[ALL].3.clone());
        for (i, (taken, peak, matmul_flops, grads)) in runs.into_iter().enumerate() {
            same_gradients &= grads == plain_grads;
            let extra = matmul_flops.saturating_sub(plain_flops);
            working_set.push(peak as i64 - taken.counted_peak as i64);
            peaks[i].push(peak as f64);
            recomputed[i].push(extra as f64);
            rows.push(json!({
                "num_layers": num_layers,
                "schedule": schedules[i].name(i == SQRT),
                "kept_inputs": taken.kept_inputs,
                "counted_peak_bytes": taken.counted_peak,
                "measured_peak_bytes": peak,
                "recomputed_flops": extra,
                "recomputed_layers": extra / layer_flops as u64,
            }));
        }
    }
    record!(cx, computed schedules = serde_json::Value::Array(rows))?;
    // The graphs one checkpointed step rebuilt, drawn in the chapter: the shallowest network,
    // every √L layers.
    let shallow = DeepNetwork::on(d, depths[0], &cx.device, &mut cx.rng)?;
    let sqrt = (depths[0] as f64).sqrt().round() as usize;
    let _grads = take_gradients(&shallow)?;
    let mut segments = Vec::new();
    step(&shallow, &x, &y, Schedule::Every(sqrt), Some(&mut segments))?;
    record!(cx, computed checkpoint_graph = Value::Array(checkpoint_graph(segments)))?;
    // The deepest network's numbers, for the chapter's sentences: what each schedule holds at its
    // peak and how many layers' forward products it computes again.
    let deepest = depths.len() - 1;
    record!(cx, computed deepest_peak_all = peaks[ALL][deepest], bytes)?;
    record!(cx, computed deepest_peak_sqrt = peaks[SQRT][deepest], bytes)?;
    record!(cx, computed deepest_peak_none = peaks[NONE][deepest], bytes)?;
    let layers = |flops: f64| (flops / layer_flops as f64).round() as u64;
    record!(cx, computed deepest_recomputed_layers_sqrt = layers(recomputed[SQRT][deepest]))?;
    record!(cx, computed deepest_recomputed_layers_none = layers(recomputed[NONE][deepest]))?;
    // Keeping none, as a number of the network's own forward passes.
    let deepest_none_forward_passes = layers(recomputed[NONE][deepest]) as f64 / max_num_layers as f64;
    record!(cx, computed deepest_none_forward_passes, ratio)?;
    record!(cx, computed same_gradients)?;
    // What the high-water mark holds beyond the counted activations: the tensors backward is
    // working on (a gradient arriving at a block, the one leaving it, a weight's gradient).
    record!(cx, computed largest_working_set = working_set.iter().copied().max().unwrap_or(0), bytes)?;
    record!(cx, computed smallest_working_set = working_set.iter().copied().min().unwrap_or(0), bytes)?;
    // The orders of growth, from the two deepest networks: the exponent p of L^p. Keeping every
    // layer recomputes nothing, and a fixed segment as long as the deepest network recomputes
    // nothing either, so those have no recomputation slope.
    record!(cx, computed peak_slope_all = positive_slope("peak_slope_all", &depths, &peaks[ALL])?, ratio)?;
    record!(cx, computed peak_slope_every = positive_slope("peak_slope_every", &depths, &peaks[EVERY])?, ratio)?;
    record!(cx, computed peak_slope_sqrt = positive_slope("peak_slope_sqrt", &depths, &peaks[SQRT])?, ratio)?;
    record!(cx, computed peak_slope_none = positive_slope("peak_slope_none", &depths, &peaks[NONE])?, ratio)?;
    if let Some(p) = slope(&depths, &recomputed[EVERY]) {
        record!(cx, computed recompute_slope_every = p, ratio)?;
    }
    record!(cx, computed recompute_slope_sqrt = positive_slope("recompute_slope_sqrt", &depths, &recomputed[SQRT])?, ratio)?;
    record!(cx, computed recompute_slope_none = positive_slope("recompute_slope_none", &depths, &recomputed[NONE])?, ratio)?;
    Ok(())
}

/// What a what-if of this section needs (`what_if::check_cost`), with each given as `get` reads it.
pub(super) fn cost(get: &dyn Fn(&str) -> f64) -> Cost {
    let (b, d, deepest) = (get("batch_size"), get("d"), get("max_num_layers"));
    // The deepest network and its copy, and every layer's activations kept: the other
    // depths are a quarter and less. Each schedule takes a step of about 6·B·D² FLOPs a
    // layer, and recomputes up to L(L − 1)/2 layers' forward products (keeping none);
    // the depths before the deepest add a third at most.
    let depths = 4.0 / 3.0;
    Cost {
        bytes: 4.0 * (2.0 * deepest * d * d + 2.0 * deepest * b * d + 4.0 * b * d),
        flops: depths * (4.0 * 6.0 + deepest + 2.0) * deepest * b * d * d,
        trace_bytes: 0.0,
    }
}

/// Its fixed-cost steps (`what_if_overhead`): tensor ops and storage comparisons.
pub(super) fn overhead(get: &dyn Fn(&str) -> f64) -> Overhead {
    // At each depth L (a third more for the shallower ones): keeping none runs the first
    // layers again for every layer, L(L + 1)/2 blocks of about three ops, and the four
    // schedules' steps about forty ops a layer. Each segment's graph lists about two
    // saved tensors a layer, each compared with the L parameters, the data and the kept
    // inputs: about 2·L² comparisons a schedule.
    let deepest = get("max_num_layers");
    let depths = 4.0 / 3.0;
    Overhead {
        ops: depths * (1.5 * deepest * (deepest + 1.0) + 160.0 * deepest),
        comparisons: depths * 4.0 * 2.0 * deepest * (deepest + 2.0),
    }
}
