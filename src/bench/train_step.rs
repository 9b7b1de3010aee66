//! How much of a training step is matmul? A Cruncher training step (forward, backward, optimizer
//! update) is timed, and so is every matrix product the step performs, replayed alone with the
//! same shapes and layouts. The difference is what autograd, the elementwise ops, allocation and
//! the optimizer cost on top of the matmuls: the overhead the lecture's 6·N·D estimate ignores.

use std::cell::RefCell;
use std::time::Duration;

use serde::Serialize;

use crate::autograd::{Var, mse_loss};
use crate::device::Device;
use crate::device::peaks::{self, MathMode};
use crate::error::{Error, Result};
use crate::flops::FlopCounter;
use crate::nn::{Cruncher, Module};
use crate::optim::{AdaGrad, InBackward, Optimizer, Sgd};
use crate::rng::Rng;
use crate::tensor::{DType, Tensor};
use crate::timing::{Budget, Clock, contender, contender_with_setup, in_turns};

#[derive(Debug, Clone)]
pub struct Config {
    pub dim: usize,
    pub num_layers: usize,
    pub batch: usize,
    /// "adagrad" or "sgd".
    pub optimizer: String,
    pub device: Device,
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            dim: 1024,
            num_layers: 4,
            batch: 256,
            optimizer: "adagrad".into(),
            device: Device::Cpu,
            seed: 0,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub num_parameters: usize,
    /// Matmul FLOPs of one step (forward + backward), as counted.
    pub counted_matmul_flops: u64,
    /// 6·B·P, the lecture's estimate (it includes the input gradient the step skips).
    pub six_b_p: u64,
    /// All FLOPs of one step, optimizer included.
    pub counted_total_flops: u64,
    pub step_s: f64,
    pub step_spread: serde_json::Value,
    /// Forward + backward alone, and the optimizer update alone.
    pub forward_backward_s: f64,
    pub optimizer_s: f64,
    /// The step's matmuls replayed alone, summed.
    pub matmul_s: f64,
    pub matmul_flop_per_sec: f64,
    /// (step − matmuls) / step: the goal is ≤ 0.10.
    pub overhead_fraction: f64,
    /// The same step with each parameter updated inside backward (`optim::InBackward`), on a
    /// second model started from the same weights, and its overhead against the same matmuls.
    pub step_in_backward_s: f64,
    pub overhead_in_backward_fraction: f64,
    pub step_flop_per_sec: f64,
    pub peak_flop_per_sec: Option<f64>,
    /// Counted matmul FLOPs per step over the step time, against the peak.
    pub step_mfu: Option<f64>,
}

/// About 1.5 s per value (at least 5 samples, at most 50), one call per turn.
pub(super) fn options() -> Budget {
    Budget {
        warmup: 2,
        min_samples: 5,
        min_time: Duration::from_millis(1500),
        max_samples: 50,
        ..Budget::lecture()
    }
}

/// One update, then the gradients cleared for the next step.
fn optimizer_step(optimizer: &mut dyn Optimizer) -> Result<()> {
    optimizer.step()?;
    optimizer.zero_grad();
    Ok(())
}

/// An operand: (rows, columns, used as a transposed view).
type Operand = (usize, usize, bool);

/// The matmuls of one step: operand shapes and whether each is used transposed (a view).
/// Forward: h_{i+1} = h_i @ W_i, then out = h_L @ W_f. Backward, last layer first:
/// dW = h_iᵀ @ dh_{i+1} for every weight, dh_i = dh_{i+1} @ W_iᵀ for every layer but the first
/// (the data needs no gradient).
fn step_matmuls(dim: usize, layers: usize, batch: usize) -> Vec<(Operand, Operand)> {
    let mut out = Vec::new();
    for _ in 0..layers {
        out.push(((batch, dim, false), (dim, dim, false)));
    }
    out.push(((batch, dim, false), (dim, 1, false)));
    // final layer: dWf = hᵀ @ g, dh = g @ Wfᵀ
    out.push(((dim, batch, true), (batch, 1, false)));
    out.push(((batch, 1, false), (1, dim, true)));
    for i in (0..layers).rev() {
        out.push(((dim, batch, true), (batch, dim, false)));
        if i > 0 {
            out.push(((batch, dim, false), (dim, dim, true)));
        }
    }
    out
}

/// A random operand of logical shape (rows, cols), stored transposed when `t`.
fn operand(rows: usize, cols: usize, t: bool, rng: &mut Rng, device: &Device) -> Result<Tensor> {
    let stored = if t { [cols, rows] } else { [rows, cols] };
    let x = Tensor::randn(&stored, DType::F32, rng)?.to_device(device)?;
    if t { x.t() } else { Ok(x) }
}

impl Config {
    /// Sizes of at least 1 (a model without layers or a step without rows measures nothing), and a
    /// step whose tensors fit in host memory, estimated before anything is allocated.
    pub fn check(&self) -> Result<()> {
        for (name, size) in [("dim", self.dim), ("layers", self.num_layers), ("batch", self.batch)] {
            if size == 0 {
                return Err(Error::invalid(
                    "bench train-step",
                    format!("--{name} must be at least 1"),
                ));
            }
        }
        if self.device == Device::Cpu {
            crate::device::cpu::check_bytes("bench train-step", self.estimated_bytes())?;
        }
        Ok(())
    }

    /// What the step holds at once, in f32 bytes: the parameters, their gradients and AdaGrad's
    /// sums; the operands of the replayed products; and the activations and their gradients.
    pub fn estimated_bytes(&self) -> u128 {
        // In f64: an estimate, exact for any size that could fit, and never overflowing (the
        // conversion back saturates).
        let (dim, layers, batch) = (self.dim as f64, self.num_layers as f64, self.batch as f64);
        let parameters = dim * dim * layers + dim;
        // `step_matmuls`' operands in closed form (the list itself could be too long to make):
        // forward, the final layer's two backward products, then each layer's.
        let operands = layers * (batch * dim + dim * dim)
            + (batch * dim + dim)
            + (dim * batch + batch)
            + (batch + dim)
            + layers * 2.0 * batch * dim
            + (layers - 1.0).max(0.0) * (batch * dim + dim * dim);
        let activations = 4.0 * batch * dim * (layers + 2.0);
        (4.0 * (3.0 * parameters + operands + activations)) as u128
    }
}

/// The configured optimizer over `model`'s parameters.
fn optimizer_for(config: &Config, model: &Cruncher) -> Result<Box<dyn Optimizer + Send>> {
    Ok(match config.optimizer.as_str() {
        "adagrad" => Box::new(AdaGrad::new(model, 1e-3)?),
        "sgd" => Box::new(Sgd::new(model, 1e-3)?),
        other => {
            return Err(Error::invalid(
                "bench",
                format!("unknown optimizer {other:?} (adagrad or sgd)"),
            ));
        }
    })
}

pub fn run(config: &Config) -> Result<Report> {
    config.check()?;
    let mut rng = Rng::seed(config.seed);
    let model = Cruncher::new(config.dim, config.num_layers, &mut rng.clone())?.to_device(&config.device)?;
    // The same weights again, trained with its updates inside backward.
    let twin = Cruncher::new(config.dim, config.num_layers, &mut rng)?.to_device(&config.device)?;
    let mut optimizer = optimizer_for(config, &model)?;
    let in_backward = InBackward::new(optimizer_for(config, &twin)?)?;
    let x = Var::constant(Tensor::randn(&[config.batch, config.dim], DType::F32, &mut rng)?.to_device(&config.device)?);
    let y = Var::constant(Tensor::randn(&[config.batch], DType::F32, &mut rng)?.to_device(&config.device)?);
    let forward_backward = || -> Result<()> { mse_loss(&model.forward(&x)?, &y)?.backward() };
    let step_in_backward = || -> Result<()> {
        mse_loss(&twin.forward(&x)?, &y)?.backward()?;
        in_backward.finish_step();
        Ok(())
    };

    let counter = FlopCounter::start();
    forward_backward()?;
    let fb_count = counter.finish();
    let counter = FlopCounter::start();
    optimizer_step(&mut *optimizer)?;
    let opt_count = counter.finish();
    let optimizer = RefCell::new(optimizer);

    // Every product the step runs, with the step's shapes and layouts, one after the other.
    let mut products = Vec::new();
    let mut replayed_flops = 0u64;
    for ((m, k, ta), (k2, n, tb)) in step_matmuls(config.dim, config.num_layers, config.batch) {
        debug_assert_eq!(k, k2);
        let a = operand(m, k, ta, &mut rng, &config.device)?;
        let b = operand(k2, n, tb, &mut rng, &config.device)?;
        products.push((a, b));
        replayed_flops += 2 * (m * k * n) as u64;
    }

    // The step, its two halves and its matmuls alone, timed in turns so that a busy moment of
    // the machine slows all four alike and the difference stays the overhead.
    let clock = Clock::for_device(&config.device);
    let mut step = contender(clock.clone(), || -> Result<()> {
        forward_backward()?;
        optimizer_step(&mut **optimizer.borrow_mut())
    });
    let mut fb = contender(clock.clone(), || -> Result<()> {
        forward_backward()?;
        model.zero_grad();
        Ok(())
    });
    let mut opt = contender_with_setup(clock.clone(), forward_backward, |()| {
        optimizer_step(&mut **optimizer.borrow_mut())
    });
    let mut inside = contender(clock.clone(), step_in_backward);
    let mut matmuls = contender(clock, || -> Result<()> {
        for (a, b) in &products {
            a.matmul(b)?;
        }
        Ok(())
    });
    let timings = in_turns(
        options(),
        &mut [&mut step, &mut fb, &mut opt, &mut matmuls, &mut inside],
    )?;
    let (step, fb, opt, matmul, inside) = (&timings[0], &timings[1], &timings[2], &timings[3], &timings[4]);
    let matmul_s = matmul.median_s;
    let counted_matmul_flops = fb_count.by_op.get("matmul").copied().unwrap_or(0);
    if replayed_flops != counted_matmul_flops {
        return Err(Error::invalid(
            "bench",
            format!("replayed {replayed_flops} matmul FLOPs but the step counted {counted_matmul_flops}"),
        ));
    }
    let peak = peaks::peak(&config.device, MathMode::Fp32).ok();
    let step_flop_per_sec = counted_matmul_flops as f64 / step.median_s;
    Ok(Report {
        num_parameters: model.num_parameters(),
        counted_matmul_flops,
        six_b_p: 6 * (config.batch * model.num_parameters()) as u64,
        counted_total_flops: fb_count.total() + opt_count.total(),
        step_s: step.median_s,
        step_spread: step.to_json(),
        forward_backward_s: fb.median_s,
        optimizer_s: opt.median_s,
        matmul_s,
        matmul_flop_per_sec: counted_matmul_flops as f64 / matmul_s,
        overhead_fraction: (step.median_s - matmul_s) / step.median_s,
        step_in_backward_s: inside.median_s,
        overhead_in_backward_fraction: (inside.median_s - matmul_s) / inside.median_s,
        step_flop_per_sec,
        peak_flop_per_sec: peak.as_ref().map(|p| p.flop_per_sec),
        step_mfu: peak.as_ref().map(|p| p.mfu(step_flop_per_sec)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The closed form of the memory estimate counts the same operands as the replayed list.
    #[test]
    fn estimated_operands_match_the_replayed_list() {
        for (dim, layers, batch) in [(1, 1, 1), (16, 2, 4), (7, 5, 3), (32, 1, 64)] {
            let config = Config {
                dim,
                num_layers: layers,
                batch,
                ..Config::default()
            };
            let listed: usize = step_matmuls(dim, layers, batch)
                .iter()
                .map(|((m, k, _), (k2, n, _))| m * k + k2 * n)
                .sum();
            let parameters = (dim * dim * layers + dim) as u128;
            let activations = 4 * (batch * dim * (layers + 2)) as u128;
            assert_eq!(
                config.estimated_bytes(),
                4 * (3 * parameters + listed as u128 + activations),
                "dim {dim}, layers {layers}, batch {batch}"
            );
        }
    }

    /// Sizes of 0, and a step far larger than any memory, are refused before anything is made.
    #[test]
    fn empty_and_oversized_steps_are_refused() {
        for (dim, layers, batch, word) in [(0, 1, 1, "--dim"), (8, 0, 1, "--layers"), (8, 1, 0, "--batch")] {
            let config = Config {
                dim,
                num_layers: layers,
                batch,
                ..Config::default()
            };
            let err = config.check().unwrap_err().to_string();
            assert!(err.contains(word) && err.contains("at least 1"), "{err}");
        }
        let huge = Config {
            dim: 1_000_000,
            num_layers: 1,
            batch: 1,
            ..Config::default()
        };
        let err = run(&huge).unwrap_err().to_string();
        assert!(err.contains("host memory") && err.contains("GiB"), "{err}");
        let absurd = Config {
            dim: usize::MAX,
            num_layers: usize::MAX,
            batch: usize::MAX,
            ..Config::default()
        };
        assert!(absurd.check().unwrap_err().to_string().contains("host memory"));
    }

    /// The replayed list has exactly the step's counted matmul FLOPs.
    #[test]
    fn replayed_matmuls_match_the_counted_step() {
        let config = Config {
            dim: 16,
            num_layers: 2,
            batch: 4,
            ..Config::default()
        };
        let list = step_matmuls(config.dim, config.num_layers, config.batch);
        let flops: usize = list.iter().map(|((m, k, _), (_, n, _))| 2 * m * k * n).sum();
        let p = Cruncher::expected_num_parameters(16, 2);
        assert_eq!(flops, 6 * 4 * p - 2 * 4 * 16 * 16);
    }
}
