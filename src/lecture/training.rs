//! Training: randomness, data, optimizers and their memory, the training loop, checkpoints and
//! mixed precision.

use std::path::Path;

use serde_json::json;

use super::{SectionCtx, record};
use crate::autograd::{Var, mse_loss};
use crate::checkpoint;
use crate::data::{self, TokenFile};
use crate::device::Device;
use crate::device::cuda;
use crate::error::{Error, Result};
use crate::flops::FlopCounter;
use crate::nn::{Cruncher, Module, ParamOptions};
use crate::optim::{AdaGrad, Optimizer, Sgd};
use crate::rng::Rng;
use crate::tensor::{DType, Tensor};
use crate::trace::Unit;

fn bits(t: &Tensor) -> Result<Vec<u32>> {
    Ok(t.to_vec::<f32>()?.iter().map(|x| x.to_bits()).collect())
}

fn temp_dir() -> Result<tempfile::TempDir> {
    tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))
}

/// An error message with a temporary folder's (run-dependent) path replaced by `<tmp>`.
fn message_in(dir: &Path, e: &Error) -> String {
    e.to_string().replace(&dir.display().to_string(), "<tmp>")
}

/// Every source of randomness gets its own seed, so results can be reproduced one by one.
pub fn note_about_randomness(cx: &mut SectionCtx) -> Result<()> {
    let seed = 0;
    let x = Tensor::randn(&[4, 4], DType::F32, &mut Rng::seed(seed))?;
    let x_again = Tensor::randn(&[4, 4], DType::F32, &mut Rng::seed(seed))?;
    let x_other = Tensor::randn(&[4, 4], DType::F32, &mut Rng::seed(seed + 1))?;
    cx.record_tensor("x_seed_0", &x)?;
    cx.record_tensor("x_seed_1", &x_other)?;
    cx.record("same_seed_bit_identical", bits(&x)? == bits(&x_again)?, Unit::None)?;
    cx.record("different_seed_identical", bits(&x)? == bits(&x_other)?, Unit::None)?;

    // One stream shared by initialisation and data: drawing one more batch first changes the
    // initial weights. Separate streams (forked from one seed) keep them apart.
    let mut shared = Rng::seed(seed);
    let w = Tensor::randn(&[4], DType::F32, &mut shared)?;
    let mut shared = Rng::seed(seed);
    let _batch = Tensor::randn(&[4], DType::F32, &mut shared)?;
    let w_after_batch = Tensor::randn(&[4], DType::F32, &mut shared)?;
    cx.record(
        "shared_stream_init_unchanged",
        bits(&w)? == bits(&w_after_batch)?,
        Unit::None,
    )?;
    let streams = |seed: u64| {
        let mut root = Rng::seed(seed);
        (root.fork(), root.fork()) // (initialisation, data)
    };
    let (mut init_rng, _) = streams(seed);
    let w = Tensor::randn(&[4], DType::F32, &mut init_rng)?;
    let (mut init_rng, mut data_rng) = streams(seed);
    let _batch = Tensor::randn(&[4], DType::F32, &mut data_rng)?;
    let w_after_batch = Tensor::randn(&[4], DType::F32, &mut init_rng)?;
    cx.record(
        "separate_streams_init_unchanged",
        bits(&w)? == bits(&w_after_batch)?,
        Unit::None,
    )?;
    Ok(())
}

/// Token ids live in a file; a memory map reads only the pages a batch touches.
pub fn data_loading(cx: &mut SectionCtx) -> Result<()> {
    let dir = temp_dir()?;
    let path = dir.path().join("data.npy");
    let orig_data: Vec<i32> = (1..=10).collect();
    data::write_tokens(&path, &orig_data)?;
    let data = TokenFile::open(&path)?;
    cx.record("data", data.to_vec(), Unit::None)?;
    cx.record("equal_to_original", data.to_vec() == orig_data, Unit::None)?;

    // A batch of B sequences of length L, starting at random positions.
    let (batch_size, sequence_length) = (2, 4);
    let batch = data::get_batch(&data, batch_size, sequence_length, &mut cx.rng, &cx.device)?;
    cx.record_tensor("x", &batch.inputs)?;
    cx.record("starts", batch.starts.clone(), Unit::None)?;
    let rows = batch.inputs.to_vec::<i64>()?;
    let consecutive = rows
        .chunks(sequence_length)
        .all(|r| r.windows(2).all(|w| w[1] == w[0] + 1));
    cx.record("rows_consecutive", consecutive, Unit::None)?;
    if cx.device.is_cpu() {
        cx.record(
            "pinned_memory",
            "not applicable: the batch already lives in host memory",
            Unit::None,
        )?;
    }
    if let Some(gpu) = cx.device.cuda().cloned() {
        // get_batch staged the batch in pinned (page-locked) host memory and copied it
        // asynchronously. Why: the GPU reads pinned memory directly, while ordinary (pageable)
        // memory must first be copied by the driver into a pinned buffer of its own.
        cx.record(
            "pinned_memory",
            "staged in pinned host memory, copied to the GPU asynchronously",
            Unit::None,
        )?;
        let bytes = 256usize << 20;
        let pageable = cuda::timing::bench_host_to_device(&gpu.0, bytes, false, 1, 5)?;
        let pinned = cuda::timing::bench_host_to_device(&gpu.0, bytes, true, 1, 5)?;
        cx.record("h2d_bytes", bytes, Unit::Bytes)?;
        cx.record("h2d_pageable_bytes_per_sec", pageable.bytes_per_sec, Unit::BytesPerSec)?;
        cx.record("h2d_pinned_bytes_per_sec", pinned.bytes_per_sec, Unit::BytesPerSec)?;
        cx.record(
            "pinned_over_pageable",
            pinned.bytes_per_sec / pageable.bytes_per_sec,
            Unit::Ratio,
        )?;
    }

    // Bad input: 10 bytes is not a whole number of int32 tokens; a sequence longer than the data.
    let odd = dir.path().join("odd.npy");
    crate::atomic_file::write(&odd, &[0u8; 10])?;
    let err = TokenFile::open(&odd).err().map(|e| message_in(dir.path(), &e));
    cx.record("odd_length_error", err.unwrap_or_else(|| "no error".into()), Unit::None)?;
    let err = data::get_batch(&data, batch_size, 10, &mut cx.rng, &cx.device)
        .err()
        .map(|e| message_in(dir.path(), &e));
    cx.record("too_short_error", err.unwrap_or_else(|| "no error".into()), Unit::None)?;
    Ok(())
}

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
    let model = Cruncher::new(d, num_layers, &mut cx.rng)?.to_device(&cx.device)?;
    let lr = 0.01;
    let mut optimizer = AdaGrad::new(&model, lr)?;
    record!(cx, lr, Unit::None)?;
    cx.record("eps", optimizer.eps(), Unit::None)?;
    cx.record(
        "state",
        tensors_json(
            &model
                .state_dict()
                .iter()
                .map(|(n, t)| Ok((n.clone(), t.deep_clone()?)))
                .collect::<Result<Vec<_>>>()?,
        )?,
        Unit::None,
    )?;

    let x = Var::constant(Tensor::randn(&[b, d], DType::F32, &mut cx.rng)?.to_device(&cx.device)?);
    let y = Var::constant(Tensor::from_data(&[4.0, 5.0], DType::F32)?.to_device(&cx.device)?);
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
    cx.record("state_after", tensors_json(&model.state_dict())?, Unit::None)?;
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
    let total_memory = 4 * (num_parameters + num_activations + num_gradients + num_optimizer_states);
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
    let flops = 6 * b * num_parameters;
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

/// Regression data y = x @ true_w, a fresh batch every step.
struct LinearData {
    true_w: Tensor,
    device: Device,
}

impl LinearData {
    fn batch(&self, b: usize, rng: &mut Rng) -> Result<(Var, Var)> {
        let d = self.true_w.shape()[0];
        let x = Tensor::randn(&[b, d], DType::F32, rng)?.to_device(&self.device)?;
        let y = x.matmul(&self.true_w)?;
        Ok((Var::constant(x), Var::constant(y)))
    }
}

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

/// The lecture's `train`: every step draws a batch, computes the loss, backpropagates, steps and
/// clears the gradients. Returns the loss at each step (before that step's update).
fn train(
    model: &Cruncher,
    optimizer: &mut dyn Optimizer,
    data: &LinearData,
    b: usize,
    num_train_steps: usize,
    data_rng: &mut Rng,
) -> Result<Vec<f64>> {
    let mut losses = Vec::with_capacity(num_train_steps);
    for _ in 0..num_train_steps {
        let (x, y) = data.batch(b, data_rng)?;
        let pred_y = model.forward(&x)?;
        let loss = mse_loss(&pred_y, &y)?;
        losses.push(loss.value().item()?);
        loss.backward()?;
        optimizer.step()?;
        optimizer.zero_grad();
    }
    Ok(losses)
}

/// Training a linear model on data from a known linear function: the loss should fall, and
/// how fast depends on the learning rate (which, unlike the original's `train`, we honour).
pub fn train_loop(cx: &mut SectionCtx) -> Result<()> {
    let d = 16;
    let true_w = Tensor::arange(d, DType::F32)?.to_device(&cx.device)?; // weights 0, 1, …, D−1
    let data = LinearData {
        true_w,
        device: cx.device.clone(),
    };
    let (b, num_layers, num_train_steps) = (4, 0, 10);
    // The same initial weights and the same batches for every run: only the optimizer differs.
    let (init_rng, data_rng) = (cx.rng.fork(), cx.rng.fork());
    let run = |kind: OptimizerKind, lr: f64, steps: usize| -> Result<(Vec<f64>, Cruncher)> {
        let model = Cruncher::new(d, num_layers, &mut init_rng.clone())?.to_device(&data.device)?;
        let mut optimizer = make_optimizer(kind, &model, lr)?;
        let losses = train(&model, optimizer.as_mut(), &data, b, steps, &mut data_rng.clone())?;
        Ok((losses, model))
    };
    cx.record(
        "losses_lr_0_01",
        run(OptimizerKind::Sgd, 0.01, num_train_steps)?.0,
        Unit::None,
    )?;
    cx.record(
        "losses_lr_0_1",
        run(OptimizerKind::Sgd, 0.1, num_train_steps)?.0,
        Unit::None,
    )?;

    // Longer runs: convergence, and SGD against AdaGrad.
    let long = 300;
    cx.record("long_num_train_steps", long, Unit::Count)?;
    let mut runs = serde_json::Map::new();
    for (name, kind, lr) in [
        ("sgd_lr_0_01", OptimizerKind::Sgd, 0.01),
        ("sgd_lr_0_1", OptimizerKind::Sgd, 0.1),
        ("adagrad_lr_0_1", OptimizerKind::AdaGrad, 0.1),
        ("adagrad_lr_1", OptimizerKind::AdaGrad, 1.0),
    ] {
        let (losses, model) = run(kind, lr, long)?;
        let w = model.final_layer.weight.value().to_vec_f64()?;
        let err = w
            .iter()
            .enumerate()
            .map(|(i, v)| (v - i as f64).abs())
            .fold(0.0, f64::max);
        runs.insert(name.into(), json!({"optimizer": if matches!(kind, OptimizerKind::Sgd) { "sgd" } else { "adagrad" }, "lr": lr, "losses": losses, "final_loss": losses.last(), "max_weight_error": err}));
    }
    cx.record("longer_runs", serde_json::Value::Object(runs), Unit::None)?;
    Ok(())
}

/// The batch for step `t`: a function of the data seed and the step alone, so training resumed
/// from a checkpoint at step t sees exactly the batches it would have seen.
fn batch_rng(data_seed: u64, step: u64) -> Rng {
    Rng::seed(data_seed ^ step.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Runs steps `from..to`, returning the losses.
fn train_steps(
    model: &Cruncher,
    optimizer: &mut dyn Optimizer,
    data: &LinearData,
    b: usize,
    data_seed: u64,
    steps: std::ops::Range<u64>,
) -> Result<Vec<f32>> {
    let mut losses = Vec::new();
    for t in steps {
        let (x, y) = data.batch(b, &mut batch_rng(data_seed, t))?;
        let loss = mse_loss(&model.forward(&x)?, &y)?;
        losses.push(loss.value().item()? as f32);
        loss.backward()?;
        optimizer.step()?;
        optimizer.zero_grad();
    }
    Ok(losses)
}

/// Save model, optimizer state and step; load them into a fresh model and optimizer; training
/// continues exactly as if it had never stopped.
pub fn checkpointing(cx: &mut SectionCtx) -> Result<()> {
    let (d, num_layers, b, lr) = (64, 3, 16, 0.01);
    let (total_steps, save_at) = (20u64, 10u64);
    let true_w = Tensor::randn(&[d], DType::F32, &mut cx.rng)?.to_device(&cx.device)?;
    let data = LinearData {
        true_w,
        device: cx.device.clone(),
    };
    let (init_rng, data_seed) = (cx.rng.fork(), cx.rng.below(usize::MAX) as u64);
    let fresh = |rng: &mut Rng| -> Result<(Cruncher, AdaGrad)> {
        let model = Cruncher::new(d, num_layers, rng)?.to_device(&data.device)?;
        let optimizer = AdaGrad::new(&model, lr)?;
        Ok((model, optimizer))
    };

    // Uninterrupted: all steps in one go.
    let (model, mut optimizer) = fresh(&mut init_rng.clone())?;
    let uninterrupted = train_steps(&model, &mut optimizer, &data, b, data_seed, 0..total_steps)?;

    // Interrupted: train, save, and throw the model away.
    let dir = temp_dir()?;
    let path = dir.path().join("model_checkpoint.safetensors");
    let (model, mut optimizer) = fresh(&mut init_rng.clone())?;
    let mut resumed = train_steps(&model, &mut optimizer, &data, b, data_seed, 0..save_at)?;
    checkpoint::save(&path, &model, &optimizer, save_at)?;
    let saved_values = checkpoint_bits(&model, &optimizer)?;

    // A model initialised differently, so only the checkpoint can make it right.
    let (new_model, mut new_optimizer) = fresh(&mut Rng::seed(cx.seed ^ 0xDEAD_BEEF))?;
    let step = checkpoint::load(&path, &new_model, &mut new_optimizer)?;
    cx.record("loaded_step", step, Unit::Count)?;
    cx.record(
        "loaded_bit_identical",
        checkpoint_bits(&new_model, &new_optimizer)? == saved_values,
        Unit::None,
    )?;
    resumed.extend(train_steps(
        &new_model,
        &mut new_optimizer,
        &data,
        b,
        data_seed,
        step..total_steps,
    )?);
    cx.record("losses_uninterrupted", uninterrupted.clone(), Unit::None)?;
    cx.record("losses_resumed", resumed.clone(), Unit::None)?;
    let same = uninterrupted
        .iter()
        .map(|x| x.to_bits())
        .eq(resumed.iter().map(|x| x.to_bits()));
    cx.record("resumed_bit_identical", same, Unit::None)?;

    // The file: a plain safetensors file any reader can list.
    let info = checkpoint::inspect(&path)?;
    cx.record(
        "checkpoint_bytes",
        std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len(),
        Unit::Bytes,
    )?;
    let tensors: Vec<serde_json::Value> = info
        .tensors
        .iter()
        .map(|(n, s, t)| json!({"name": n, "shape": s, "dtype": t}))
        .collect();
    cx.record("checkpoint_tensors", tensors, Unit::None)?;
    cx.record("checkpoint_metadata", json!(info.metadata), Unit::None)?;

    // Damaged files and the wrong model give clear errors and change nothing.
    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    let truncated = dir.path().join("truncated.safetensors");
    crate::atomic_file::write(&truncated, &bytes[..bytes.len() / 2])?;
    cx.record(
        "truncated_error",
        load_error(dir.path(), &truncated, &new_model, &mut new_optimizer),
        Unit::None,
    )?;
    let corrupt = dir.path().join("corrupt.safetensors");
    let mut flipped = bytes.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x40;
    crate::atomic_file::write(&corrupt, &flipped)?;
    cx.record(
        "corrupt_error",
        load_error(dir.path(), &corrupt, &new_model, &mut new_optimizer),
        Unit::None,
    )?;
    let (small_model, mut small_optimizer) = {
        let m = Cruncher::new(d / 2, num_layers, &mut Rng::seed(1))?.to_device(&cx.device)?;
        let o = AdaGrad::new(&m, lr)?;
        (m, o)
    };
    cx.record(
        "shape_mismatch_error",
        load_error(dir.path(), &path, &small_model, &mut small_optimizer),
        Unit::None,
    )?;
    Ok(())
}

/// Every tensor a checkpoint holds, as bits.
fn checkpoint_bits(model: &dyn Module, optimizer: &dyn Optimizer) -> Result<Vec<Vec<u32>>> {
    model
        .state_dict()
        .iter()
        .chain(optimizer.state().iter())
        .map(|(_, t)| bits(t))
        .collect()
}

fn load_error(dir: &Path, path: &Path, model: &dyn Module, optimizer: &mut dyn Optimizer) -> String {
    match checkpoint::load(path, model, optimizer) {
        Ok(step) => format!("no error (loaded step {step})"),
        Err(e) => message_in(dir, &e),
    }
}

/// How a mixed-precision run keeps its numbers.
#[derive(Clone, Copy)]
enum Precision {
    /// Parameters, compute and optimizer in float32.
    Fp32,
    /// Everything in bfloat16, parameters and updates too.
    Bf16,
    /// float32 master weights and optimizer; matmuls in bfloat16.
    Mixed,
}

/// The lecture's claim, measured: pure bf16 training loses small updates to rounding, while bf16
/// compute on fp32 master weights tracks fp32.
pub fn mixed_precision_training(cx: &mut SectionCtx) -> Result<()> {
    let (d, num_layers, b, lr, steps) = (32, 2, 32, 0.01, 300);
    cx.record(
        "setup",
        json!({"dim": d, "num_layers": num_layers, "batch_size": b, "lr": lr, "steps": steps, "optimizer": "sgd"}),
        Unit::None,
    )?;
    // Unit-scale targets: true weights ~ N(0, 1/D), so y = x @ true_w ~ N(0, 1).
    let true_w = Tensor::randn(&[d], DType::F32, &mut cx.rng)?
        .div_scalar((d as f64).sqrt())?
        .to_device(&cx.device)?;
    let data = LinearData {
        true_w,
        device: cx.device.clone(),
    };
    let (init_rng, data_rng) = (cx.rng.fork(), cx.rng.fork());
    // The same initial weights (rounded to bf16 where the run keeps bf16 weights) and batches.
    let run = |precision: Precision, lr: f64| {
        train_in(
            precision,
            &data,
            (d, num_layers, b, lr, steps),
            &mut init_rng.clone(),
            &mut data_rng.clone(),
        )
    };
    let tail_mean = |l: &[f64]| l[l.len().saturating_sub(20)..].iter().sum::<f64>() / l.len().clamp(1, 20) as f64;
    for (name, precision) in [
        ("fp32", Precision::Fp32),
        ("bf16", Precision::Bf16),
        ("mixed", Precision::Mixed),
    ] {
        let r = run(precision, lr)?;
        cx.record(&format!("losses_{name}"), r.losses.clone(), Unit::None)?;
        // Mean of the last 20 steps: single-batch losses are noisy.
        cx.record(&format!("final_loss_{name}"), tail_mean(&r.losses), Unit::None)?;
        // Fraction of weights the last update left unchanged (lost to rounding, in bf16).
        cx.record(&format!("updates_lost_{name}"), r.updates_lost, Unit::Ratio)?;
    }

    // A 5× larger learning rate: updates are larger than bf16's spacing for longer, and all
    // three runs go further before the precision of the forward pass limits them.
    let high_lr = 5.0 * lr;
    let mut high = serde_json::Map::new();
    for (name, precision) in [
        ("fp32", Precision::Fp32),
        ("bf16", Precision::Bf16),
        ("mixed", Precision::Mixed),
    ] {
        let r = run(precision, high_lr)?;
        high.insert(
            name.into(),
            json!({"final_loss": tail_mean(&r.losses), "updates_lost": r.updates_lost}),
        );
    }
    record!(cx, high_lr, Unit::None)?;
    cx.record("high_lr_results", serde_json::Value::Object(high), Unit::None)?;
    Ok(())
}

struct PrecisionRun {
    losses: Vec<f64>,
    /// Fraction of parameter elements whose last update did not change them.
    updates_lost: f64,
}

fn train_in(
    precision: Precision,
    data: &LinearData,
    size: (usize, usize, usize, f64, usize),
    init_rng: &mut Rng,
    data_rng: &mut Rng,
) -> Result<PrecisionRun> {
    let (d, num_layers, b, lr, steps) = size;
    let param_dtype = if matches!(precision, Precision::Bf16) {
        DType::BF16
    } else {
        DType::F32
    };
    let options = ParamOptions {
        dtype: param_dtype,
        device: data.device.clone(),
        ..ParamOptions::default()
    };
    let model = Cruncher::with_options(d, num_layers, &options, init_rng)?;
    let mut optimizer = Sgd::new(&model, lr)?;
    let mut losses = Vec::with_capacity(steps);
    let mut updates_lost = 0.0;
    for t in 0..steps {
        let (x, y) = data.batch(b, data_rng)?;
        let pred = match precision {
            Precision::Fp32 => model.forward(&x)?,
            Precision::Bf16 => model.forward(&x.to_dtype(DType::BF16)?)?,
            Precision::Mixed => model.forward_in(&x, DType::BF16)?,
        };
        let loss = mse_loss(&pred, &y.to_dtype(param_dtype)?)?;
        losses.push(loss.value().item()?);
        loss.backward()?;
        let before: Vec<Tensor> = model
            .state_dict()
            .iter()
            .map(|(_, p)| p.deep_clone())
            .collect::<Result<_>>()?;
        optimizer.step()?;
        optimizer.zero_grad();
        if t + 1 == steps {
            let (mut same, mut total) = (0usize, 0usize);
            for ((_, after), before) in model.state_dict().iter().zip(&before) {
                let (a, b) = (after.to_vec_f64()?, before.to_vec_f64()?);
                same += a.iter().zip(&b).filter(|(x, y)| x == y).count();
                total += a.len();
            }
            updates_lost = same as f64 / total.max(1) as f64;
        }
    }
    Ok(PrecisionRun { losses, updates_lost })
}
