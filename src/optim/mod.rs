//! Optimizers: SGD and AdaGrad, as the lecture writes them. Each holds the model's parameter
//! `Var`s (sharing their storage) and updates them in place with one fused device op per
//! parameter. State is inspectable by name, and is what a checkpoint saves.

use crate::autograd::Var;
use crate::error::{Error, Result};
use crate::nn::Module;
use crate::tensor::Tensor;

pub trait Optimizer {
    /// "sgd" or "adagrad" (stored in checkpoints).
    fn name(&self) -> &'static str;

    /// One update of every parameter that has a gradient (parameters without one are skipped,
    /// as in PyTorch).
    fn step(&mut self) -> Result<()>;

    fn lr(&self) -> f64;
    fn set_lr(&mut self, lr: f64);

    /// The parameters this optimizer updates, by name.
    fn params(&self) -> &[(String, Var)];

    /// State tensors by name, e.g. `layers.0.weight.g2` (shared storage: writing into them
    /// restores state).
    fn state(&self) -> Vec<(String, Tensor)>;

    /// Hyperparameters by name (stored in checkpoints as metadata).
    fn hyperparameters(&self) -> Vec<(&'static str, f64)>;

    /// Updates taken so far.
    fn steps_taken(&self) -> u64;
    fn set_steps_taken(&mut self, steps: u64);

    /// Forgets every parameter's gradient (`zero_grad(set_to_none=True)`).
    fn zero_grad(&self) {
        self.params().iter().for_each(|(_, p)| p.zero_grad());
    }

    /// Bytes the optimizer's state occupies.
    fn state_bytes(&self) -> usize {
        self.state().iter().map(|(_, t)| t.nbytes()).sum()
    }
}

fn check_lr(op: &'static str, lr: f64) -> Result<()> {
    if !(lr.is_finite() && lr >= 0.0) {
        return Err(Error::invalid(op, format!("learning rate must be a finite number ≥ 0, got {lr}")));
    }
    Ok(())
}

/// `p ← p − lr · ∂L/∂p`. No state.
pub struct Sgd {
    params: Vec<(String, Var)>,
    lr: f64,
    steps: u64,
}

impl Sgd {
    pub fn new(model: &dyn Module, lr: f64) -> Result<Sgd> {
        check_lr("SGD", lr)?;
        Ok(Sgd { params: model.named_parameters(), lr, steps: 0 })
    }
}

impl Optimizer for Sgd {
    fn name(&self) -> &'static str {
        "sgd"
    }

    fn step(&mut self) -> Result<()> {
        for (_, p) in &self.params {
            if let Some(g) = p.grad() {
                p.value().sgd_update_(&g, self.lr)?;
            }
        }
        self.steps += 1;
        Ok(())
    }

    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
    fn params(&self) -> &[(String, Var)] {
        &self.params
    }
    fn state(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }
    fn hyperparameters(&self) -> Vec<(&'static str, f64)> {
        vec![("lr", self.lr)]
    }
    fn steps_taken(&self) -> u64 {
        self.steps
    }
    fn set_steps_taken(&mut self, steps: u64) {
        self.steps = steps;
    }
}

/// AdaGrad: `g2 ← g2 + g²; p ← p − lr · g / √(g2 + eps)`. Parameters with a history of large
/// gradients take smaller steps. One state tensor (`g2`) per parameter, the parameter's size and
/// dtype, allocated up front so its memory shows from the start.
pub struct AdaGrad {
    params: Vec<(String, Var)>,
    g2: Vec<Tensor>,
    lr: f64,
    eps: f64,
    steps: u64,
}

impl AdaGrad {
    /// The lecture's eps.
    pub const EPS: f64 = 1e-5;

    pub fn new(model: &dyn Module, lr: f64) -> Result<AdaGrad> {
        check_lr("AdaGrad", lr)?;
        let params = model.named_parameters();
        let g2 = params.iter().map(|(_, p)| p.value().zeros_like()).collect::<Result<_>>()?;
        Ok(AdaGrad { params, g2, lr, eps: AdaGrad::EPS, steps: 0 })
    }

    pub fn eps(&self) -> f64 {
        self.eps
    }

    /// The running sum of squared gradients of parameter `name`.
    pub fn g2(&self, name: &str) -> Option<&Tensor> {
        self.params.iter().position(|(n, _)| n == name).map(|i| &self.g2[i])
    }
}

impl Optimizer for AdaGrad {
    fn name(&self) -> &'static str {
        "adagrad"
    }

    fn step(&mut self) -> Result<()> {
        for ((_, p), g2) in self.params.iter().zip(&self.g2) {
            if let Some(g) = p.grad() {
                p.value().adagrad_update_(g2, &g, self.lr, self.eps)?;
            }
        }
        self.steps += 1;
        Ok(())
    }

    fn lr(&self) -> f64 {
        self.lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
    fn params(&self) -> &[(String, Var)] {
        &self.params
    }
    fn state(&self) -> Vec<(String, Tensor)> {
        self.params.iter().zip(&self.g2).map(|((n, _), g2)| (format!("{n}.g2"), g2.clone())).collect()
    }
    fn hyperparameters(&self) -> Vec<(&'static str, f64)> {
        vec![("lr", self.lr), ("eps", self.eps)]
    }
    fn steps_taken(&self) -> u64 {
        self.steps
    }
    fn set_steps_taken(&mut self, steps: u64) {
        self.steps = steps;
    }
}
