//! The 2026 lecture's deep network: a stack of Linear + ReLU blocks, the model its memory
//! sections (gradient accumulation, checkpointing) use.

use crate::autograd::Var;
use crate::error::Result;
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
    let y = model.forward(&x)?;
    record!(cx, computed y_shape = y.shape().to_vec())?;
    record!(cx, computed y = y.value())?;
    // ReLU's mark on the output: a share of it is exactly zero, which no linear map would give.
    let out = y.value().to_vec_f64()?;
    let zero_fraction = out.iter().filter(|v| **v == 0.0).count() as f64 / out.len().max(1) as f64;
    record!(cx, computed zero_fraction, ratio)?;
    Ok(())
}

/// What a what-if of this section needs (`what_if::check_cost`), with each given as `get` reads it.
pub(super) fn cost(get: &dyn Fn(&str) -> f64) -> Cost {
    let (d, layers, b) = (get("d"), get("num_layers"), get("batch_size"));
    // The weights, the batch and each block's product and ReLU output.
    Cost {
        bytes: 4.0 * (layers * d * d + b * d * (2.0 * layers + 1.0)),
        flops: (2.0 * d + 1.0) * b * d * layers,
        trace_bytes: 2.0 * b * d * TRACE_BYTES_PER_NUMBER,
        recorded_elements: b * d,
    }
}

/// Its fixed-cost steps (`what_if_overhead`): tensor ops and storage comparisons.
pub(super) fn overhead(get: &dyn Fn(&str) -> f64) -> Overhead {
    Overhead {
        ops: 12.0 * (get("num_layers") + 1.0),
        comparisons: 0.0,
    }
}
