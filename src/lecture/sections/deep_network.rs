//! The 2026 lecture's deep network: a stack of Linear + ReLU blocks, the model its memory
//! sections (gradient accumulation, checkpointing) use.

use crate::autograd::{Var, mse_loss};
use crate::error::Result;
use crate::flops::FlopCounter;
use crate::lecture::givens::given;
use crate::lecture::what_if::{Cost, Overhead, TRACE_BYTES_PER_NUMBER};
use crate::lecture::{SectionCtx, check, record};
use crate::nn::{DeepNetwork, Module};
use crate::tensor::{DType, Tensor};

/// L blocks, each `relu(x @ W)` with W of shape D×D: D·D·L parameters, and a D-vector in and out.
pub fn deep_network(cx: &mut SectionCtx) -> Result<()> {
    let d = given!(cx, d: Count = 8, count, "width of the input, every activation and the output")?;
    let num_layers = given!(cx, num_layers: Count = 3, count, "Linear + ReLU blocks")?;
    let model = DeepNetwork::on(d, num_layers, &cx.device, &mut cx.rng)?;
    let num_parameters = model.num_parameters();
    record!(cx, computed num_parameters)?;
    let expected_num_parameters = DeepNetwork::expected_num_parameters(d, num_layers);
    record!(cx, computed expected_num_parameters)?;
    check!(cx, parameters_as_formula: num_parameters == expected_num_parameters)?;

    // A batch of data through it.
    let b = given!(cx, batch_size: Count = 4, count, "data points run through the network")?;
    let x = Var::constant(Tensor::randn(&[b, d], DType::F32, &mut cx.rng)?.to_device(&cx.device)?);
    record!(cx, computed x = x.value())?;
    let counter = FlopCounter::start();
    let y = model.forward(&x)?;
    let forward = counter.finish();
    record!(cx, computed y_shape = y.shape().to_vec())?;
    record!(cx, computed y = y.value())?;
    // ReLU's mark on the output: a share of it is exactly zero, which no linear map would give.
    let out = y.value().to_vec_f64()?;
    let zero_fraction = out.iter().filter(|v| **v == 0.0).count() as f64 / out.len().max(1) as f64;
    record!(cx, computed zero_fraction, ratio)?;

    // Forward FLOPs, counted by the ops as they ran: each block's product (2·B·D·D) and its
    // ReLU (one per output element).
    let forward_flops = forward.forward;
    record!(cx, computed forward_flops, flop)?;
    let formula_forward_flops = (num_layers * (2 * b * d * d + b * d)) as u64;
    record!(cx, computed formula_forward_flops, flop)?;
    check!(cx, forward_flops_as_formula: forward_flops == formula_forward_flops)?;

    // Backward needs a scalar to start from: the mean squared distance to a random target.
    let target = Var::constant(Tensor::randn(&[b, d], DType::F32, &mut cx.rng)?.to_device(&cx.device)?);
    let loss = mse_loss(&y, &target)?;
    // What the graph keeps for backward, counted from its saved tensors (parameters and data
    // are held anyway). Each block's ReLU keeps its input, the product, to know where it was
    // positive; each product keeps its input, which past the first block is the ReLU output
    // before it (the first block's is the data); the loss keeps its differences.
    let params: Vec<Tensor> = model.state_dict().into_iter().map(|(_, t)| t).collect();
    let data = [x.value().clone(), target.value().clone()];
    let activation_bytes = crate::lecture::graph::graph_bytes(&loss, &params, &data, &[]);
    record!(cx, computed activation_bytes, bytes)?;
    let bytes_per_float32 = 4;
    let kept_tensors = num_layers + num_layers.saturating_sub(1) + 1;
    let formula_activation_bytes = kept_tensors * b * d * bytes_per_float32;
    record!(cx, computed formula_activation_bytes, bytes)?;
    check!(cx, activations_as_formula: activation_bytes == formula_activation_bytes)?;
    // The lecture's count: two B × D tensors per block, the product and the ReLU's output.
    let lecture_activation_bytes = 2 * num_layers * b * d * bytes_per_float32;
    record!(cx, computed lecture_activation_bytes, bytes)?;

    let counter = FlopCounter::start();
    loss.backward()?;
    let backward = counter.finish();
    let backward_matmul_flops = backward.by_op.get("matmul").copied().unwrap_or(0);
    record!(cx, computed backward_matmul_flops, flop)?;
    let forward_matmul_flops = forward.by_op.get("matmul").copied().unwrap_or(0);
    record!(cx, computed forward_matmul_flops, flop)?;
    // Two products per block (the weight's gradient and the gradient sent back to the block's
    // input), except the first block: its input is the data, which needs no gradient.
    let formula_backward_matmul_flops = (num_layers.saturating_mul(2).saturating_sub(1) * 2 * b * d * d) as u64;
    record!(cx, computed formula_backward_matmul_flops, flop)?;
    check!(cx, backward_flops_as_formula: backward_matmul_flops == formula_backward_matmul_flops)?;
    let backward_over_forward = backward_matmul_flops as f64 / forward_matmul_flops.max(1) as f64;
    record!(cx, computed backward_over_forward, ratio)?;

    // Gradients: one per parameter, of the parameter's shape and dtype.
    let parameter_bytes = model.parameter_bytes();
    record!(cx, computed parameter_bytes, bytes)?;
    let gradient_bytes: usize = model.named_parameters().iter().filter_map(|(_, p)| p.grad()).map(|g| g.nbytes()).sum();
    record!(cx, computed gradient_bytes, bytes)?;
    check!(cx, gradients_as_parameters: gradient_bytes == parameter_bytes)?;
    Ok(())
}

/// What a what-if of this section needs (`what_if::check_cost`), with each given as `get` reads it.
pub(super) fn cost(get: &dyn Fn(&str) -> f64) -> Cost {
    let (d, layers, b) = (get("d"), get("num_layers"), get("batch_size"));
    // The weights and their gradients, the batch and its target, and each block's product,
    // ReLU output and the gradients sent back through them.
    Cost {
        bytes: 4.0 * (2.0 * layers * d * d + b * d * (4.0 * layers + 2.0)),
        // Forward (product and ReLU), then backward: two products and a ReLU mask per block.
        flops: (2.0 * d + 1.0) * b * d * layers + (4.0 * d + 1.0) * b * d * layers,
        // The batch and the output, each listed whole up to the limit (a summary past it).
        trace_bytes: 2.0 * (b * d).min(crate::lecture::recorder::MAX_RECORDED_ELEMENTS as f64) * TRACE_BYTES_PER_NUMBER,
    }
}

/// Its fixed-cost steps (`what_if_overhead`): tensor ops and storage comparisons.
pub(super) fn overhead(get: &dyn Fn(&str) -> f64) -> Overhead {
    Overhead {
        ops: 24.0 * (get("num_layers") + 1.0),
        comparisons: 0.0,
    }
}
