//! Checkpointing: save model, optimizer state and step; load them into a fresh model; training
//! continues exactly as if it had never stopped. Damaged files fail clearly.

use std::path::Path;

use serde_json::json;

use crate::atomic_file;
use crate::checkpoint;
use crate::error::{Error, Result};
use crate::lecture::trainer::{Batches, LinearData, Precision, bits, message_in, temp_dir, train};
use crate::lecture::{SectionCtx, check, record};
use crate::nn::{Cruncher, Module};
use crate::optim::{AdaGrad, Optimizer};
use crate::rng::Rng;
use crate::tensor::{DType, Tensor};

/// Save model, optimizer state and step; load them into a fresh model and optimizer; training
/// continues exactly as if it had never stopped.
pub fn checkpointing(cx: &mut SectionCtx) -> Result<()> {
    let (d, num_layers, b, lr) = (64, 3, 16, 0.01);
    record!(cx, given d)?;
    record!(cx, given num_layers)?;
    let (total_steps, save_at) = (20u64, 10u64);
    let true_w = Tensor::randn(&[d], DType::F32, &mut cx.rng)?.to_device(&cx.device)?;
    let data = LinearData {
        true_w,
        device: cx.device.clone(),
        batch_size: b,
    };
    let (init_rng, data_seed) = (cx.rng.fork(), cx.rng.below(usize::MAX) as u64);
    let fresh = |rng: &mut Rng| -> Result<(Cruncher, AdaGrad)> {
        let model = Cruncher::new(d, num_layers, rng)?.to_device(&data.device)?;
        let optimizer = AdaGrad::new(&model, lr)?;
        Ok((model, optimizer))
    };
    // Each step's batch depends on the step alone, so a resumed run sees the same batches.
    let train_steps = |model: &Cruncher, optimizer: &mut AdaGrad, steps| -> Result<Vec<f32>> {
        let mut batches = Batches::PerStep { data_seed };
        let losses = train(model, optimizer, &data, &mut batches, steps, Precision::Fp32)?;
        Ok(losses.into_iter().map(|l| l as f32).collect()) // the model's float32 losses
    };

    // Uninterrupted: all steps in one go.
    let (model, mut optimizer) = fresh(&mut init_rng.clone())?;
    let losses_uninterrupted = train_steps(&model, &mut optimizer, 0..total_steps)?;

    // Interrupted: train, save, and throw the model away.
    let dir = temp_dir()?;
    let path = dir.path().join("model_checkpoint.safetensors");
    let (model, mut optimizer) = fresh(&mut init_rng.clone())?;
    let mut losses_resumed = train_steps(&model, &mut optimizer, 0..save_at)?;
    checkpoint::save(&path, &model, &optimizer, save_at)?;
    let saved_values = checkpoint_bits(&model, &optimizer)?;

    // A model initialised differently, so only the checkpoint can make it right.
    let (new_model, mut new_optimizer) = fresh(&mut Rng::seed(cx.seed ^ 0xDEAD_BEEF))?;
    let step = checkpoint::load(&path, &new_model, &mut new_optimizer)?;
    record!(cx, computed loaded_step = step)?;
    let loaded_bit_identical = checkpoint_bits(&new_model, &new_optimizer)? == saved_values;
    record!(cx, computed loaded_bit_identical)?;
    check!(cx, loads_what_it_saved: loaded_bit_identical)?;
    losses_resumed.extend(train_steps(&new_model, &mut new_optimizer, step..total_steps)?);
    let resumed_bit_identical = losses_uninterrupted
        .iter()
        .map(|x| x.to_bits())
        .eq(losses_resumed.iter().map(|x| x.to_bits()));
    record!(cx, computed losses_uninterrupted)?;
    record!(cx, computed losses_resumed)?;
    record!(cx, computed resumed_bit_identical)?;
    check!(cx, resumes_as_if_never_stopped: resumed_bit_identical)?;

    // The file: a plain safetensors file any reader can list.
    let info = checkpoint::inspect(&path)?;
    let checkpoint_bytes = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len();
    record!(cx, computed checkpoint_bytes, bytes)?;
    let tensors: Vec<serde_json::Value> = info
        .tensors
        .iter()
        .map(|(n, s, t)| json!({"name": n, "shape": s, "dtype": t}))
        .collect();
    record!(cx, computed checkpoint_tensors = tensors)?;
    record!(cx, computed checkpoint_metadata = json!(info.metadata))?;

    // Damaged files and the wrong model give clear errors and change nothing.
    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    let truncated = dir.path().join("truncated.safetensors");
    atomic_file::write(&truncated, &bytes[..bytes.len() / 2])?;
    let truncated_error = load_error(dir.path(), &truncated, &new_model, &mut new_optimizer);
    record!(cx, computed truncated_error)?;
    let corrupt = dir.path().join("corrupt.safetensors");
    let mut flipped = bytes.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x40;
    atomic_file::write(&corrupt, &flipped)?;
    let corrupt_error = load_error(dir.path(), &corrupt, &new_model, &mut new_optimizer);
    record!(cx, computed corrupt_error)?;
    let (small_model, mut small_optimizer) = {
        let m = Cruncher::new(d / 2, num_layers, &mut Rng::seed(1))?.to_device(&cx.device)?;
        let o = AdaGrad::new(&m, lr)?;
        (m, o)
    };
    let shape_mismatch_error = load_error(dir.path(), &path, &small_model, &mut small_optimizer);
    record!(cx, computed shape_mismatch_error)?;
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
