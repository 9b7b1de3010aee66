//! Models: named parameters, a bias-free `Linear` layer, and the lecture's `Cruncher` (a stack
//! of D×D linear layers and a D×1 head). Parameters are `Var` leaves that require grad; their
//! tensors are updated in place by the optimizers.

mod deep;
mod init;

pub use deep::{Block, DeepNetwork};
pub use init::{Init, TRUNCATION_SIGMAS};

use crate::autograd::Var;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::rng::Rng;
use crate::tensor::{DType, Tensor};

/// Anything with named parameters, listed in a fixed order (the order a state dict uses).
pub trait Module {
    fn named_parameters(&self) -> Vec<(String, Var)>;

    fn num_parameters(&self) -> usize {
        self.named_parameters().iter().map(|(_, p)| p.value().numel()).sum()
    }

    /// Bytes the parameters occupy.
    fn parameter_bytes(&self) -> usize {
        self.named_parameters().iter().map(|(_, p)| p.value().nbytes()).sum()
    }

    /// The parameter tensors by name (they share storage with the model).
    fn state_dict(&self) -> Vec<(String, Tensor)> {
        self.named_parameters()
            .into_iter()
            .map(|(n, p)| (n, p.value().clone()))
            .collect()
    }

    /// Forgets every parameter's gradient.
    fn zero_grad(&self) {
        self.named_parameters().iter().for_each(|(_, p)| p.zero_grad());
    }
}

/// Where and how parameters are made.
#[derive(Debug, Clone)]
pub struct ParamOptions {
    pub dtype: DType,
    pub device: Device,
    pub init: Init,
}

impl Default for ParamOptions {
    fn default() -> Self {
        ParamOptions {
            dtype: DType::F32,
            device: Device::Cpu,
            init: Init::Xavier,
        }
    }
}

/// `y = x @ W` with `W` of shape in_dim × out_dim and no bias, as in the lecture.
#[derive(Debug, Clone)]
pub struct Linear {
    pub weight: Var,
}

impl Linear {
    pub fn new(in_dim: usize, out_dim: usize, options: &ParamOptions, rng: &mut Rng) -> Result<Linear> {
        let w = options
            .init
            .sample(&[in_dim, out_dim], options.dtype, rng)?
            .to_device(&options.device)?;
        Ok(Linear {
            weight: Var::parameter(w),
        })
    }

    pub fn forward(&self, x: &Var) -> Result<Var> {
        x.matmul(&self.weight)
    }

    /// The forward pass with the weight cast to `compute` first (differentiably, so its gradient
    /// arrives in the weight's own dtype: fp32 master weights with bf16 compute).
    pub fn forward_in(&self, x: &Var, compute: DType) -> Result<Var> {
        x.to_dtype(compute)?.matmul(&self.weight.to_dtype(compute)?)
    }
}

/// The lecture's deep linear network: `num_layers` D×D layers, then a D×1 head, squeezed to `[B]`.
#[derive(Debug, Clone)]
pub struct Cruncher {
    pub dim: usize,
    pub layers: Vec<Linear>,
    pub final_layer: Linear,
}

impl Cruncher {
    /// float32 on the CPU, Xavier-scaled normal initialisation.
    pub fn new(dim: usize, num_layers: usize, rng: &mut Rng) -> Result<Cruncher> {
        Cruncher::with_options(dim, num_layers, &ParamOptions::default(), rng)
    }

    pub fn with_options(dim: usize, num_layers: usize, options: &ParamOptions, rng: &mut Rng) -> Result<Cruncher> {
        if dim == 0 {
            return Err(Error::invalid("Cruncher", "dim must be at least 1"));
        }
        let layers = (0..num_layers)
            .map(|_| Linear::new(dim, dim, options, rng))
            .collect::<Result<Vec<_>>>()?;
        let final_layer = Linear::new(dim, 1, options, rng)?;
        Ok(Cruncher {
            dim,
            layers,
            final_layer,
        })
    }

    /// D²·L + D.
    pub fn expected_num_parameters(dim: usize, num_layers: usize) -> usize {
        dim * dim * num_layers + dim
    }

    fn check_input(&self, x: &Var) -> Result<()> {
        if x.shape().len() != 2 || x.shape()[1] != self.dim {
            return Err(Error::shape(
                "Cruncher",
                x.shape(),
                &[0, self.dim],
                format!("input must be [batch, {}]", self.dim),
            ));
        }
        Ok(())
    }

    /// x: `[B, D]` → `[B]`.
    pub fn forward(&self, x: &Var) -> Result<Var> {
        self.check_input(x)?;
        let mut h = x.clone();
        for layer in &self.layers {
            h = layer.forward(&h)?;
        }
        self.final_layer.forward(&h)?.squeeze(-1)
    }

    /// The forward pass with every matmul in `compute` (weights cast on the fly); the output is
    /// cast back to the weights' dtype so the loss is computed in it.
    pub fn forward_in(&self, x: &Var, compute: DType) -> Result<Var> {
        self.check_input(x)?;
        let out_dtype = self.final_layer.weight.value().dtype();
        let mut h = x.to_dtype(compute)?;
        for layer in &self.layers {
            h = layer.forward_in(&h, compute)?;
        }
        self.final_layer
            .forward_in(&h, compute)?
            .squeeze(-1)?
            .to_dtype(out_dtype)
    }

    /// An independent copy: fresh parameters (with no gradients) holding the same values.
    pub fn deep_clone(&self) -> Result<Cruncher> {
        let copy = |l: &Linear| -> Result<Linear> {
            Ok(Linear {
                weight: Var::parameter(l.weight.value().deep_clone()?),
            })
        };
        Ok(Cruncher {
            dim: self.dim,
            layers: self.layers.iter().map(copy).collect::<Result<_>>()?,
            final_layer: copy(&self.final_layer)?,
        })
    }

    /// A copy of the model on `device` (the same model when it is already there).
    pub fn to_device(&self, device: &Device) -> Result<Cruncher> {
        let move_layer = |l: &Linear| -> Result<Linear> {
            Ok(Linear {
                weight: Var::parameter(l.weight.value().to_device(device)?),
            })
        };
        if self.final_layer.weight.value().device() == device {
            return Ok(self.clone());
        }
        Ok(Cruncher {
            dim: self.dim,
            layers: self.layers.iter().map(move_layer).collect::<Result<_>>()?,
            final_layer: move_layer(&self.final_layer)?,
        })
    }
}

impl Module for Linear {
    fn named_parameters(&self) -> Vec<(String, Var)> {
        vec![("weight".to_string(), self.weight.clone())]
    }
}

impl Module for Cruncher {
    fn named_parameters(&self) -> Vec<(String, Var)> {
        let mut out = Vec::with_capacity(self.layers.len() + 1);
        for (i, layer) in self.layers.iter().enumerate() {
            out.push((format!("layers.{i}.weight"), layer.weight.clone()));
        }
        out.push(("final.weight".to_string(), self.final_layer.weight.clone()));
        out
    }
}
