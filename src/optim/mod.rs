//! Optimizers: SGD and AdaGrad, as the lecture writes them. Each holds the model's parameter
//! `Var`s (sharing their storage) and updates them in place with one fused device op per
//! parameter. State is inspectable by name, and is what a checkpoint saves.

mod in_backward;

pub use in_backward::InBackward;

use crate::autograd::Var;
use crate::error::{Error, Result};
use crate::nn::Module;
use crate::tensor::Tensor;

/// What every optimizer keeps: the parameters it updates (by name), the learning rate and the
/// number of updates taken.
pub struct ParamGroup {
    params: Vec<(String, Var)>,
    lr: f64,
    steps: u64,
}

impl ParamGroup {
    fn new(op: &'static str, model: &dyn Module, lr: f64) -> Result<ParamGroup> {
        if !(lr.is_finite() && lr >= 0.0) {
            return Err(Error::invalid(
                op,
                format!("learning rate must be a finite number ≥ 0, got {lr}"),
            ));
        }
        Ok(ParamGroup {
            params: model.named_parameters(),
            lr,
            steps: 0,
        })
    }
}

pub trait Optimizer {
    /// "sgd" or "adagrad" (stored in checkpoints).
    fn name(&self) -> &'static str;

    fn group(&self) -> &ParamGroup;
    fn group_mut(&mut self) -> &mut ParamGroup;

    /// Updates parameter number `index` in place from its gradient: the rule that tells
    /// optimizers apart.
    fn update(&self, index: usize, param: &Tensor, grad: &Tensor) -> Result<()>;

    /// State tensors by name, e.g. `layers.0.weight.g2` (shared storage: writing into them
    /// restores state).
    fn state(&self) -> Vec<(String, Tensor)>;

    /// Hyperparameters by name (stored in checkpoints as metadata).
    fn hyperparameters(&self) -> Vec<(&'static str, f64)>;

    /// One update of every parameter that has a gradient (parameters without one are skipped,
    /// as in PyTorch).
    fn step(&mut self) -> Result<()> {
        for (i, (_, p)) in self.group().params.iter().enumerate() {
            if let Some(g) = p.grad() {
                self.update(i, p.value(), &g)?;
            }
        }
        self.group_mut().steps += 1;
        Ok(())
    }

    fn lr(&self) -> f64 {
        self.group().lr
    }
    fn set_lr(&mut self, lr: f64) {
        self.group_mut().lr = lr;
    }

    /// The parameters this optimizer updates, by name.
    fn params(&self) -> &[(String, Var)] {
        &self.group().params
    }

    /// Updates taken so far.
    fn steps_taken(&self) -> u64 {
        self.group().steps
    }
    fn set_steps_taken(&mut self, steps: u64) {
        self.group_mut().steps = steps;
    }

    /// Forgets every parameter's gradient (`zero_grad(set_to_none=True)`).
    fn zero_grad(&self) {
        self.params().iter().for_each(|(_, p)| p.zero_grad());
    }

    /// Bytes the optimizer's state occupies.
    fn state_bytes(&self) -> usize {
        self.state().iter().map(|(_, t)| t.nbytes()).sum()
    }
}

/// `p ← p − lr · ∂L/∂p`. No state.
pub struct Sgd {
    group: ParamGroup,
}

impl Sgd {
    pub fn new(model: &dyn Module, lr: f64) -> Result<Sgd> {
        Ok(Sgd {
            group: ParamGroup::new("SGD", model, lr)?,
        })
    }
}

impl Optimizer for Sgd {
    fn name(&self) -> &'static str {
        "sgd"
    }
    fn group(&self) -> &ParamGroup {
        &self.group
    }
    fn group_mut(&mut self) -> &mut ParamGroup {
        &mut self.group
    }
    fn update(&self, _index: usize, param: &Tensor, grad: &Tensor) -> Result<()> {
        param.sgd_update_(grad, self.group.lr)
    }
    fn state(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }
    fn hyperparameters(&self) -> Vec<(&'static str, f64)> {
        vec![("lr", self.group.lr)]
    }
}

/// AdaGrad: `g2 ← g2 + g²; p ← p − lr · g / √(g2 + eps)`. Parameters with a history of large
/// gradients take smaller steps. One state tensor (`g2`) per parameter, the parameter's size and
/// dtype, allocated up front so its memory shows from the start.
pub struct AdaGrad {
    group: ParamGroup,
    g2: Vec<Tensor>,
    eps: f64,
}

impl AdaGrad {
    /// The lecture's eps.
    pub const EPS: f64 = 1e-5;

    pub fn new(model: &dyn Module, lr: f64) -> Result<AdaGrad> {
        let group = ParamGroup::new("AdaGrad", model, lr)?;
        let g2 = group
            .params
            .iter()
            .map(|(_, p)| p.value().zeros_like())
            .collect::<Result<_>>()?;
        Ok(AdaGrad {
            group,
            g2,
            eps: AdaGrad::EPS,
        })
    }

    pub fn eps(&self) -> f64 {
        self.eps
    }

    /// The running sum of squared gradients of parameter `name`.
    pub fn g2(&self, name: &str) -> Option<&Tensor> {
        self.group
            .params
            .iter()
            .position(|(n, _)| n == name)
            .map(|i| &self.g2[i])
    }
}

impl Optimizer for AdaGrad {
    fn name(&self) -> &'static str {
        "adagrad"
    }
    fn group(&self) -> &ParamGroup {
        &self.group
    }
    fn group_mut(&mut self) -> &mut ParamGroup {
        &mut self.group
    }
    fn update(&self, index: usize, param: &Tensor, grad: &Tensor) -> Result<()> {
        param.adagrad_update_(&self.g2[index], grad, self.group.lr, self.eps)
    }
    fn state(&self) -> Vec<(String, Tensor)> {
        self.group
            .params
            .iter()
            .zip(&self.g2)
            .map(|((n, _), g2)| (format!("{n}.g2"), g2.clone()))
            .collect()
    }
    fn hyperparameters(&self) -> Vec<(&'static str, f64)> {
        vec![("lr", self.group.lr), ("eps", self.eps)]
    }
}
