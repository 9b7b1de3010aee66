//! Initialisers. A weight drawn from N(0, 1) makes each output of `x @ W` a sum of `in_dim`
//! unit-variance terms, so outputs grow like √in_dim; dividing by √in_dim keeps them O(1)
//! (Xavier/Glorot, up to a constant). Truncating at ±3σ removes the rare huge weights.

use crate::error::Result;
use crate::rng::Rng;
use crate::tensor::{DType, Tensor};

/// Where `TruncatedXavier` cuts, in standard deviations.
pub const TRUNCATION_SIGMAS: f64 = 3.0;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    /// N(0, std²).
    Normal { std: f64 },
    /// N(0, 1/in_dim): the lecture's `randn(in, out) / sqrt(in)`.
    Xavier,
    /// N(0, 1/in_dim) restricted to ±`TRUNCATION_SIGMAS` standard deviations (redrawn outside).
    TruncatedXavier,
}

impl Init {
    /// A weight of `shape` = [in_dim, out_dim].
    pub fn sample(self, shape: &[usize], dtype: DType, rng: &mut Rng) -> Result<Tensor> {
        let in_dim = shape.first().copied().unwrap_or(1).max(1) as f64;
        match self {
            Init::Normal { std } => Tensor::randn(shape, DType::F32, rng)?.mul_scalar(std)?.to_dtype(dtype),
            // Scaled in f32 then rounded once into the dtype, as `randn(...) / sqrt(in)` would be.
            Init::Xavier => Tensor::randn(shape, DType::F32, rng)?
                .div_scalar(in_dim.sqrt())?
                .to_dtype(dtype),
            Init::TruncatedXavier => {
                let std = 1.0 / in_dim.sqrt();
                let bound = TRUNCATION_SIGMAS * std;
                Tensor::trunc_normal(shape, 0.0, std, -bound, bound, dtype, rng)
            }
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Init::Normal { .. } => "normal",
            Init::Xavier => "xavier",
            Init::TruncatedXavier => "truncated_xavier",
        }
    }
}
