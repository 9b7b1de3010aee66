//! Checking backward against finite differences.
//!
//! For a function `f` of some inputs, the scalar `L = Σ f(inputs) ⊙ r` (with `r` a fixed random
//! tensor, so every output element gets its own weight) is differentiated twice: by backward, and
//! numerically by central differences `(L(x + h) − L(x − h)) / (2h)` for every element of every
//! input that requires grad. The tensors are float32 (the library's compute type); the central
//! difference's truncation error is O(h²) and its rounding error about ε·|L|/h, so a step of about
//! 1e-2 (relative to the element) keeps both near 1e-5 for the inputs the tests use. The step
//! actually taken is read back after rounding the perturbed input to float32, so the denominator
//! is exact.

use super::{Var, no_grad};
use crate::error::{Error, Result};
use crate::rng::Rng;
use crate::tensor::Tensor;

/// The worst disagreement found.
#[derive(Debug, Clone, PartialEq)]
pub struct GradCheck {
    /// Number of (input, element) derivatives compared.
    pub checked: usize,
    pub max_abs_error: f64,
    /// Largest |analytic − numeric| / (atol + rtol·|numeric|): at most 1 when everything passed.
    pub worst_ratio: f64,
    /// Where the worst ratio occurred: input, element, analytic and numeric values.
    pub worst: String,
}

impl GradCheck {
    pub fn passed(&self) -> bool {
        self.worst_ratio <= 1.0
    }
}

fn weighted_sum(out: &Var, r: &Tensor) -> Result<Var> {
    out.mul(&Var::constant(r.clone()))?.sum_all()
}

/// Compares `backward` with central differences for `f` at `inputs` (tensor, requires_grad).
pub fn gradcheck(
    inputs: &[(Tensor, bool)],
    f: impl Fn(&[Var]) -> Result<Var>,
    step: f64,
    atol: f64,
    rtol: f64,
    rng: &mut Rng,
) -> Result<GradCheck> {
    let vars: Vec<Var> = inputs
        .iter()
        .map(|(t, req)| Ok(Var::leaf(t.deep_clone()?, *req)))
        .collect::<Result<_>>()?;
    let out = f(&vars)?;
    let r = Tensor::randn(out.shape(), out.value().dtype(), rng)?;
    weighted_sum(&out, &r)?.backward()?;

    let loss_at = |i: usize, x: &Tensor| -> Result<f64> {
        let _g = no_grad();
        let mut vs = vars.clone();
        vs[i] = Var::constant(x.clone());
        weighted_sum(&f(&vs)?, &r)?.value().item()
    };
    let mut report = GradCheck {
        checked: 0,
        max_abs_error: 0.0,
        worst_ratio: 0.0,
        worst: String::new(),
    };
    for (i, (x, req)) in inputs.iter().enumerate() {
        if !req {
            if vars[i].grad().is_some() {
                return Err(Error::invalid(
                    "gradcheck",
                    format!("input {i} does not require grad but received one"),
                ));
            }
            continue;
        }
        let analytic = match vars[i].grad() {
            Some(g) => g.to_vec_f64()?,
            None => vec![0.0; x.numel()],
        };
        if analytic.len() != x.numel() {
            return Err(Error::invalid(
                "gradcheck",
                format!(
                    "gradient of input {i} has {} elements, the input {}",
                    analytic.len(),
                    x.numel()
                ),
            ));
        }
        let base = x.to_vec_f64()?;
        for j in 0..base.len() {
            let h = step * base[j].abs().max(1.0);
            let perturbed = |delta: f64| -> Result<(Tensor, f64)> {
                let mut v = base.clone();
                v[j] += delta;
                let t = Tensor::from_f64_vec(&v, x.shape(), x.dtype())?;
                let actual = t.to_vec_f64()?[j];
                Ok((t, actual))
            };
            let ((xp, vp), (xm, vm)) = (perturbed(h)?, perturbed(-h)?);
            let numeric = (loss_at(i, &xp)? - loss_at(i, &xm)?) / (vp - vm);
            let err = (analytic[j] - numeric).abs();
            let ratio = err / (atol + rtol * numeric.abs());
            report.checked += 1;
            report.max_abs_error = report.max_abs_error.max(err);
            if ratio > report.worst_ratio || !ratio.is_finite() {
                report.worst_ratio = if ratio.is_finite() { ratio } else { f64::INFINITY };
                report.worst = format!(
                    "input {i} element {j}: backward {} vs finite difference {numeric}",
                    analytic[j]
                );
            }
        }
    }
    Ok(report)
}
