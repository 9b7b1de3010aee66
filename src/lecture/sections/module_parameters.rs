//! Section `module_parameters`: Parameters and initialisation.

use serde_json::json;

use crate::autograd::Var;
use crate::error::Result;
use crate::lecture::givens::given;
use crate::lecture::what_if::Cost;
use crate::lecture::{SectionCtx, check, record};
use crate::nn::{Init, TRUNCATION_SIGMAS};
use crate::rng::Rng;
use crate::tensor::{DType, Tensor};

/// Standard deviation of a tensor's elements (population form).
fn std_of(t: &Tensor) -> Result<f64> {
    let v = t.to_vec_f64()?;
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    Ok((v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt())
}

/// Parameters are tensors the optimizer changes. How they start matters: with unit-variance
/// weights every output of `x @ w` is a sum of input_dim terms and grows like √input_dim.
pub fn module_parameters(cx: &mut SectionCtx) -> Result<()> {
    let input_dim = given!(cx, input_dim: Count = 16384, count, "inputs of the linear layer x @ w")?;
    let output_dim = given!(cx, output_dim: Count = 32, count, "outputs of the linear layer")?;
    let x = Var::constant(Tensor::randn(&[input_dim], DType::F32, &mut cx.rng)?.to_device(&cx.device)?);

    // w ~ N(0, 1): outputs of size about √input_dim = 128.
    let w = Var::parameter(
        Init::Normal { std: 1.0 }
            .sample(&[input_dim, output_dim], DType::F32, &mut cx.rng)?
            .to_device(&cx.device)?,
    );
    let output = x.matmul(&w)?;
    record!(cx, computed output = output.value())?;
    record!(cx, computed output_std = std_of(output.value())?)?;
    let expected_output_std = (input_dim as f64).sqrt();
    record!(cx, computed expected_output_std)?;

    // w ~ N(0, 1/input_dim) (Xavier, up to a constant): outputs O(1).
    let w = Var::parameter(
        Init::Xavier
            .sample(&[input_dim, output_dim], DType::F32, &mut cx.rng)?
            .to_device(&cx.device)?,
    );
    let output = x.matmul(&w)?;
    record!(cx, computed xavier_output = output.value())?;
    record!(cx, computed xavier_output_std = std_of(output.value())?)?;

    // Truncated at ±3σ with σ = 1/√input_dim: no weight beyond 3σ.
    let sigma = 1.0 / (input_dim as f64).sqrt();
    record!(cx, computed sigma)?;
    record!(cx, given truncation_sigmas = TRUNCATION_SIGMAS)?;
    let w = Init::TruncatedXavier.sample(&[input_dim, output_dim], DType::F32, &mut cx.rng)?;
    let truncation_bound = TRUNCATION_SIGMAS * sigma;
    record!(cx, computed truncation_bound)?;
    let truncated_min = w.min_all()?.item()?;
    record!(cx, computed truncated_min)?;
    let truncated_max = w.max_all()?.item()?;
    record!(cx, computed truncated_max)?;
    check!(cx, within_the_bound: truncated_min.abs().max(truncated_max.abs()) <= truncation_bound)?;
    let output = x.matmul(&Var::parameter(w.to_device(&cx.device)?))?;
    record!(cx, computed truncated_output_std = std_of(output.value())?)?;
    // The original passes a=-3, b=3 as absolute bounds with std 1/128: 3 is 384σ, so nothing
    // is ever cut. Count how many of the untruncated Xavier weights lie beyond ±3 and ±3σ.
    let absolute_bound = 3.0;
    record!(cx, given absolute_bound)?;
    let absolute_bound_in_sigmas = absolute_bound / sigma;
    record!(cx, computed absolute_bound_in_sigmas)?;
    let untruncated = Init::Xavier
        .sample(&[input_dim, output_dim], DType::F32, &mut cx.rng)?
        .to_vec_f64()?;
    let beyond = |bound: f64| untruncated.iter().filter(|v| v.abs() > bound).count();
    record!(cx, computed weights_beyond_absolute_3 = beyond(absolute_bound))?;
    record!(cx, computed weights_beyond_3_sigma = beyond(TRUNCATION_SIGMAS * sigma))?;
    record!(cx, computed num_weights = untruncated.len())?;

    // For the chart: output std against input_dim, for both initialisations.
    let output_std_vs_input_dim = std_vs_input_dim(&mut cx.rng)?;
    record!(cx, computed output_std_vs_input_dim)?;
    Ok(())
}

/// Output std of `x @ w` for growing input_dim, with w ~ N(0, 1) and w ~ N(0, 1/input_dim),
/// over a batch of 64 inputs × 32 outputs each (2048 samples per point).
fn std_vs_input_dim(rng: &mut Rng) -> Result<serde_json::Value> {
    let mut points = Vec::new();
    for input_dim in [16usize, 64, 256, 1024, 4096, 16384] {
        let x = Tensor::randn(&[64, input_dim], DType::F32, rng)?;
        let normal = x.matmul(&Init::Normal { std: 1.0 }.sample(&[input_dim, 32], DType::F32, rng)?)?;
        let xavier = x.matmul(&Init::Xavier.sample(&[input_dim, 32], DType::F32, rng)?)?;
        points.push(json!({"input_dim": input_dim, "normal_std": std_of(&normal)?, "xavier_std": std_of(&xavier)?, "sqrt_input_dim": (input_dim as f64).sqrt()}));
    }
    Ok(serde_json::Value::Array(points))
}

/// What a what-if of this section needs (`what_if::check_cost`), with each given as `get` reads it.
pub(super) fn cost(get: &dyn Fn(&str) -> f64) -> Cost {
    let (i, o) = (get("input_dim"), get("output_dim"));
    // Four weight matrices (float32, one more as float64 to count its tails) and x.
    Cost {
        bytes: 4.0 * i + 4.0 * 3.0 * i * o + 8.0 * i * o,
        flops: 2.0 * i * o * 3.0,
        trace_bytes: 0.0,
    }
}
