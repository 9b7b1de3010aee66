//! The optimizer: one AdaGrad step, and what a training step costs in memory and FLOPs, by the
//! lecture's formulas and as the library counted it.

use serde_json::json;

use crate::autograd::{Var, mse_loss};
use crate::error::Result;
use crate::flops::FlopCounter;
use crate::lecture::givens::given;
use crate::lecture::what_if::{Cost, Overhead, TRACE_BYTES_PER_NUMBER};
use crate::lecture::{SectionCtx, check, record};
use crate::nn::{Cruncher, Module};
use crate::optim::{AdaGrad, Optimizer};
use crate::tensor::{DType, Tensor};

/// Parameters by name as nested lists.
fn tensors_json(named: &[(String, Tensor)]) -> Result<serde_json::Value> {
    let mut map = serde_json::Map::new();
    for (name, t) in named {
        map.insert(name.clone(), t.to_json()?);
    }
    Ok(serde_json::Value::Object(map))
}

fn grads(model: &dyn Module) -> Vec<(String, Tensor)> {
    model
        .named_parameters()
        .into_iter()
        .filter_map(|(n, p)| p.grad().map(|g| (n, g)))
        .collect()
}

/// An optimizer step, and the memory and compute a training step costs.
pub fn optimizer(cx: &mut SectionCtx) -> Result<()> {
    // The batch stays at the two data points whose targets are below.
    let b = 2;
    record!(cx, given batch_size = b)?;
    let d = given!(cx, d: Count = 4, count, "width of the Cruncher's layers")?;
    let num_layers = given!(cx, num_layers: Count = 2, count, "D×D layers before the head")?;
    let model = Cruncher::new(d, num_layers, &mut cx.rng)?.to_device(&cx.device)?;
    let lr = given!(cx, lr: Positive = 0.01, none, "AdaGrad's learning rate")?;
    let mut optimizer = AdaGrad::new(&model, lr)?;
    record!(cx, given eps = optimizer.eps())?;
    // The parameters before and after the step: one history, two states.
    let state = tensors_json(&model.state_dict())?;
    record!(cx, computed history state)?;

    let x = Var::constant(Tensor::randn(&[b, d], DType::F32, &mut cx.rng)?.to_device(&cx.device)?);
    let targets = [4.0, 5.0];
    record!(cx, given targets = targets.to_vec())?;
    let y = Var::constant(Tensor::from_data(&targets, DType::F32)?.to_device(&cx.device)?);
    let counter = FlopCounter::start();
    let pred_y = model.forward(&x)?;
    let loss = mse_loss(&pred_y, &y)?;
    record!(cx, computed loss = loss.value().item()?)?;
    // What the graph holds for backward (measured now: backward frees it).
    let saved = saved_for_backward(&loss, &model, &x, &y);
    loss.backward()?;
    let step_flops = counter.finish();
    let gradients = grads(&model);
    record!(cx, computed grads = tensors_json(&gradients)?)?;
    let counter = FlopCounter::start();
    optimizer.step()?;
    let optimizer_flops = counter.finish();
    let state = tensors_json(&model.state_dict())?;
    record!(cx, computed history state)?;
    record!(cx, computed g2_after = tensors_json(&optimizer.state())?)?;

    // Memory, by the lecture's formula (float32 everywhere).
    let num_parameters = (d * d * num_layers) + d;
    record!(cx, computed num_parameters)?;
    let num_activations = b * d * num_layers;
    record!(cx, computed num_activations)?;
    let num_gradients = num_parameters;
    record!(cx, computed num_gradients)?;
    let num_optimizer_states = num_parameters;
    record!(cx, computed num_optimizer_states)?;
    let bytes_per_float32 = 4;
    record!(cx, given bytes_per_float32, bytes)?;
    let total_memory = bytes_per_float32 * (num_parameters + num_activations + num_gradients + num_optimizer_states);
    record!(cx, computed total_memory, bytes)?;

    // Memory the library actually held, by category.
    let activation_bytes: usize = saved.iter().filter(|s| s.kind == "activation").map(|s| s.bytes).sum();
    let parameter_bytes = model.parameter_bytes();
    let gradient_bytes = gradients.iter().map(|(_, g)| g.nbytes()).sum::<usize>();
    let optimizer_state_bytes = optimizer.state_bytes();
    let measured = json!({
        "parameters": parameter_bytes,
        "gradients": gradient_bytes,
        "optimizer_state": optimizer_state_bytes,
        "saved_activations": activation_bytes,
        "saved_inputs": saved.iter().filter(|s| s.kind != "activation").map(|s| s.bytes).sum::<usize>(),
    });
    let measured_total = ["parameters", "gradients", "optimizer_state", "saved_activations"]
        .iter()
        .filter_map(|k| measured[k].as_u64())
        .sum::<u64>();
    record!(cx, computed measured_bytes = measured)?;
    record!(cx, computed measured_total_memory = measured_total, bytes)?;
    // What the library held is what the formula counts, category by category (the loss also
    // keeps the model's B outputs).
    check!(cx, parameters_as_formula: parameter_bytes == num_parameters * bytes_per_float32)?;
    check!(cx, gradients_as_formula: gradient_bytes == num_gradients * bytes_per_float32)?;
    check!(cx, optimizer_state_as_formula: optimizer_state_bytes == num_optimizer_states * bytes_per_float32)?;
    check!(cx, activations_as_formula: activation_bytes == (num_activations + b) * bytes_per_float32)?;
    let saved_for_backward: Vec<serde_json::Value> = saved.iter().map(SavedInfo::to_json).collect();
    record!(cx, computed saved_for_backward)?;

    // Compute: 2 FLOPs per (data point, parameter) forward, 4 backward.
    let flop_per_parameter_datum = 6;
    record!(cx, given flop_per_parameter_datum, flop)?;
    let flops = flop_per_parameter_datum * b * num_parameters;
    record!(cx, computed flops, flop)?;
    let counted_flops = step_flops.by_op.get("matmul").copied().unwrap_or(0);
    record!(cx, computed counted_flops, flop)?;
    // x is data, so backward skips x.grad = h.grad @ W0ᵀ: 2·B·D·D fewer than the formula.
    let counted_flops_x_requires_grad = counted_step_flops_with_input_grad(&model, &x, &y)?;
    record!(cx, computed counted_flops_x_requires_grad, flop)?;
    check!(cx, counter_meets_formula: counted_flops_x_requires_grad == flops as u64)?;
    record!(cx, computed counted_optimizer_flops = optimizer_flops.total(), flop)?;
    // zero_grad drops the gradients (PyTorch's `set_to_none=True`, its default): until the next
    // backward they take no memory at all, instead of a tensor of zeros each.
    optimizer.zero_grad();
    let gradient_bytes_after_zero_grad = grads(&model).iter().map(|(_, g)| g.nbytes()).sum::<usize>();
    record!(cx, computed gradient_bytes_after_zero_grad, bytes)?;
    check!(cx, zero_grad_frees_gradients: gradient_bytes_after_zero_grad == 0)?;
    Ok(())
}

/// A tensor the graph saved, classified.
struct SavedInfo {
    op: &'static str,
    shape: Vec<usize>,
    bytes: usize,
    /// "activation" (made by the forward pass), "input" or "target".
    kind: &'static str,
}

impl SavedInfo {
    fn to_json(&self) -> serde_json::Value {
        json!({"op": self.op, "shape": self.shape, "bytes": self.bytes, "kind": self.kind})
    }
}

fn saved_for_backward(loss: &Var, model: &dyn Module, x: &Var, y: &Var) -> Vec<SavedInfo> {
    let params: Vec<Tensor> = model.state_dict().into_iter().map(|(_, t)| t).collect();
    loss.saved_tensors()
        .into_iter()
        .filter(|s| !params.iter().any(|p| Tensor::same_storage(p, &s.tensor)))
        .map(|s| {
            let kind = if Tensor::same_storage(&s.tensor, x.value()) {
                "input"
            } else if Tensor::same_storage(&s.tensor, y.value()) {
                "target"
            } else {
                "activation"
            };
            SavedInfo {
                op: s.op,
                shape: s.tensor.shape().to_vec(),
                bytes: s.tensor.nbytes(),
                kind,
            }
        })
        .collect()
}

/// Matmul FLOPs of one forward + backward on a copy of the model with x requiring a gradient.
fn counted_step_flops_with_input_grad(model: &Cruncher, x: &Var, y: &Var) -> Result<u64> {
    let copy = model.deep_clone()?;
    let x = Var::parameter(x.value().clone());
    let counter = FlopCounter::start();
    mse_loss(&copy.forward(&x)?, y)?.backward()?;
    Ok(counter.finish().by_op.get("matmul").copied().unwrap_or(0))
}

/// What a what-if of this section needs (`what_if::check_cost`), with each given as `get` reads it.
pub(super) fn cost(get: &dyn Fn(&str) -> f64) -> Cost {
    let (d, layers) = (get("d"), get("num_layers"));
    // Parameters, gradients and AdaGrad's state, and a copy with its gradients. The trace
    // keeps every parameter four times (before and after the step, its gradient and its
    // AdaGrad state) and a few entries per layer of what backward saved.
    let parameters = layers * d * d + d;
    Cost {
        bytes: 4.0 * 5.0 * parameters,
        flops: 2.0 * 2.0 * parameters * 6.0 * 2.0,
        trace_bytes: (4.0 * parameters + 16.0 * layers) * TRACE_BYTES_PER_NUMBER,
    }
}

/// Its fixed-cost steps (`what_if_overhead`): tensor ops and storage comparisons.
pub(super) fn overhead(get: &dyn Fn(&str) -> f64) -> Overhead {
    let layers = get("num_layers");
    // Two forward and backward passes, AdaGrad's step (about six ops per parameter
    // tensor, two tensors a layer), the parameters' listing before and after. The saved
    // tensors (two a layer) are each compared with every parameter (two a layer).
    Overhead {
        ops: 40.0 * (layers + 1.0),
        comparisons: 4.0 * (layers + 1.0) * (layers + 1.0),
    }
}
