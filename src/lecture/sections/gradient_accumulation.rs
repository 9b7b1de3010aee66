//! Gradient accumulation: a large batch's gradient from several small ones, so that only a
//! micro-batch's activations are alive at once.

use serde_json::json;

use crate::autograd::{Var, mse_loss};
use crate::device::{Device, max_memory};
use crate::error::{Error, Result};
use crate::flops::FlopCounter;
use crate::lecture::givens::{MAX_COUNT, Narrower, given};
use crate::lecture::what_if::{Cost, Overhead};
use crate::lecture::{SectionCtx, check, record};
use crate::nn::{DeepNetwork, Module};
use crate::optim::{Optimizer, Sgd};
use crate::tensor::{DType, Tensor};
use crate::timing::{self, Budget, Clock};

/// One step of SGD on the batch `(x, y)` in `k` micro-batches: each runs forward and backward and
/// adds its gradient to what the parameters hold (no zeroing in between), then one update. Each
/// micro-batch's loss is scaled by 1/k, so that the sum of their gradients is the gradient of the
/// full batch's mean loss.
fn accumulated_step(model: &DeepNetwork, opt: &mut Sgd, x: &Tensor, y: &Tensor, k: usize) -> Result<()> {
    let micro = x.shape()[0] / k;
    for i in 0..k {
        let xs = Var::constant(x.narrow(0, i * micro, micro)?);
        let ys = Var::constant(y.narrow(0, i * micro, micro)?);
        let loss = mse_loss(&model.forward(&xs)?, &ys)?.div_scalar(k as f64)?;
        loss.backward()?;
    }
    opt.step()
}

/// What one way of taking the step measured.
struct Measured {
    peak: usize,
    activation: usize,
    matmul_flops: u64,
    other_flops: u64,
    grads: Vec<Tensor>,
}

/// One step on a fresh copy of `model` in `k` micro-batches, its memory's high-water mark and
/// its FLOPs, and, apart, the high-water mark of one micro-batch's forward pass with its graph
/// kept (the activations backward will need).
fn measure(device: &Device, model: &DeepNetwork, x: &Tensor, y: &Tensor, k: usize, lr: f64) -> Result<Measured> {
    let micro = x.shape()[0] / k;
    let copy = model.deep_clone()?;
    let (loss, forward) = max_memory(device, || {
        let xs = Var::constant(x.narrow(0, 0, micro)?);
        let ys = Var::constant(y.narrow(0, 0, micro)?);
        mse_loss(&copy.forward(&xs)?, &ys)
    })?;
    drop(loss);
    let mut opt = Sgd::new(&copy, lr)?;
    let counter = FlopCounter::start();
    let ((), step) = max_memory(device, || accumulated_step(&copy, &mut opt, x, y, k))?;
    let flops = counter.finish();
    let matmul_flops = flops.by_op.get("matmul").copied().unwrap_or(0);
    let grads = copy.named_parameters().iter().filter_map(|(_, p)| p.grad()).collect();
    Ok(Measured {
        peak: step.added(),
        activation: forward.added(),
        matmul_flops,
        other_flops: flops.total() - matmul_flops,
        grads,
    })
}

/// The largest difference between two lists of gradients, element by element.
fn largest_difference(a: &[Tensor], b: &[Tensor]) -> Result<f64> {
    let mut largest = 0.0f64;
    for (ga, gb) in a.iter().zip(b) {
        for (p, q) in ga.to_vec_f64()?.iter().zip(gb.to_vec_f64()?) {
            largest = largest.max((p - q).abs());
        }
    }
    Ok(largest)
}

/// What this section asks of two givens beyond their types (`givens::Narrower`): the batch splits
/// into 1, 2, 4, … up to `max_micro_batches` equal micro-batches, so that number is a power of two
/// that divides the batch. Each given is held alone, so both are narrowed to what always fits
/// together (`batch_size=1` with the default of 8 micro-batches ran, and then failed).
pub(super) const NARROWERS: &[Narrower] = &[
    Narrower {
        name: "batch_size",
        words: "a whole number of data points from 8 to 2⁵³ (about 9.0e15), a multiple of 8",
        holds: |x| (8.0..=MAX_COUNT).contains(&x) && x % 8.0 == 0.0,
    },
    Narrower {
        name: "max_micro_batches",
        words: "1, 2, 4 or 8 micro-batches",
        holds: |x| [1.0, 2.0, 4.0, 8.0].contains(&x),
    },
];

/// Activation memory grows with the batch; parameters and gradients do not. Accumulating the
/// gradients of k micro-batches before one update takes the same step with the activations of
/// one micro-batch alive at a time.
pub fn gradient_accumulation(cx: &mut SectionCtx) -> Result<()> {
    // The lecture's sizes on a GPU. On a CPU a wider batch and narrower blocks, so that the step
    // stays short and the activations, not the gradients, are most of its memory.
    let b = given!(cx, batch_size: Count = device => if device.is_cuda() { 64usize } else { 512 }, count, "data points in the full batch")?;
    let d =
        given!(cx, d: Count = device => if device.is_cuda() { 1024usize } else { 128 }, count, "width of every block")?;
    let num_layers = given!(cx, num_layers: Count = device => if device.is_cuda() { 16usize } else { 8 }, count, "Linear + ReLU blocks")?;
    let max_micro_batches =
        given!(cx, max_micro_batches: Count = 8, count, "the most micro-batches tried (1, 2, 4, … up to it)")?;
    if b % max_micro_batches != 0 || !max_micro_batches.is_power_of_two() {
        return Err(Error::invalid(
            "gradient_accumulation",
            format!("max_micro_batches ({max_micro_batches}) must be a power of two that divides batch_size ({b})"),
        ));
    }
    let lr = 0.01;
    record!(cx, given lr)?;
    let model = DeepNetwork::on(d, num_layers, &cx.device, &mut cx.rng)?;
    let x = Tensor::randn(&[b, d], DType::F32, &mut cx.rng)?.to_device(&cx.device)?;
    let y = Tensor::randn(&[b, d], DType::F32, &mut cx.rng)?.to_device(&cx.device)?;
    let parameter_bytes = model.parameter_bytes();
    record!(cx, computed parameter_bytes, bytes)?;
    // What the lecture computes: one float32 B × D tensor per layer for each of the matmul's
    // output (the ReLU's input) and the ReLU's output (the next matmul's input).
    let formula_activation_bytes = 2 * b * d * num_layers * 4;
    record!(cx, computed formula_activation_bytes, bytes)?;

    let ks: Vec<usize> = (0..=max_micro_batches.trailing_zeros()).map(|p| 1 << p).collect();
    let mut rows = Vec::new();
    let mut measured = Vec::new();
    for &k in &ks {
        measured.push(measure(&cx.device, &model, &x, &y, k, lr)?);
    }
    let full = &measured[0];
    // Micro-batches split the rows of each product, so the work is the same for every k.
    let matmul_flops_by_k: Vec<u64> = measured.iter().map(|m| m.matmul_flops).collect();
    check!(cx, same_flops_for_every_k: matmul_flops_by_k == vec![full.matmul_flops; ks.len()])?;

    // Time per sample: each way of taking the step, in turns, on its own copy of the model.
    let clock = Clock::for_device(&cx.device);
    let copies: Vec<(DeepNetwork, std::cell::RefCell<Sgd>)> = ks
        .iter()
        .map(|_| {
            let c = model.deep_clone()?;
            let opt = Sgd::new(&c, lr)?;
            Ok((c, std::cell::RefCell::new(opt)))
        })
        .collect::<Result<_>>()?;
    let mut contenders: Vec<_> = ks
        .iter()
        .zip(&copies)
        .map(|(&k, (c, opt))| {
            let (x, y) = (&x, &y);
            timing::contender(clock.clone(), move || {
                let mut opt = opt.borrow_mut();
                accumulated_step(c, &mut opt, x, y, k)?;
                opt.zero_grad();
                Ok(())
            })
        })
        .collect();
    let mut turns: Vec<timing::Contender<'_>> = contenders.iter_mut().map(|c| c as timing::Contender<'_>).collect();
    let budget = Budget {
        min_time: std::time::Duration::from_millis(100),
        ..Budget::lecture()
    };
    let times = timing::in_turns(budget, &mut turns)?;

    for ((&k, m), t) in ks.iter().zip(&measured).zip(&times) {
        rows.push(json!({
            "micro_batches": k,
            "micro_batch_size": b / k,
            "peak_bytes": m.peak,
            "activation_bytes": m.activation,
            "matmul_flops": m.matmul_flops,
            "other_flops": m.other_flops,
            "seconds_per_sample": t.median_s / b as f64,
            "largest_gradient_difference": largest_difference(&m.grads, &full.grads)?,
        }));
    }
    record!(cx, clock accumulation = serde_json::Value::Array(rows))?;
    let last = &measured[measured.len() - 1];
    // The headline numbers, full batch against the most micro-batches, for the chapter's claims.
    record!(cx, computed full_batch_peak = full.peak, bytes)?;
    record!(cx, computed accumulated_peak = last.peak, bytes)?;
    record!(cx, computed full_batch_activation = full.activation, bytes)?;
    record!(cx, computed accumulated_activation = last.activation, bytes)?;
    record!(cx, computed step_matmul_flops = full.matmul_flops, flop)?;
    record!(cx, rounding largest_gradient_difference = largest_difference(&last.grads, &full.grads)?)?;
    // How much each part fell from the full batch to the most micro-batches: the chapter's
    // claims compare these with k.
    record!(cx, computed peak_ratio = full.peak as f64 / last.peak.max(1) as f64, ratio)?;
    record!(cx, computed activation_ratio = full.activation as f64 / last.activation.max(1) as f64, ratio)?;
    let (first_time, last_time) = (times[0].median_s, times[times.len() - 1].median_s);
    record!(cx, clock time_ratio = last_time / first_time, ratio)?;
    let gradient_bytes: usize = full.grads.iter().map(Tensor::nbytes).sum();
    record!(cx, computed gradient_bytes, bytes)?;
    Ok(())
}

/// What a what-if of this section needs (`what_if::check_cost`), with each given as `get` reads it.
pub(super) fn cost(get: &dyn Fn(&str) -> f64) -> Cost {
    let (b, d, layers, k) = (get("batch_size"), get("d"), get("num_layers"), get("max_micro_batches"));
    // The model and its copies (one per k, each with gradients), the batch and its
    // targets, and the full batch's activations. Each way of taking the step runs once
    // measured and, timed in turns for 0.1 s each, about ten more times; a step is
    // 6·B·D²·L FLOPs whatever k is.
    let ways = k.log2().floor() + 1.0;
    Cost {
        bytes: 4.0 * (2.0 * (2.0 * ways + 1.0) * layers * d * d + 2.0 * b * d + 2.0 * b * d * layers),
        flops: ways * 11.0 * 6.0 * b * d * d * layers,
        trace_bytes: 0.0,
    }
}

/// Its fixed-cost steps (`what_if_overhead`): tensor ops and storage comparisons.
pub(super) fn overhead(get: &dyn Fn(&str) -> f64) -> Overhead {
    // Per way of taking the step (k = 1, 2, 4, …), about eleven steps of k micro-batches,
    // each a forward and backward of about eight ops a block, and a model copy.
    let (layers, k) = (get("num_layers"), get("max_micro_batches"));
    Overhead {
        ops: 11.0 * 2.0 * k * 8.0 * (layers + 1.0) + 100.0,
        comparisons: 0.0,
    }
}
