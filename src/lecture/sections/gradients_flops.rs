//! Section `gradients_flops`: Gradients: FLOPs.

use crate::autograd::Var;
use crate::error::Result;
use crate::flops::{FlopCount, FlopCounter};
use crate::lecture::{SectionCtx, check, record};
use crate::tensor::{DType, Tensor};
use crate::timing::{self, Budget, Clock};

/// The largest |a − b| over every element (the library has max and min, not abs).
fn largest_difference(a: &Tensor, b: &Tensor) -> Result<f64> {
    let d = a.sub(b)?;
    Ok(d.max_all()?.item()?.max(-d.min_all()?.item()?))
}

fn matmul_flops(count: &FlopCount) -> u64 {
    count.by_op.get("matmul").copied().unwrap_or(0)
}

/// A two-layer linear model x →w1→ h1 →w2→ h2, loss = mean(h2²). Forward: 2 FLOPs per
/// (data point, parameter). Backward: 4, because each matmul needs two more of the same size.
pub fn gradients_flops(cx: &mut SectionCtx) -> Result<()> {
    let (b, d, k) = super::tensor_operations_flops::linear_model_sizes(&cx.device);
    record!(cx, given B = b)?;
    record!(cx, given D = d)?;
    record!(cx, given K = k)?;
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
    record!(cx, given flop_per_multiply_add, flop)?;
    let num_forward_flops = (flop_per_multiply_add * b * d * d) + (flop_per_multiply_add * b * d * k);
    record!(cx, computed num_forward_flops, flop)?;
    // Per parameter (D·D + D·K) per data point (B).
    let num_parameters = d * d + d * k;
    let forward_flop_per_parameter_datum = num_forward_flops / (b * num_parameters);
    record!(cx, computed forward_flop_per_parameter_datum, flop)?;
    let counter = FlopCounter::start();
    let loss = forward(&Var::constant(x.clone()))?;
    let counted = counter.finish();
    let counted_forward_flops = matmul_flops(&counted);
    record!(cx, computed counted_forward_flops, flop)?;
    check!(cx, forward_counter_agrees: counted_forward_flops == num_forward_flops as u64)?;
    // The elementwise square and the mean add one FLOP per element of h2: small next to matmuls.
    record!(cx, computed counted_forward_flops_all_ops = counted.forward, flop)?;

    // Backward, by the chain rule, one matmul per gradient, added up term by term (a history:
    // the count after each term is kept).
    let mut num_backward_flops = 0;
    record!(cx, computed history num_backward_flops, flop)?;
    num_backward_flops += flop_per_multiply_add * b * d * k; // w2.grad = h1ᵀ @ h2.grad
    record!(cx, computed history num_backward_flops, flop)?;
    num_backward_flops += flop_per_multiply_add * b * d * k; // h1.grad = h2.grad @ w2ᵀ
    record!(cx, computed history num_backward_flops, flop)?;
    num_backward_flops += flop_per_multiply_add * b * d * d; // w1.grad = xᵀ @ h1.grad
    record!(cx, computed history num_backward_flops, flop)?;
    num_backward_flops += flop_per_multiply_add * b * d * d; // x.grad = h1.grad @ w1ᵀ
    record!(cx, computed history num_backward_flops, flop)?;
    let backward_flop_per_parameter_datum = num_backward_flops / (b * num_parameters);
    record!(cx, computed backward_flop_per_parameter_datum, flop)?;
    let step_flop_per_parameter_datum = (num_forward_flops + num_backward_flops) / (b * num_parameters);
    record!(cx, computed step_flop_per_parameter_datum, flop)?;
    let backward_to_forward_ratio = num_backward_flops as f64 / num_forward_flops as f64;
    record!(cx, computed backward_to_forward_ratio, ratio)?;
    check!(cx, backward_twice_forward: num_backward_flops == 2 * num_forward_flops)?;

    let counter = FlopCounter::start();
    loss.backward()?;
    let counted = counter.finish();
    // x is data: nothing asked for its gradient, so the last matmul is never run.
    let counted_backward_flops = matmul_flops(&counted);
    record!(cx, computed counted_backward_flops, flop)?;
    record!(cx, computed counted_backward_flops_all_ops = counted.backward, flop)?;
    let backward_flops_skipped = num_backward_flops as u64 - counted_backward_flops;
    record!(cx, computed backward_flops_skipped, flop)?;
    check!(cx, skipped_is_x_grad: backward_flops_skipped == (flop_per_multiply_add * b * d * d) as u64)?;
    let skipped_explanation = "x needs no gradient, so backward skips x.grad = h1.grad @ w1ᵀ (2·B·D·D FLOPs)";
    record!(cx, given skipped_explanation)?;

    // With x requiring a gradient the count meets the formula.
    w1.zero_grad();
    w2.zero_grad();
    let loss = forward(&Var::parameter(x.clone()))?;
    let counter = FlopCounter::start();
    loss.backward()?;
    let counted_backward_flops_x_requires_grad = matmul_flops(&counter.finish());
    record!(cx, computed counted_backward_flops_x_requires_grad, flop)?;
    check!(cx, backward_counter_agrees: counted_backward_flops_x_requires_grad == num_backward_flops as u64)?;

    // The chain rule by hand against autograd (2026's check), on the second layer h2 = h1 @ w2:
    // h1.grad = h2.grad @ w2ᵀ and w2.grad = h1ᵀ @ h2.grad, from the h2.grad backward kept.
    w2.zero_grad();
    let h1 = Var::constant(x.clone()).matmul(&w1)?;
    h1.retain_grad();
    let h2 = h1.matmul(&w2)?;
    h2.retain_grad();
    h2.pow_scalar(2.0)?.mean_all()?.backward()?;
    let (Some(h1_grad), Some(h2_grad), Some(w2_grad)) = (h1.grad(), h2.grad(), w2.grad()) else {
        return Err(crate::error::Error::InvalidArgument {
            op: "gradients_flops",
            msg: "backward left h1, h2 or w2 without a gradient".into(),
        });
    };
    let h1_grad_by_hand = h2_grad.matmul(&w2.value().t()?)?;
    let w2_grad_by_hand = h1.value().t()?.matmul(&h2_grad)?;
    // A corner of each (the whole is B×D and D×K), so the two can be read side by side.
    let corner = |t: &Tensor| t.narrow(0, 0, 2)?.narrow(1, 0, 4)?.contiguous();
    record!(cx, rounding h1_grad_autograd = &corner(&h1_grad)?)?;
    record!(cx, rounding h1_grad_by_hand = &corner(&h1_grad_by_hand)?)?;
    record!(cx, rounding w2_grad_autograd = &corner(&w2_grad)?)?;
    record!(cx, rounding w2_grad_by_hand = &corner(&w2_grad_by_hand)?)?;
    let h1_grad_max_difference = largest_difference(&h1_grad, &h1_grad_by_hand)?;
    record!(cx, rounding h1_grad_max_difference)?;
    let w2_grad_max_difference = largest_difference(&w2_grad, &w2_grad_by_hand)?;
    record!(cx, rounding w2_grad_max_difference)?;
    // How large the gradients are, for the differences to be read against.
    let h1_grad_max_abs = largest_difference(&h1_grad, &h1_grad.mul_scalar(0.0)?)?;
    record!(cx, rounding h1_grad_max_abs)?;
    let w2_grad_max_abs = largest_difference(&w2_grad, &w2_grad.mul_scalar(0.0)?)?;
    record!(cx, rounding w2_grad_max_abs)?;
    // Any order of the same float32 products agrees to about a millionth of the largest element.
    check!(cx, h1_by_hand_agrees: 1e6 * h1_grad_max_difference <= h1_grad_max_abs)?;
    check!(cx, w2_by_hand_agrees: 1e6 * w2_grad_max_difference <= w2_grad_max_abs)?;
    drop((h1, h2, h1_grad, h2_grad, w2_grad, h1_grad_by_hand, w2_grad_by_hand));

    // Time both passes in turns, so a busy moment slows both (the backward needs a fresh graph
    // each time, built untimed). A pass that outlasts the time budget still gets the minimum
    // number of repetitions.
    let clock = Clock::for_device(&cx.device);
    let mut forward_pass = timing::contender(clock.clone(), || forward(&Var::constant(x.clone())).map(drop));
    let mut backward_pass = timing::contender_with_setup(
        clock.clone(),
        || {
            // Fresh gradients each time, so no accumulation (an extra add) is timed.
            w1.zero_grad();
            w2.zero_grad();
            forward(&Var::constant(x.clone()))
        },
        |loss: Var| loss.backward(),
    );
    // Where backward's time goes: the products its autograd runs (`matmul_backward`: `g @ bᵀ`
    // and `aᵀ @ g`, on transposed views), run on plain tensors outside any graph, in the same
    // turns. What backward takes beyond them is the autograd's own work (walking the graph, the
    // square's and mean's gradients, filling `.grad`); their rate against forward's says what the
    // hardware makes of the transposed operands. Any tensors of the gradients' shapes will do: h1
    // stands for h1.grad, h1 @ w2 for h2.grad.
    let h1 = x.matmul(w1.value())?;
    let h2 = h1.matmul(w2.value())?;
    let mut backward_products = timing::contender(clock, || {
        h1.t()?.matmul(&h2)?; // w2.grad = h1ᵀ @ h2.grad
        h2.matmul(&w2.value().t()?)?; // h1.grad = h2.grad @ w2ᵀ
        x.t()?.matmul(&h1).map(drop) // w1.grad = xᵀ @ h1.grad
    });
    let times = timing::in_turns(
        Budget::lecture(),
        &mut [&mut forward_pass, &mut backward_pass, &mut backward_products],
    )?;
    let (forward_time, backward_time, backward_products_time) = (times[0], times[1], times[2]);
    record!(cx, clock forward_time = forward_time.median_s, seconds)?;
    record!(cx, clock forward_time_spread = forward_time.to_json())?;
    record!(cx, clock backward_time = backward_time.median_s, seconds)?;
    record!(cx, clock backward_time_spread = backward_time.to_json())?;
    let measured_backward_to_forward_ratio = backward_time.median_s / forward_time.median_s;
    record!(cx, clock measured_backward_to_forward_ratio, ratio)?;
    record!(cx, clock backward_products_time = backward_products_time.median_s, seconds)?;
    record!(cx, clock backward_products_time_spread = backward_products_time.to_json())?;
    let backward_products_share = backward_products_time.median_s / backward_time.median_s;
    record!(cx, clock backward_products_share, ratio)?;
    // Matrix products' FLOPs over each time (forward's square and mean are a few more).
    let forward_flop_per_sec = counted_forward_flops as f64 / forward_time.median_s;
    record!(cx, clock forward_flop_per_sec, flop_per_sec)?;
    let backward_products_flop_per_sec = counted_backward_flops as f64 / backward_products_time.median_s;
    record!(cx, clock backward_products_flop_per_sec, flop_per_sec)?;
    Ok(())
}
