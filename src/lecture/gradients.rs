//! Gradients: what backward computes, and what it costs in FLOPs.

use super::{SectionCtx, record};
use crate::autograd::Var;
use crate::error::Result;
use crate::flops::{FlopCount, FlopCounter};
use crate::tensor::{DType, Tensor};
use crate::timing::{self, Budget, Clock};
use crate::trace::Unit;

/// Forward: compute a loss. Backward: compute the gradient of the loss with respect to each
/// parameter, by the chain rule, from the loss back to the leaves.
pub fn gradients_basics(cx: &mut SectionCtx) -> Result<()> {
    let (x_data, w_data, target) = ([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], 5.0);
    cx.record("x", x_data.to_vec(), Unit::None)?;
    cx.record("w", w_data.to_vec(), Unit::None)?;
    record!(cx, target, Unit::None)?;
    let x = Var::constant(Tensor::from_data(&x_data, DType::F32)?.to_device(&cx.device)?);
    let w = Var::parameter(Tensor::from_data(&w_data, DType::F32)?.to_device(&cx.device)?); // want a gradient
    let pred_y = x.matmul(&w)?;
    cx.record("residual", pred_y.value().item()? - target, Unit::None)?;
    let loss = pred_y.sub_scalar(target)?.pow_scalar(2.0)?.mul_scalar(0.5)?;
    cx.record("loss", loss.value().item()?, Unit::None)?;

    loss.backward()?;
    // ∂loss/∂w = (x·w − 5)·x = 1·x.
    match w.grad() {
        Some(g) => cx.record_tensor("w_grad", &g)?,
        None => cx.record("w_grad", "none", Unit::None)?,
    }
    // Only leaves that asked for one get a gradient: not the data, not the intermediate.
    cx.record("x_grad_is_none", x.grad().is_none(), Unit::None)?;
    cx.record("pred_y_grad_is_none", pred_y.grad().is_none(), Unit::None)?;
    Ok(())
}

fn matmul_flops(count: &FlopCount) -> u64 {
    count.by_op.get("matmul").copied().unwrap_or(0)
}

/// A two-layer linear model x →w1→ h1 →w2→ h2, loss = mean(h2²). Forward: 2 FLOPs per
/// (data point, parameter). Backward: 4, because each matmul needs two more of the same size.
pub fn gradients_flops(cx: &mut SectionCtx) -> Result<()> {
    let (b, d, k) = super::compute::linear_model_sizes(&cx.device);
    cx.record("B", b, Unit::Count)?;
    cx.record("D", d, Unit::Count)?;
    cx.record("K", k, Unit::Count)?;
    // Drawn where they are used (on a GPU, w1 alone is 4 GiB: drawn on the host it would have to
    // cross the bus as well).
    let x = Tensor::randn_on(&[b, d], DType::F32, &cx.device, &mut cx.rng)?;
    let w1 = Var::parameter(Tensor::randn_on(&[d, d], DType::F32, &cx.device, &mut cx.rng)?);
    let w2 = Var::parameter(Tensor::randn_on(&[d, k], DType::F32, &cx.device, &mut cx.rng)?);
    let forward = |x: &Var| -> Result<Var> {
        let h1 = x.matmul(&w1)?;
        let h2 = h1.matmul(&w2)?;
        h2.pow_scalar(2.0)?.mean_all()
    };

    // Forward: two matmuls, each 2 FLOPs (a multiply and an add) per multiply-add.
    let flop_per_multiply_add = 2;
    record!(cx, flop_per_multiply_add, Unit::Flop)?;
    let num_forward_flops = (flop_per_multiply_add * b * d * d) + (flop_per_multiply_add * b * d * k);
    record!(cx, num_forward_flops, Unit::Flop)?;
    // Per parameter (D·D + D·K) per data point (B).
    let num_parameters = d * d + d * k;
    cx.record(
        "forward_flop_per_parameter_datum",
        num_forward_flops / (b * num_parameters),
        Unit::Flop,
    )?;
    let counter = FlopCounter::start();
    let loss = forward(&Var::constant(x.clone()))?;
    let counted = counter.finish();
    cx.record("counted_forward_flops", matmul_flops(&counted), Unit::Flop)?;
    // The elementwise square and the mean add one FLOP per element of h2: small next to matmuls.
    cx.record("counted_forward_flops_all_ops", counted.forward, Unit::Flop)?;

    // Backward, by the chain rule, one matmul per gradient, added up term by term (a history:
    // the count after each term is kept).
    let mut num_backward_flops = 0;
    record!(cx, history num_backward_flops, Unit::Flop)?;
    num_backward_flops += flop_per_multiply_add * b * d * k; // w2.grad = h1ᵀ @ h2.grad
    record!(cx, history num_backward_flops, Unit::Flop)?;
    num_backward_flops += flop_per_multiply_add * b * d * k; // h1.grad = h2.grad @ w2ᵀ
    record!(cx, history num_backward_flops, Unit::Flop)?;
    num_backward_flops += flop_per_multiply_add * b * d * d; // w1.grad = xᵀ @ h1.grad
    record!(cx, history num_backward_flops, Unit::Flop)?;
    num_backward_flops += flop_per_multiply_add * b * d * d; // x.grad = h1.grad @ w1ᵀ
    record!(cx, history num_backward_flops, Unit::Flop)?;
    cx.record(
        "backward_flop_per_parameter_datum",
        num_backward_flops / (b * num_parameters),
        Unit::Flop,
    )?;
    cx.record(
        "step_flop_per_parameter_datum",
        (num_forward_flops + num_backward_flops) / (b * num_parameters),
        Unit::Flop,
    )?;
    cx.record(
        "backward_to_forward_ratio",
        num_backward_flops as f64 / num_forward_flops as f64,
        Unit::Ratio,
    )?;

    let counter = FlopCounter::start();
    loss.backward()?;
    let counted = counter.finish();
    // x is data: nothing asked for its gradient, so the last matmul is never run.
    cx.record("counted_backward_flops", matmul_flops(&counted), Unit::Flop)?;
    cx.record("counted_backward_flops_all_ops", counted.backward, Unit::Flop)?;
    cx.record(
        "backward_flops_skipped",
        num_backward_flops as u64 - matmul_flops(&counted),
        Unit::Flop,
    )?;
    cx.record(
        "skipped_explanation",
        "x needs no gradient, so backward skips x.grad = h1.grad @ w1ᵀ (2·B·D·D FLOPs)",
        Unit::None,
    )?;

    // With x requiring a gradient the count meets the formula.
    w1.zero_grad();
    w2.zero_grad();
    let loss = forward(&Var::parameter(x.clone()))?;
    let counter = FlopCounter::start();
    loss.backward()?;
    cx.record(
        "counted_backward_flops_x_requires_grad",
        matmul_flops(&counter.finish()),
        Unit::Flop,
    )?;

    // Time both passes in turns, so a busy moment slows both (the backward needs a fresh graph
    // each time, built untimed). A pass that outlasts the time budget still gets the minimum
    // number of repetitions.
    let clock = Clock::for_device(&cx.device);
    let mut forward_pass = timing::contender(clock.clone(), || forward(&Var::constant(x.clone())).map(drop));
    let mut backward_pass = timing::contender_with_setup(
        clock,
        || {
            // Fresh gradients each time, so no accumulation (an extra add) is timed.
            w1.zero_grad();
            w2.zero_grad();
            forward(&Var::constant(x.clone()))
        },
        |loss: Var| loss.backward(),
    );
    let times = timing::in_turns(Budget::lecture(), &mut [&mut forward_pass, &mut backward_pass])?;
    let (forward_time, backward_time) = (times[0], times[1]);
    cx.record("forward_time", forward_time.median_s, Unit::Seconds)?;
    cx.record_timed("forward_time_spread", forward_time.to_json(), Unit::None)?;
    cx.record("backward_time", backward_time.median_s, Unit::Seconds)?;
    cx.record_timed("backward_time_spread", backward_time.to_json(), Unit::None)?;
    cx.record_timed(
        "measured_backward_to_forward_ratio",
        backward_time.median_s / forward_time.median_s,
        Unit::Ratio,
    )?;
    Ok(())
}
