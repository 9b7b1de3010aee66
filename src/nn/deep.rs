//! The 2026 lecture's deep network: `num_layers` blocks, each a D×D linear map followed by a ReLU.
//! Unlike the Cruncher it has a nonlinearity and no head: it maps a D-vector to a D-vector.

use super::{Linear, Module, ParamOptions};
use crate::autograd::Var;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::rng::Rng;

/// `relu(x @ W)` with W of shape D×D (Xavier-scaled: `randn(D, D) / √D`, as in the lecture).
#[derive(Debug, Clone)]
pub struct Block {
    pub linear: Linear,
}

impl Block {
    pub fn forward(&self, x: &Var) -> Result<Var> {
        self.linear.forward(x)?.relu()
    }
}

/// `num_layers` blocks applied in turn: `[B, D]` → `[B, D]`.
#[derive(Debug, Clone)]
pub struct DeepNetwork {
    pub dim: usize,
    pub layers: Vec<Block>,
}

impl DeepNetwork {
    pub fn new(dim: usize, num_layers: usize, options: &ParamOptions, rng: &mut Rng) -> Result<DeepNetwork> {
        if dim == 0 {
            return Err(Error::invalid("DeepNetwork", "dim must be at least 1"));
        }
        let layers = (0..num_layers)
            .map(|_| {
                Ok(Block {
                    linear: Linear::new(dim, dim, options, rng)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DeepNetwork { dim, layers })
    }

    /// float32 on `device`, Xavier-scaled normal initialisation.
    pub fn on(dim: usize, num_layers: usize, device: &Device, rng: &mut Rng) -> Result<DeepNetwork> {
        let options = ParamOptions {
            device: device.clone(),
            ..ParamOptions::default()
        };
        DeepNetwork::new(dim, num_layers, &options, rng)
    }

    /// D·D·L: one D×D matrix per block, no bias.
    pub fn expected_num_parameters(dim: usize, num_layers: usize) -> usize {
        dim * dim * num_layers
    }

    pub fn forward(&self, x: &Var) -> Result<Var> {
        if x.shape().len() != 2 || x.shape()[1] != self.dim {
            return Err(Error::shape(
                "DeepNetwork",
                x.shape(),
                &[0, self.dim],
                format!("input must be [batch, {}]", self.dim),
            ));
        }
        let mut h = x.clone();
        for layer in &self.layers {
            h = layer.forward(&h)?;
        }
        Ok(h)
    }

    /// An independent copy: fresh parameters (with no gradients) holding the same values.
    pub fn deep_clone(&self) -> Result<DeepNetwork> {
        let layers = self
            .layers
            .iter()
            .map(|b| {
                Ok(Block {
                    linear: Linear {
                        weight: Var::parameter(b.linear.weight.value().deep_clone()?),
                    },
                })
            })
            .collect::<Result<_>>()?;
        Ok(DeepNetwork { dim: self.dim, layers })
    }
}

impl Module for DeepNetwork {
    fn named_parameters(&self) -> Vec<(String, Var)> {
        (self.layers.iter().enumerate())
            .map(|(i, b)| (format!("layers.{i}.weight"), b.linear.weight.clone()))
            .collect()
    }
}
