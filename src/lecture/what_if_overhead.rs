//! What a what-if costs beyond its arithmetic. FLOPs at the device's peak price a wide model well,
//! but a deep and narrow one spends its time elsewhere: every tensor op has a fixed cost (an
//! allocation, a graph node, a dispatch), and the sections that list what the graph keeps compare
//! every saved tensor with every parameter, after every layer. `activation_memory.num_layers=5000`
//! at width one was estimated at "0.0 s" by FLOPs alone and ran for minutes. So each section with
//! givens counts its ops and its comparisons here, and this machine's price of one of each is
//! measured once, before the estimate, by doing a few thousand of them.

use std::hint::black_box;
use std::time::Instant;

use crate::autograd::Var;
use crate::error::Result;
use crate::tensor::{DType, Tensor};

/// How many fixed-cost steps a section takes with its givens.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Overhead {
    /// Tensor ops: forward, backward and optimizer ops, parameter creation and copies.
    pub ops: f64,
    /// Comparisons of one saved tensor with one other tensor (which storage is which).
    pub comparisons: f64,
}

/// Section `id`'s fixed-cost steps with each given as `get` reads it, from the `overhead` its
/// registry entry names (`sections/mod.rs`). The counts are upper bounds
/// per layer, read off the section's code (each D×D layer is a matmul and a ReLU forward, about
/// three ops backward, and a few to create and copy its parameters); a section whose sizes do
/// not grow with a given has a small fixed count.
pub fn overhead(id: &str, get: &dyn Fn(&str) -> f64) -> Overhead {
    match super::find(id).and_then(|s| s.overhead) {
        Some(overhead) => overhead(get),
        // Fixed sizes, or napkin math: a few hundred ops at most.
        None => Overhead {
            ops: 1000.0,
            comparisons: 0.0,
        },
    }
}

/// This machine's price of one op and one comparison, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub op_seconds: f64,
    pub comparison_seconds: f64,
}

impl Rates {
    /// Measures both on the CPU, in a few milliseconds: a chain of one-element products run
    /// forward and backward (what a model of width one is made of), and every pair of a list of
    /// tensors compared by storage. The first of three tries is a warm-up; the fastest of the rest
    /// counts, since other work on the machine only ever slows a try down, and the estimate should
    /// say what this code costs.
    pub fn measure() -> Result<Rates> {
        const CHAIN: usize = 2000;
        const LIST: usize = 500;
        let mut op_seconds = f64::INFINITY;
        let mut comparison_seconds = f64::INFINITY;
        for _ in 0..3 {
            let start = Instant::now();
            let w = Var::parameter(Tensor::ones(&[1], DType::F32)?);
            let mut x = w.clone();
            for _ in 0..CHAIN {
                x = x.mul(&w)?;
            }
            x.sum_all()?.backward()?;
            drop(x);
            // Each link is one op forward and about two backward.
            let op = start.elapsed().as_secs_f64() / (3 * CHAIN) as f64;

            let tensors: Vec<Tensor> = (0..LIST)
                .map(|_| Tensor::zeros(&[1], DType::F32))
                .collect::<Result<_>>()?;
            let start = Instant::now();
            let mut same = 0usize;
            for a in &tensors {
                for b in &tensors {
                    same += usize::from(Tensor::same_storage(black_box(a), black_box(b)));
                }
            }
            black_box(same);
            let comparison = start.elapsed().as_secs_f64() / (LIST * LIST) as f64;
            op_seconds = op_seconds.min(op);
            comparison_seconds = comparison_seconds.min(comparison);
        }
        Ok(Rates {
            op_seconds,
            comparison_seconds,
        })
    }

    /// Seconds `overhead` takes at these rates.
    pub fn seconds(&self, overhead: &Overhead) -> f64 {
        overhead.ops * self.op_seconds + overhead.comparisons * self.comparison_seconds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_measured_and_positive() -> Result<()> {
        let r = Rates::measure()?;
        assert!(r.op_seconds > 0.0 && r.op_seconds.is_finite(), "{r:?}");
        assert!(r.comparison_seconds > 0.0 && r.comparison_seconds.is_finite(), "{r:?}");
        Ok(())
    }

    /// The case that ran for minutes on an estimate of "0.0 s": five thousand layers of width one
    /// cost far more in comparisons and graph walks than in arithmetic. Each layer's read of what
    /// the graph keeps walked the whole graph behind it (quadratic in the depth: 21.7 s), and
    /// before that compared every saved tensor with every parameter (cubic); now the graph is
    /// walked once in all, and the estimate grows with the depth alone.
    #[test]
    fn a_deep_narrow_model_counts_its_comparisons() {
        let at = |layers: f64| {
            overhead("activation_memory", &|name| match name {
                "num_layers" => layers,
                "segment_layers" => 4.0,
                _ => 1.0,
            })
        };
        let (small, large) = (at(500.0), at(5000.0));
        // Ten times the layers, about ten times the work, not a hundred.
        for (name, s, l) in [
            ("comparisons", small.comparisons, large.comparisons),
            ("ops", small.ops, large.ops),
        ] {
            assert!((8.0..12.0).contains(&(l / s)), "{name}: {small:?} {large:?}");
        }
        // Every layer's tensor ops and its two saved tensors, at least.
        assert!(large.ops >= 40.0 * 5000.0, "{large:?}");
        assert!(large.comparisons >= 2.0 * 5000.0, "{large:?}");
    }
}
