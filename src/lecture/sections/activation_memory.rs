//! Activations: what the forward pass keeps for the backward pass, layer by layer, and what
//! activation checkpointing trades for it.

use serde_json::json;

use crate::autograd::{SavedTally, Var, mse_loss, no_grad};
use crate::device::memory_allocated;
use crate::error::Result;
use crate::flops::FlopCounter;
use crate::lecture::givens::given;
use crate::lecture::graph::Activations;
use crate::lecture::what_if::{Cost, Overhead};
use crate::lecture::{SectionCtx, check, record};
use crate::nn::{Cruncher, Module};
use crate::tensor::{DType, Tensor};

/// Backward needs each layer's input: the gradient of `h @ W` with respect to W is `hᵀ @ g`. So
/// the graph keeps every layer's input alive until backward has used it. Checkpointing keeps only
/// some of them and recomputes the rest from the nearest kept one.
pub fn activation_memory(cx: &mut SectionCtx) -> Result<()> {
    let b = given!(cx, batch_size: Count = 64, count, "data points in the batch")?;
    let d = given!(cx, d: Count = 256, count, "width of every layer")?;
    let num_layers = given!(cx, num_layers: Count = 16, count, "D×D layers before the head")?;
    let model = Cruncher::new(d, num_layers, &mut cx.rng)?.to_device(&cx.device)?;
    let x = Var::constant(Tensor::randn(&[b, d], DType::F32, &mut cx.rng)?.to_device(&cx.device)?);
    let y = Var::constant(Tensor::randn(&[b], DType::F32, &mut cx.rng)?.to_device(&cx.device)?);
    let data = [x.value().clone(), y.value().clone()];
    let activations = Activations::new(&parameters(&model), &data);

    // The forward pass one layer at a time, reading after each what the graph saved since the
    // layer before (the graph is walked once in all, not once per layer).
    let allocated_before = memory_allocated(&cx.device);
    let counter = FlopCounter::start();
    let mut kept_per_layer = Vec::new();
    let mut tally = SavedTally::default();
    let mut h = x.clone();
    let mut kept_for_backward = 0;
    for (i, layer) in model.layers.iter().enumerate() {
        h = layer.forward(&h)?;
        let bytes = activations.newly_kept(&h, &mut tally, &[]);
        kept_per_layer.push(json!({"layer": format!("layers.{i}"), "bytes": bytes}));
        kept_for_backward += bytes;
    }
    let pred = model.final_layer.forward(&h)?.squeeze(-1)?;
    let loss = mse_loss(&pred, &y)?;
    let bytes = activations.newly_kept(&loss, &mut tally, &[]);
    kept_per_layer.push(json!({"layer": "final and loss", "bytes": bytes}));
    kept_for_backward += bytes;
    record!(cx, computed kept_per_layer = serde_json::Value::Array(kept_per_layer))?;
    record!(cx, computed kept_for_backward, bytes)?;
    if let (Some(before), Some(after)) = (allocated_before, memory_allocated(&cx.device)) {
        record!(cx, device allocated_by_forward = after.saturating_sub(before), bytes)?;
    }

    // The formula: each layer keeps its B × D input (layer 0's is the data, which the caller
    // holds anyway), the head keeps the last hidden state, and the loss its B differences.
    let bytes_per_float32 = 4;
    record!(cx, given bytes_per_float32, bytes)?;
    let activation_bytes_per_layer = b * d * bytes_per_float32;
    record!(cx, computed activation_bytes_per_layer, bytes)?;
    let formula_kept_for_backward = (num_layers * b * d + b) * bytes_per_float32;
    record!(cx, computed formula_kept_for_backward, bytes)?;
    check!(cx, kept_as_formula: kept_for_backward == formula_kept_for_backward)?;
    loss.backward()?;
    let plain_matmul_flops = counter.finish().by_op.get("matmul").copied().unwrap_or(0);
    record!(cx, computed plain_matmul_flops, flop)?;
    let plain_grads: Vec<Tensor> = model.named_parameters().iter().filter_map(|(_, p)| p.grad()).collect();

    // Checkpointing: keep the input of every `segment_layers`-th layer, and during backward
    // recompute each segment's forward from it.
    let segment_layers = given!(cx, segment_layers: Count = 4, count, "layers between kept inputs when checkpointing")?;
    let copy = model.deep_clone()?;
    let counter = FlopCounter::start();
    let checkpointed = checkpointed_step(&copy, &x, &y, segment_layers)?;
    let checkpoint_matmul_flops = counter.finish().by_op.get("matmul").copied().unwrap_or(0);
    record!(cx, computed checkpoint_matmul_flops, flop)?;
    let checkpoint_peak_kept = checkpointed.peak_kept;
    record!(cx, computed checkpoint_peak_kept, bytes)?;
    record!(cx, computed checkpoint_boundaries = checkpointed.boundaries)?;
    // During segment s's backward, s kept inputs are alive with the segment's own layer inputs
    // and, in every segment but the last, the gradient that arrived at its output (the last has
    // the head's input and the loss's B differences instead). The last segment is the peak when
    // it is full; when it is shorter, the one before it may be.
    let num_segments = num_layers.div_ceil(segment_layers);
    let last_len = num_layers - (num_segments - 1) * segment_layers;
    let last = (num_segments - 1 + last_len) * b * d + b;
    let before_last = if num_segments >= 2 {
        (num_segments - 2 + segment_layers) * b * d
    } else {
        0
    };
    let formula_checkpoint_peak = last.max(before_last) * bytes_per_float32;
    record!(cx, computed formula_checkpoint_peak, bytes)?;
    check!(cx, checkpoint_peak_as_formula: checkpoint_peak_kept == formula_checkpoint_peak)?;
    let recomputed_matmul_flops = checkpoint_matmul_flops - plain_matmul_flops;
    record!(cx, computed recomputed_matmul_flops, flop)?;
    // Every layer outside the last segment runs forward twice.
    let formula_recomputed_flops = 2 * b * d * d * (num_layers - last_len);
    record!(cx, computed formula_recomputed_flops, flop)?;
    check!(cx, recomputed_as_formula: recomputed_matmul_flops == formula_recomputed_flops as u64)?;
    let recomputed_fraction = recomputed_matmul_flops as f64 / plain_matmul_flops as f64;
    record!(cx, computed recomputed_fraction, ratio)?;
    // Hardware FLOPs utilisation counts the recomputation as work done; MFU counts only the
    // model's FLOPs. For the same step time they differ by this factor.
    let hfu_over_mfu = checkpoint_matmul_flops as f64 / plain_matmul_flops as f64;
    record!(cx, computed hfu_over_mfu, ratio)?;
    let checkpoint_grads = copy
        .named_parameters()
        .iter()
        .filter_map(|(_, p)| p.grad())
        .collect::<Vec<_>>();
    let same_gradients = plain_grads.len() == checkpoint_grads.len()
        && plain_grads
            .iter()
            .zip(&checkpoint_grads)
            .all(|(a, b)| a.to_vec_f64().ok() == b.to_vec_f64().ok());
    record!(cx, computed same_gradients)?;
    Ok(())
}

/// The model's parameters, which its graph saves but which are no activation.
fn parameters(model: &dyn Module) -> Vec<Tensor> {
    model.state_dict().into_iter().map(|(_, t)| t).collect()
}

struct Checkpointed {
    /// The most activation bytes held at once: kept segment inputs plus one segment's graph.
    peak_kept: usize,
    /// Segment inputs kept by the first forward pass (the data not counted).
    boundaries: usize,
}

/// One forward and backward with activation checkpointing, leaving the gradients in `model`'s
/// parameters. Forward runs without a graph and keeps each segment's input; backward rebuilds
/// one segment's graph at a time, last first, and sends the gradient at its input to the segment
/// before it.
fn checkpointed_step(model: &Cruncher, x: &Var, y: &Var, segment_layers: usize) -> Result<Checkpointed> {
    let segments: Vec<&[crate::nn::Linear]> = model.layers.chunks(segment_layers.max(1)).collect();
    let activations = Activations::new(&parameters(model), &[x.value().clone(), y.value().clone()]);
    let mut inputs = vec![x.value().clone()];
    {
        let _no_graph = no_grad();
        let mut h = x.clone();
        for segment in &segments[..segments.len().saturating_sub(1)] {
            for layer in *segment {
                h = layer.forward(&h)?;
            }
            inputs.push(h.value().clone());
        }
    }
    let boundaries = inputs.len() - 1;
    let mut peak_kept = 0;
    let mut upstream: Option<Tensor> = None;
    for (s, segment) in segments.iter().enumerate().rev() {
        let input = match s {
            0 => Var::constant(inputs[0].clone()),
            _ => Var::parameter(inputs[s].clone()),
        };
        let mut h = input.clone();
        for layer in *segment {
            h = layer.forward(&h)?;
        }
        // The last segment ends in the loss; the others in a product with the gradient that
        // arrived at their output, whose gradient with respect to `h` is exactly that gradient.
        let out = match upstream.take() {
            None => mse_loss(&model.final_layer.forward(&h)?.squeeze(-1)?, y)?,
            Some(g) => h.mul(&Var::constant(g))?.sum_all()?,
        };
        // The segment inputs still kept (the data is not counted), and this segment's graph, in
        // which the only kept input is the segment's own.
        let held: usize = inputs[1..=s].iter().map(Tensor::nbytes).sum();
        peak_kept = peak_kept.max(held + activations.behind(&out, &inputs[s..=s]));
        out.backward()?;
        inputs.truncate(s.max(1));
        upstream = input.grad();
    }
    Ok(Checkpointed { peak_kept, boundaries })
}

/// What a what-if of this section needs (`what_if::check_cost`), with each given as `get` reads it.
pub(super) fn cost(get: &dyn Fn(&str) -> f64) -> Cost {
    let (b, d, layers) = (get("batch_size"), get("d"), get("num_layers"));
    // The model and its copy, their gradients, and every layer's input and gradient.
    let parameters = layers * d * d + d;
    Cost {
        bytes: 4.0 * (4.0 * parameters + 2.0 * (layers + 3.0) * b * d),
        flops: 2.0 * b * d * d * layers * 7.0,
        trace_bytes: 0.0,
    }
}

/// Its fixed-cost steps (`what_if_overhead`): tensor ops and storage comparisons.
pub(super) fn overhead(get: &dyn Fn(&str) -> f64) -> Overhead {
    let layers = get("num_layers");
    // The plain pass, the checkpointed one (every layer twice forward) and a copy of the
    // model. Each pass walks its graph once, about two nodes a layer, each priced like an op (an
    // allocation and a set insert), and looks each of the two tensors a layer saves up in the
    // set of the 2·(layers + 1) parameters and the data, which it builds once.
    Overhead {
        ops: 40.0 * (layers + 1.0) + 2.0 * 2.0 * layers,
        comparisons: 2.0 * (2.0 * (layers + 2.0) + 2.0 * layers),
    }
}

