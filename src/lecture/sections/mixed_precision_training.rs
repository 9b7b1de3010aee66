//! Mixed-precision training: float32, pure bfloat16, and bfloat16 compute on float32 master
//! weights, trained on the same data from the same start.

use serde_json::json;

use crate::error::Result;
use crate::lecture::givens::given;
use crate::lecture::trainer::{Batches, LinearData, Precision, train};
use crate::lecture::what_if::Cost;
use crate::lecture::{SectionCtx, record};
use crate::nn::{Cruncher, Module, ParamOptions};
use crate::optim::Sgd;
use crate::tensor::{DType, Tensor};

/// The lecture's claim, put to the test: the same model trained in fp32, in pure bf16, and in bf16
/// compute on fp32 master weights, and the losses each run reaches recorded side by side.
pub fn mixed_precision_training(cx: &mut SectionCtx) -> Result<()> {
    let lr = given!(cx, lr: Positive = 0.01, none, "learning rate of the three runs")?;
    let (d, num_layers, b, steps) = (32, 2, 32, 300);
    let setup =
        json!({"dim": d, "num_layers": num_layers, "batch_size": b, "lr": lr, "steps": steps, "optimizer": "sgd"});
    record!(cx, given setup)?;
    // Unit-scale targets: true weights ~ N(0, 1/D), so y = x @ true_w ~ N(0, 1).
    let true_w = Tensor::randn(&[d], DType::F32, &mut cx.rng)?
        .div_scalar((d as f64).sqrt())?
        .to_device(&cx.device)?;
    let data = LinearData {
        true_w,
        device: cx.device.clone(),
        batch_size: b,
    };
    let (init_rng, data_rng) = (cx.rng.fork(), cx.rng.fork());
    // The same initial weights (rounded to bf16 where the run keeps bf16 weights) and batches.
    let run = |precision: Precision, lr: f64| {
        let options = ParamOptions {
            dtype: precision.param_dtype(),
            device: data.device.clone(),
            ..ParamOptions::default()
        };
        let model = Cruncher::with_options(d, num_layers, &options, &mut init_rng.clone())?;
        let mut batches = Batches::copy_of(&data_rng);
        train_watching_the_last_update(&model, lr, &data, &mut batches, steps, precision)
    };
    let tail_mean = |l: &[f64]| l[l.len().saturating_sub(20)..].iter().sum::<f64>() / l.len().clamp(1, 20) as f64;
    // Mean of the last 20 steps: single-batch losses are noisy. Of the weights, the fraction the
    // last update left unchanged (lost to rounding, in bf16). Both low-precision runs follow the kernel:
    // rounding a float32 sum to bf16 hides most of the order the kernel summed in, but not a sum near the
    // midpoint of two bf16 values (AMX tiles and `vdpbf16ps` part there); mixed keeps the float32 sum.
    let fp32 = run(Precision::Fp32, lr)?;
    record!(cx, computed losses_fp32 = fp32.losses.clone())?;
    record!(cx, computed final_loss_fp32 = tail_mean(&fp32.losses))?;
    record!(cx, computed updates_lost_fp32 = fp32.updates_lost, ratio)?;
    let bf16 = run(Precision::Bf16, lr)?;
    record!(cx, rounding losses_bf16 = bf16.losses.clone())?;
    record!(cx, rounding final_loss_bf16 = tail_mean(&bf16.losses))?;
    record!(cx, rounding updates_lost_bf16 = bf16.updates_lost, ratio)?;
    let mixed = run(Precision::Mixed, lr)?;
    record!(cx, rounding losses_mixed = mixed.losses.clone())?;
    record!(cx, rounding final_loss_mixed = tail_mean(&mixed.losses))?;
    record!(cx, rounding updates_lost_mixed = mixed.updates_lost, ratio)?;

    // A 5× larger learning rate: updates are larger than bf16's spacing for longer, and all
    // three runs go further before the precision of the forward pass limits them.
    let high_lr = 5.0 * lr;
    let mut high = serde_json::Map::new();
    for (name, precision) in [
        ("fp32", Precision::Fp32),
        ("bf16", Precision::Bf16),
        ("mixed", Precision::Mixed),
    ] {
        let r = run(precision, high_lr)?;
        high.insert(
            name.into(),
            json!({"final_loss": tail_mean(&r.losses), "updates_lost": r.updates_lost}),
        );
    }
    record!(cx, given high_lr)?;
    // The bf16 and mixed runs' results follow their kernel's rounding, and so does the whole.
    record!(cx, rounding high_lr_results = serde_json::Value::Object(high))?;
    Ok(())
}

struct PrecisionRun {
    losses: Vec<f64>,
    /// Fraction of parameter elements whose last update did not change them.
    updates_lost: f64,
}

/// SGD for `steps` steps in `precision`, and how many parameters the last update left unchanged.
fn train_watching_the_last_update(
    model: &Cruncher,
    lr: f64,
    data: &LinearData,
    batches: &mut Batches,
    steps: u64,
    precision: Precision,
) -> Result<PrecisionRun> {
    let mut optimizer = Sgd::new(model, lr)?;
    let last = steps.saturating_sub(1);
    let mut losses = train(model, &mut optimizer, data, batches, 0..last, precision)?;
    let before: Vec<Tensor> = model
        .state_dict()
        .iter()
        .map(|(_, p)| p.deep_clone())
        .collect::<Result<_>>()?;
    losses.extend(train(model, &mut optimizer, data, batches, last..steps, precision)?);
    let (mut same, mut total) = (0usize, 0usize);
    for ((_, after), before) in model.state_dict().iter().zip(&before) {
        let (a, b) = (after.to_vec_f64()?, before.to_vec_f64()?);
        same += a.iter().zip(&b).filter(|(x, y)| x == y).count();
        total += a.len();
    }
    Ok(PrecisionRun {
        losses,
        updates_lost: same as f64 / total.max(1) as f64,
    })
}

/// What a what-if of this section needs (`what_if::check_cost`), with each given as `get` reads it.
pub(super) fn cost(_get: &dyn Fn(&str) -> f64) -> Cost {
    // Its sizes are fixed; its learning rate changes nothing it costs: three runs of 300
    // steps of a 32-wide, two-layer Cruncher on batches of 32.
    Cost {
        bytes: 1e6,
        flops: 3.0 * 300.0 * 6.0 * 32.0 * (2.0 * 32.0 * 32.0 + 32.0),
        trace_bytes: 0.0,
    }
}
