//! The training loop: a linear model trained on data from a known linear function, with SGD and
//! AdaGrad at several learning rates.

use serde_json::json;

use crate::error::Result;
use crate::lecture::trainer::{Batches, LinearData, OnStep, Precision, train_observed};
use crate::lecture::{SectionCtx, record};
use crate::nn::{Cruncher, Module};
use crate::optim::{AdaGrad, Optimizer, Sgd};
use crate::tensor::{DType, Tensor};

#[derive(Clone, Copy)]
enum OptimizerKind {
    Sgd,
    AdaGrad,
}

fn make_optimizer(kind: OptimizerKind, model: &dyn Module, lr: f64) -> Result<Box<dyn Optimizer>> {
    Ok(match kind {
        OptimizerKind::Sgd => Box::new(Sgd::new(model, lr)?),
        OptimizerKind::AdaGrad => Box::new(AdaGrad::new(model, lr)?),
    })
}

/// Training a linear model on data from a known linear function: the loss should fall, and
/// how fast depends on the learning rate (which, unlike the original's `train`, we honour).
pub fn train_loop(cx: &mut SectionCtx) -> Result<()> {
    let d = 16;
    let true_w = Tensor::arange(d, DType::F32)?.to_device(&cx.device)?; // weights 0, 1, …, D−1
    let (b, num_layers, num_train_steps) = (4, 0, 10);
    record!(cx, given d)?;
    record!(cx, given batch_size = b)?;
    record!(cx, given num_train_steps)?;
    let data = LinearData {
        true_w,
        device: cx.device.clone(),
        batch_size: b,
    };
    // The same initial weights and the same batches for every run: only the optimizer differs.
    let (init_rng, data_rng) = (cx.rng.fork(), cx.rng.fork());
    let run = |kind: OptimizerKind, lr: f64, steps: u64, on_step: OnStep| -> Result<(Vec<f64>, Cruncher)> {
        let model = Cruncher::new(d, num_layers, &mut init_rng.clone())?.to_device(&data.device)?;
        let mut optimizer = make_optimizer(kind, &model, lr)?;
        let mut batches = Batches::copy_of(&data_rng);
        let losses = train_observed(
            &model,
            optimizer.as_mut(),
            &data,
            &mut batches,
            0..steps,
            Precision::Fp32,
            on_step,
        )?;
        Ok((losses, model))
    };
    // The first run step by step: each step's loss (on its batch, before its update) is a state
    // of the history `loss`.
    let (losses_lr_0_01, _) = run(
        OptimizerKind::Sgd,
        0.01,
        num_train_steps,
        &mut |loss| record!(cx, computed history loss),
    )?;
    record!(cx, computed losses_lr_0_01)?;
    let (losses_lr_0_1, _) = run(OptimizerKind::Sgd, 0.1, num_train_steps, &mut |_| Ok(()))?;
    record!(cx, computed losses_lr_0_1)?;

    // Longer runs: convergence, and SGD against AdaGrad.
    let long = 300;
    record!(cx, given long_num_train_steps = long)?;
    let mut runs = serde_json::Map::new();
    for (name, kind, lr) in [
        ("sgd_lr_0_01", OptimizerKind::Sgd, 0.01),
        ("sgd_lr_0_1", OptimizerKind::Sgd, 0.1),
        ("adagrad_lr_0_1", OptimizerKind::AdaGrad, 0.1),
        ("adagrad_lr_1", OptimizerKind::AdaGrad, 1.0),
    ] {
        let (losses, model) = run(kind, lr, long, &mut |_| Ok(()))?;
        let w = model.final_layer.weight.value().to_vec_f64()?;
        let err = w
            .iter()
            .enumerate()
            .map(|(i, v)| (v - i as f64).abs())
            .fold(0.0, f64::max);
        runs.insert(name.into(), json!({"optimizer": if matches!(kind, OptimizerKind::Sgd) { "sgd" } else { "adagrad" }, "lr": lr, "losses": losses, "final_loss": losses.last(), "max_weight_error": err}));
    }
    record!(cx, computed longer_runs = serde_json::Value::Object(runs))?;
    Ok(())
}
