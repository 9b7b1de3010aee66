//! The optimizer: one AdaGrad step, and what a training step costs in memory and FLOPs, by the
//! lecture's formulas and as the library counted it.

use serde_json::json;

use super::{SectionCtx, record};
use crate::autograd::{Var, mse_loss};
use crate::error::Result;
use crate::flops::FlopCounter;
use crate::nn::{Cruncher, Module};
use crate::optim::{AdaGrad, Optimizer};
use crate::tensor::{DType, Tensor};
use crate::trace::Unit;

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
    let (b, d, num_layers) = (2, 4, 2);
    cx.record("batch_size", b, Unit::Count)?;
    record!(cx, d, Unit::Count)?;
    record!(cx, num_layers, Unit::Count)?;
    let model = Cruncher::new(d, num_layers, &mut cx.rng)?.to_device(&cx.device)?;
    let lr = 0.01;
    let mut optimizer = AdaGrad::new(&model, lr)?;
    record!(cx, lr, Unit::None)?;
    cx.record("eps", optimizer.eps(), Unit::None)?;
    // The parameters before and after the step: one history, two states.
    let state = tensors_json(&model.state_dict())?;
    record!(cx, history state, Unit::None)?;

    let x = Var::constant(Tensor::randn(&[b, d], DType::F32, &mut cx.rng)?.to_device(&cx.device)?);
    let targets = [4.0, 5.0];
    cx.record("targets", targets.to_vec(), Unit::None)?;
    let y = Var::constant(Tensor::from_data(&targets, DType::F32)?.to_device(&cx.device)?);
    let counter = FlopCounter::start();
    let pred_y = model.forward(&x)?;
    let loss = mse_loss(&pred_y, &y)?;
    cx.record("loss", loss.value().item()?, Unit::None)?;
    // What the graph holds for backward (measured now: backward frees it).
    let saved = saved_for_backward(&loss, &model, &x, &y);
    loss.backward()?;
    let step_flops = counter.finish();
    let gradients = grads(&model);
    cx.record("grads", tensors_json(&gradients)?, Unit::None)?;
    let counter = FlopCounter::start();
    optimizer.step()?;
    let optimizer_flops = counter.finish();
    let state = tensors_json(&model.state_dict())?;
    record!(cx, history state, Unit::None)?;
    cx.record("g2_after", tensors_json(&optimizer.state())?, Unit::None)?;

    // Memory, by the lecture's formula (float32 everywhere).
    let num_parameters = (d * d * num_layers) + d;
    record!(cx, num_parameters, Unit::Count)?;
    let num_activations = b * d * num_layers;
    record!(cx, num_activations, Unit::Count)?;
    let num_gradients = num_parameters;
    record!(cx, num_gradients, Unit::Count)?;
    let num_optimizer_states = num_parameters;
    record!(cx, num_optimizer_states, Unit::Count)?;
    let bytes_per_float32 = 4;
    record!(cx, bytes_per_float32, Unit::Bytes)?;
    let total_memory = bytes_per_float32 * (num_parameters + num_activations + num_gradients + num_optimizer_states);
    record!(cx, total_memory, Unit::Bytes)?;

    // Memory the library actually held, by category.
    let activation_bytes: usize = saved.iter().filter(|s| s.kind == "activation").map(|s| s.bytes).sum();
    let measured = json!({
        "parameters": model.parameter_bytes(),
        "gradients": gradients.iter().map(|(_, g)| g.nbytes()).sum::<usize>(),
        "optimizer_state": optimizer.state_bytes(),
        "saved_activations": activation_bytes,
        "saved_inputs": saved.iter().filter(|s| s.kind != "activation").map(|s| s.bytes).sum::<usize>(),
    });
    let measured_total = ["parameters", "gradients", "optimizer_state", "saved_activations"]
        .iter()
        .filter_map(|k| measured[k].as_u64())
        .sum::<u64>();
    cx.record("measured_bytes", measured, Unit::None)?;
    cx.record("measured_total_memory", measured_total, Unit::Bytes)?;
    cx.record(
        "saved_for_backward",
        saved.iter().map(SavedInfo::to_json).collect::<Vec<_>>(),
        Unit::None,
    )?;

    // Compute: 2 FLOPs per (data point, parameter) forward, 4 backward.
    let flop_per_parameter_datum = 6;
    record!(cx, flop_per_parameter_datum, Unit::Flop)?;
    let flops = flop_per_parameter_datum * b * num_parameters;
    record!(cx, flops, Unit::Flop)?;
    let counted = step_flops.by_op.get("matmul").copied().unwrap_or(0);
    cx.record("counted_flops", counted, Unit::Flop)?;
    // x is data, so backward skips x.grad = h.grad @ W0ᵀ: 2·B·D·D fewer than the formula.
    cx.record(
        "counted_flops_x_requires_grad",
        counted_step_flops_with_input_grad(&model, &x, &y)?,
        Unit::Flop,
    )?;
    cx.record("counted_optimizer_flops", optimizer_flops.total(), Unit::Flop)?;
    optimizer.zero_grad();
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
