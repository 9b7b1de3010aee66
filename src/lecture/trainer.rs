//! What the training sections share: regression data from a known linear function, where each
//! step's batch comes from, and the one training loop (the lecture's `train`) that the training
//! loop, checkpointing and mixed-precision sections all run.

use std::ops::Range;
use std::path::Path;

use crate::autograd::{Var, mse_loss};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::nn::Cruncher;
use crate::optim::Optimizer;
use crate::rng::Rng;
use crate::tensor::{DType, Tensor};

/// A tensor's float32 values as bits, for "identical" that means identical.
pub(crate) fn bits(t: &Tensor) -> Result<Vec<u32>> {
    Ok(t.to_vec::<f32>()?.iter().map(|x| x.to_bits()).collect())
}

pub(crate) fn temp_dir() -> Result<tempfile::TempDir> {
    tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))
}

/// An error message with a temporary folder's (run-dependent) path replaced by `<tmp>`.
pub(crate) fn message_in(dir: &Path, e: &Error) -> String {
    e.to_string().replace(&dir.display().to_string(), "<tmp>")
}

/// Regression data y = x @ true_w, a fresh batch every step.
pub(crate) struct LinearData {
    pub true_w: Tensor,
    pub device: Device,
    pub batch_size: usize,
}

impl LinearData {
    fn batch(&self, rng: &mut Rng) -> Result<(Var, Var)> {
        let d = self.true_w.shape()[0];
        let x = Tensor::randn(&[self.batch_size, d], DType::F32, rng)?.to_device(&self.device)?;
        let y = x.matmul(&self.true_w)?;
        Ok((Var::constant(x), Var::constant(y)))
    }
}

/// Where each step's batch comes from.
pub(crate) enum Batches {
    /// One stream, drawn step after step.
    Stream(Box<Rng>),
    /// A stream per step, from the data seed and the step alone: training resumed from a
    /// checkpoint at step t sees exactly the batches it would have seen.
    PerStep { data_seed: u64 },
}

impl Batches {
    /// Batches drawn from a copy of `rng`: every run started from the same stream sees the same
    /// batches.
    pub(crate) fn copy_of(rng: &Rng) -> Batches {
        Batches::Stream(Box::new(rng.clone()))
    }

    fn next(&mut self, data: &LinearData, step: u64) -> Result<(Var, Var)> {
        match self {
            Batches::Stream(rng) => data.batch(rng),
            Batches::PerStep { data_seed } => {
                data.batch(&mut Rng::seed(*data_seed ^ step.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
            }
        }
    }
}

/// How a run keeps its numbers.
#[derive(Clone, Copy)]
pub(crate) enum Precision {
    /// Parameters, compute and optimizer in float32.
    Fp32,
    /// Everything in bfloat16, parameters and updates too.
    Bf16,
    /// float32 master weights and optimizer; matmuls in bfloat16.
    Mixed,
}

impl Precision {
    /// The dtype of the parameters (and so of the loss).
    pub(crate) fn param_dtype(self) -> DType {
        match self {
            Precision::Bf16 => DType::BF16,
            Precision::Fp32 | Precision::Mixed => DType::F32,
        }
    }
}

/// The lecture's `train`: every step draws a batch, computes the loss, backpropagates, steps and
/// clears the gradients. Runs steps `steps` and returns the loss at each (before its update).
pub(crate) fn train(
    model: &Cruncher,
    optimizer: &mut dyn Optimizer,
    data: &LinearData,
    batches: &mut Batches,
    steps: Range<u64>,
    precision: Precision,
) -> Result<Vec<f64>> {
    train_observed(model, optimizer, data, batches, steps, precision, &mut |_| Ok(()))
}

/// What a training loop calls with each step's loss.
pub(crate) type OnStep<'a> = &'a mut dyn FnMut(f64) -> Result<()>;

/// `train`, handing each step's loss to `on_step` as it is computed (a section records it there,
/// on its own line, step by step).
pub(crate) fn train_observed(
    model: &Cruncher,
    optimizer: &mut dyn Optimizer,
    data: &LinearData,
    batches: &mut Batches,
    steps: Range<u64>,
    precision: Precision,
    on_step: OnStep,
) -> Result<Vec<f64>> {
    let mut losses = Vec::with_capacity(steps.clone().count());
    for step in steps {
        let (x, y) = batches.next(data, step)?;
        let pred_y = match precision {
            Precision::Fp32 => model.forward(&x)?,
            Precision::Bf16 => model.forward(&x.to_dtype(DType::BF16)?)?,
            Precision::Mixed => model.forward_in(&x, DType::BF16)?,
        };
        let loss = mse_loss(&pred_y, &y.to_dtype(precision.param_dtype())?)?;
        let value = loss.value().item()?;
        on_step(value)?;
        losses.push(value);
        loss.backward()?;
        optimizer.step()?;
        optimizer.zero_grad();
    }
    Ok(losses)
}
