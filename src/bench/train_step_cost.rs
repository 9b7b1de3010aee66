//! What `bench train-step` will cost, said before it starts and refused past the what-ifs' limit
//! unless `--yes`. FLOPs at the device's peak price a wide model; a deep and narrow one
//! (`--dim 1 --layers 200000`) is all fixed cost, one allocation, graph node and dispatch per op,
//! and FLOPs alone said nothing while it ran for minutes. So every op is priced as the what-ifs
//! price theirs ([`Rates`], measured on this machine), and each contender is counted as the
//! timing loop will call it.

use super::train_step::{Config, options};
use crate::error::{Error, Result};
use crate::lecture::what_if::{MAX_SECONDS, Overhead, Rates};

/// What a run is estimated to cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub seconds: f64,
    /// FLOPs in all, every call of every contender.
    pub flops: f64,
    /// Tensor ops in all.
    pub ops: f64,
}

/// Tensor ops of one layer's forward and backward: a matmul and a ReLU forward; two matmuls, the
/// ReLU's gradient and the gradient's accumulation backward (measured: 10 µs a layer at 1.3 µs an
/// op, at width one).
const FORWARD_BACKWARD_OPS_PER_LAYER: f64 = 7.0;

/// Tensor ops of one parameter's update: one fused kernel for SGD and AdaGrad alike (measured:
/// 0.9 µs a parameter at width one), and its gradient let go.
const UPDATE_OPS_PER_PARAMETER: f64 = 1.0;

/// One call of a part of the step: its FLOPs and its ops.
#[derive(Clone, Copy)]
struct Part {
    flops: f64,
    ops: f64,
}

impl Part {
    fn plus(self, other: Part) -> Part {
        Part {
            flops: self.flops + other.flops,
            ops: self.ops + other.ops,
        }
    }

    fn seconds(&self, peak: f64, rates: &Rates) -> f64 {
        self.flops / peak
            + rates.seconds(&Overhead {
                ops: self.ops,
                comparisons: 0.0,
            })
    }
}

impl Config {
    /// What `run` will cost at `peak` FLOP/s and `rates` per op: each of its contenders (the step;
    /// forward and backward alone; the update, after a forward and backward each time; the step
    /// with its updates inside backward; the step's matmuls replayed) called as its timing loop
    /// calls it (warm-ups, then samples until their time or count is reached), the step once more
    /// to count its FLOPs, and the two models and the replayed operands made.
    pub fn estimate(&self, peak: f64, rates: &Rates) -> Estimate {
        let (dim, layers, batch) = (self.dim as f64, self.num_layers as f64, self.batch as f64);
        let tensors = layers + 1.0;
        let parameters = dim * dim * layers + dim;
        let forward_backward = Part {
            flops: 6.0 * batch * parameters,
            ops: FORWARD_BACKWARD_OPS_PER_LAYER * tensors,
        };
        let update = Part {
            flops: 10.0 * parameters,
            ops: UPDATE_OPS_PER_PARAMETER * tensors,
        };
        let step = forward_backward.plus(update);
        let matmuls = Part {
            flops: forward_backward.flops,
            ops: 3.0 * tensors,
        };
        // (what is timed, what one call costs)
        let contenders = [
            (step, step),
            (forward_backward, forward_backward),
            (update, step),
            (step, step),
            (matmuls, matmuls),
        ];
        let budget = options();
        let (mut seconds, mut flops, mut ops) = (0.0, 0.0, 0.0);
        for (timed, call) in contenders {
            let timed_s = timed.seconds(peak, rates).max(1e-9);
            let samples = (budget.min_time.as_secs_f64() / timed_s)
                .ceil()
                .max(budget.min_samples as f64)
                .min(budget.max_samples as f64);
            let calls = samples + budget.warmup as f64;
            seconds += calls * call.seconds(peak, rates).max(timed_s) + budget.warmup_time.as_secs_f64();
            flops += calls * call.flops;
            ops += calls * call.ops;
        }
        // The step counted once; two models and the replayed products' operands made.
        let made = Part {
            flops: 0.0,
            ops: 8.0 * tensors,
        };
        seconds += step.plus(made).seconds(peak, rates);
        flops += step.flops;
        ops += step.ops + made.ops;
        Estimate { seconds, flops, ops }
    }

    /// [`Config::check`], then the estimate against [`MAX_SECONDS`], the what-ifs' limit: past
    /// it, refused unless `yes`. Returns the estimate, to be shown.
    pub fn check_time(&self, peak: f64, rates: &Rates, yes: bool) -> Result<Estimate> {
        self.check()?;
        let estimate = self.estimate(peak, rates);
        if estimate.seconds > MAX_SECONDS && !yes {
            return Err(Error::invalid(
                "bench train-step",
                format!(
                    "--dim {} --layers {} --batch {} would take about {:.0} s ({}), past the {MAX_SECONDS:.0} s a \
                     benchmark runs without asking; add `--yes` to run it anyway, or use smaller sizes",
                    self.dim,
                    self.num_layers,
                    self.batch,
                    estimate.seconds,
                    estimate.describe(peak, rates)
                ),
            ));
        }
        Ok(estimate)
    }
}

impl Estimate {
    /// "8.7e7 FLOP at this device's peak, 3.3e11 FLOP/s, and 5.1e7 tensor ops at 1.24 µs an op".
    pub fn describe(&self, peak: f64, rates: &Rates) -> String {
        format!(
            "{:.2e} FLOP at this device's peak, {peak:.3e} FLOP/s, and {:.2e} tensor ops at {:.2} µs an op",
            self.flops,
            self.ops,
            rates.op_seconds * 1e6
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATES: Rates = Rates {
        op_seconds: 1.3e-6,
        comparison_seconds: 1e-9,
    };

    fn config(dim: usize, num_layers: usize, batch: usize) -> Config {
        Config {
            dim,
            num_layers,
            batch,
            ..Config::default()
        }
    }

    /// The case that ran for minutes with no estimate: two hundred thousand layers of width one
    /// took 72 s here (at 1.2–1.6 µs an op); the estimate counts its ops, not its few FLOPs.
    #[test]
    fn a_deep_narrow_step_is_priced_by_its_ops() {
        let deep = config(1, 200_000, 1).estimate(3e11, &RATES);
        assert!((40.0..150.0).contains(&deep.seconds), "{deep:?}");
        assert!(deep.ops > 1e7 && deep.flops < 1e9, "{deep:?}");
        // Ten times deeper is ten times longer, and refused without `--yes`.
        let deeper = config(1, 2_000_000, 1);
        let err = deeper.check_time(3e11, &RATES, false).unwrap_err().to_string();
        assert!(
            err.contains("--yes") && err.contains("180 s") && err.contains("tensor ops"),
            "{err}"
        );
        assert!(deeper.check_time(3e11, &RATES, true).is_ok());
    }

    /// The default step costs its timing budget: about a second per contender (fifty samples of
    /// a 20 ms step at most), well inside the limit.
    #[test]
    fn the_default_step_is_priced_by_its_budget() {
        let e = Config::default().estimate(3e11, &RATES);
        assert!((2.0..60.0).contains(&e.seconds), "{e:?}");
        // A wide step is priced by its FLOPs.
        let wide = config(16384, 64, 16384).estimate(3e11, &RATES);
        assert!(wide.seconds > MAX_SECONDS && wide.flops > 1e14, "{wide:?}");
    }
}
