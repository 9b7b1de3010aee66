//! Section `custom_model`: A custom model.

use serde_json::json;

use crate::autograd::Var;
use crate::error::Result;
use crate::lecture::givens::given;
use crate::lecture::what_if::{Cost, Overhead};
use crate::lecture::{SectionCtx, record};
use crate::nn::{Cruncher, Module};
use crate::tensor::{DType, Tensor};

/// A custom model: `num_layers` D×D linear layers and a final D×1 head.
pub fn custom_model(cx: &mut SectionCtx) -> Result<()> {
    let d = given!(cx, d: Count = 64, count, "width of the Cruncher's layers")?;
    let num_layers = given!(cx, num_layers: Count = 2, count, "D×D layers before the head")?;
    let model = Cruncher::new(d, num_layers, &mut cx.rng)?;
    let params: Vec<serde_json::Value> = model
        .named_parameters()
        .iter()
        .map(|(name, p)| json!({"name": name, "shape": p.shape(), "numel": p.value().numel()}))
        .collect();
    record!(cx, computed param_sizes = serde_json::Value::Array(params))?;
    record!(cx, computed num_parameters = model.num_parameters())?;
    record!(cx, computed expected_num_parameters = Cruncher::expected_num_parameters(d, num_layers))?;

    // Move it to the run's device and run a batch through it.
    let model = model.to_device(&cx.device)?;
    record!(cx, device device = model.final_layer.weight.value().device().to_string())?;
    let b = given!(cx, batch_size: Count = 8, count, "data points run through the model")?;
    let x = Var::constant(Tensor::randn(&[b, d], DType::F32, &mut cx.rng)?.to_device(&cx.device)?);
    let y = model.forward(&x)?;
    let y_shape = y.shape().to_vec();
    record!(cx, computed y_shape)?;
    record!(cx, computed y = y.value())?;
    Ok(())
}

/// What a what-if of this section needs (`what_if::check_cost`), with each given as `get` reads it.
pub(super) fn cost(get: &dyn Fn(&str) -> f64) -> Cost {
    let (d, layers, b) = (get("d"), get("num_layers"), get("batch_size"));
    // The model and every layer's activations, and the layer being made: its normal draws in
    // f64 and two float32 copies while it is scaled (`Init::Xavier`), which at d = 46,340 was the
    // 8 GiB the estimate had left out.
    Cost {
        bytes: 4.0 * (layers * d * d + d + b * d * (layers + 2.0)) + 16.0 * d * d,
        flops: 2.0 * b * d * d * layers,
        trace_bytes: 0.0,
    }
}

/// Its fixed-cost steps (`what_if_overhead`): tensor ops and storage comparisons.
pub(super) fn overhead(get: &dyn Fn(&str) -> f64) -> Overhead {
    let layers = get("num_layers");
    // Creation, a forward pass, the parameter listing and counts.
    Overhead {
        ops: 12.0 * (layers + 1.0),
        comparisons: 0.0,
    }
}
