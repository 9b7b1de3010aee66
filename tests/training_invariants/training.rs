//! The training loop, checkpointing (against the file it describes) and mixed precision.

use super::*;

pub(crate) fn check_train_loop(v: &Values) {
    let (a, b) = (floats(val(v, "losses_lr_0_01")), floats(val(v, "losses_lr_0_1")));
    assert_eq!((a.len(), b.len()), (10, 10));
    assert_eq!(a[0], b[0], "same initial weights and batch: the first loss is the same");
    // The first run, step by step: `loss` holds each step's loss as it was computed.
    let loss: Vec<f64> = states(v, "loss").iter().map(|s| number_from_json(s).unwrap()).collect();
    assert_eq!(loss, a, "the history of `loss` is the first run's losses");
    let rec = &v["loss"];
    assert!(
        rec.line > 0 && rec.history.iter().all(|s| s.line == rec.line),
        "one line, in the loop"
    );
    assert_ne!(a[1..], b[1..], "lr is honoured: the curves differ after the first step");
    let runs = val(v, "longer_runs").as_object().unwrap();
    let steps = num(v, "long_num_train_steps") as usize;
    for (name, r) in runs {
        let losses = floats(&r["losses"]);
        assert_eq!(losses.len(), steps, "{name}");
    }
    // SGD at lr 0.1 recovers the true weights 0..15.
    assert!(runs["sgd_lr_0_1"]["max_weight_error"].as_f64().unwrap() < 1e-3);
    assert!(runs["sgd_lr_0_1"]["final_loss"].as_f64().unwrap() < 1e-6 * floats(&runs["sgd_lr_0_1"]["losses"])[0]);
}

pub(crate) fn check_checkpointing(v: &Values) {
    assert_eq!(num(v, "loaded_step"), 10.0);
    assert_eq!(val(v, "loaded_bit_identical"), &Value::Bool(true));
    assert_eq!(val(v, "resumed_bit_identical"), &Value::Bool(true));
    let (u, r) = (floats(val(v, "losses_uninterrupted")), floats(val(v, "losses_resumed")));
    assert_eq!(u.len(), 20);
    assert!(
        u.iter().zip(&r).all(|(a, b)| a.to_bits() == b.to_bits()),
        "resumed training follows the same trajectory bit for bit"
    );
    let names: Vec<&str> = val(v, "checkpoint_tensors")
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 8, "4 parameters and 4 AdaGrad states: {names:?}");
    assert_eq!(val(v, "checkpoint_metadata")["step"], "10");
    assert_eq!(
        num(v, "checkpoint_bytes"),
        safetensors_file_size(val(v, "checkpoint_tensors"), val(v, "checkpoint_metadata")) as f64,
        "checkpoint_bytes is the size of a safetensors file holding checkpoint_tensors and checkpoint_metadata"
    );
    assert!(val(v, "truncated_error").as_str().unwrap().contains("truncated"));
    assert!(val(v, "corrupt_error").as_str().unwrap().contains("corrupt"));
    assert!(
        val(v, "shape_mismatch_error")
            .as_str()
            .unwrap()
            .contains("another shape")
    );
}

/// The size of the safetensors file that holds tensors of these names, shapes and dtypes and this
/// metadata: the file is its header (JSON naming each tensor's extent, padded to 8 bytes) and the
/// tensors' bytes, so serialising zeros of the same sizes gives a file of the same length.
fn safetensors_file_size(tensors: &Value, metadata: &Value) -> usize {
    use safetensors::tensor::{Dtype, TensorView};
    let items: Vec<(String, Dtype, Vec<usize>)> = tensors
        .as_array()
        .expect("checkpoint_tensors is a list")
        .iter()
        .map(|t| {
            let dtype = match t["dtype"].as_str() {
                Some("float32") => Dtype::F32,
                Some("bfloat16") => Dtype::BF16,
                Some("float16") => Dtype::F16,
                Some("int32") => Dtype::I32,
                Some("int64") => Dtype::I64,
                other => panic!("checkpoint_tensors: unknown dtype {other:?}"),
            };
            let shape = floats(&t["shape"]).into_iter().map(|x| x as usize).collect();
            (t["name"].as_str().expect("a name").to_string(), dtype, shape)
        })
        .collect();
    let data: Vec<Vec<u8>> = items
        .iter()
        .map(|(_, dtype, shape)| vec![0u8; shape.iter().product::<usize>() * dtype.bitsize() / 8])
        .collect();
    let views: Vec<(&str, TensorView<'_>)> = items
        .iter()
        .zip(&data)
        .map(|((name, dtype, shape), bytes)| {
            (
                name.as_str(),
                TensorView::new(*dtype, shape.clone(), bytes).expect("a tensor view"),
            )
        })
        .collect();
    let meta: std::collections::HashMap<String, String> = metadata
        .as_object()
        .expect("checkpoint_metadata is an object")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("string metadata").to_string()))
        .collect();
    safetensors::tensor::serialize(views, Some(meta))
        .expect("serialises")
        .len()
}

pub(crate) fn check_mixed_precision_training(v: &Values) {
    let steps = val(v, "setup")["steps"].as_u64().unwrap() as usize;
    let curves: Vec<Vec<f64>> = ["fp32", "bf16", "mixed"]
        .iter()
        .map(|n| floats(val(v, &format!("losses_{n}"))))
        .collect();
    for c in &curves {
        assert_eq!(c.len(), steps);
    }
    // Same initial weights and batch: the first losses agree to bf16 precision.
    for c in &curves[1..] {
        assert!(
            (c[0] - curves[0][0]).abs() <= 1e-2 * curves[0][0],
            "{} vs {}",
            c[0],
            curves[0][0]
        );
    }
    for n in ["fp32", "bf16", "mixed"] {
        let lost = num(v, &format!("updates_lost_{n}"));
        assert!((0.0..=1.0).contains(&lost), "updates_lost_{n} = {lost}");
        let tail = &curves[["fp32", "bf16", "mixed"].iter().position(|&m| m == n).unwrap()];
        let tail = &tail[tail.len() - 20..];
        assert_eq!(
            num(v, &format!("final_loss_{n}")),
            tail.iter().sum::<f64>() / 20.0,
            "final_loss_{n} is the mean of the last 20 losses_{n}"
        );
    }
    // What the chapter says happened. Pure bf16 loses most of its last updates to rounding, far
    // more than float32 or mixed precision, and stalls short of float32; mixed precision keeps the
    // small updates and gets closer to float32 than pure bf16.
    let (lost, final_loss) = (
        |n: &str| num(v, &format!("updates_lost_{n}")),
        |n: &str| num(v, &format!("final_loss_{n}")),
    );
    assert!(
        lost("bf16") > 0.5 && lost("bf16") > lost("fp32") && lost("bf16") > lost("mixed"),
        "updates_lost_bf16 ({}) is most, above updates_lost_fp32 ({}) and updates_lost_mixed ({})",
        lost("bf16"),
        lost("fp32"),
        lost("mixed")
    );
    assert!(
        final_loss("bf16") > final_loss("mixed") && final_loss("mixed") > final_loss("fp32"),
        "final_loss_bf16 ({}) > final_loss_mixed ({}) > final_loss_fp32 ({})",
        final_loss("bf16"),
        final_loss("mixed"),
        final_loss("fp32")
    );
    // With a 5× learning rate all three runs get further; bf16 and mixed then stop where the
    // bf16 forward pass they share limits them, far above float32.
    assert_eq!(
        num(v, "high_lr"),
        5.0 * val(v, "setup")["lr"].as_f64().unwrap(),
        "high_lr = 5 × lr"
    );
    let high = val(v, "high_lr_results");
    let high_loss = |n: &str| {
        high[n]["final_loss"]
            .as_f64()
            .unwrap_or_else(|| panic!("high_lr_results.{n}.final_loss"))
    };
    // Only float32 is sure to get further: where bf16 rounding limits the run, whether the larger
    // steps help depends on how this CPU's bf16 kernel rounds (AMX and AVX512_BF16 differ), so the
    // chapter decides that sentence from the trace instead of this test asserting it.
    assert!(
        high_loss("fp32") < final_loss("fp32"),
        "high_lr_results.fp32.final_loss ({}) should be below final_loss_fp32 ({})",
        high_loss("fp32"),
        final_loss("fp32")
    );
    for n in ["fp32", "bf16", "mixed"] {
        assert!(
            high_loss(n).is_finite(),
            "high_lr_results.{n}.final_loss = {}",
            high_loss(n)
        );
        let lost = high[n]["updates_lost"].as_f64().unwrap_or(-1.0);
        assert!((0.0..=1.0).contains(&lost), "high_lr_results.{n}.updates_lost = {lost}");
    }
    for n in ["bf16", "mixed"] {
        assert!(
            high_loss(n) > 100.0 * high_loss("fp32"),
            "high_lr_results.{n}.final_loss ({}) is limited by bf16, far above fp32's ({})",
            high_loss(n),
            high_loss("fp32")
        );
    }
}
