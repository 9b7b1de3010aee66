//! The spec's invariants for the compute and training sections, checked on a fresh in-process
//! CPU run and on every committed trace under trace/ (a trace without a section is skipped, and
//! the test says so).

mod common;

use std::sync::{Mutex, OnceLock};

use indexmap::IndexMap;
use serde_json::Value;

use cs336::device::{Device, DeviceChoice};
use cs336::lecture::{self, run};
use cs336::trace::{SectionRecord, ValueRecord, number_from_json};

type Values = IndexMap<String, ValueRecord>;

/// Sections that time things run one at a time, so they do not slow each other down.
fn timing_lock() -> &'static Mutex<()> {
    static LOCK: OnceLock<Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| Mutex::new(()))
}

fn fresh(id: &str) -> SectionRecord {
    let _guard = timing_lock().lock().unwrap_or_else(|e| e.into_inner());
    let def = lecture::find(id).unwrap_or_else(|| panic!("no section {id}"));
    let choice = DeviceChoice {
        device: Device::Cpu,
        cuda_unavailable_reason: None,
    };
    let run = cs336::trace::provenance::run(0, std::path::Path::new(common::ROOT));
    run::run_section(def, &choice, &run).unwrap_or_else(|e| panic!("{e}"))
}

fn num(v: &Values, name: &str) -> f64 {
    let rec = v.get(name).unwrap_or_else(|| panic!("value `{name}` missing"));
    number_from_json(&rec.value).unwrap_or_else(|| panic!("`{name}` is not a number: {}", rec.value))
}

fn val<'a>(v: &'a Values, name: &str) -> &'a Value {
    &v.get(name).unwrap_or_else(|| panic!("value `{name}` missing")).value
}

fn floats(x: &Value) -> Vec<f64> {
    match x {
        Value::Array(items) => items.iter().flat_map(floats).collect(),
        other => vec![number_from_json(other).unwrap_or_else(|| panic!("not a number: {other}"))],
    }
}

/// The states of a value recorded as a history (earlier states, then the final one).
fn states(v: &Values, name: &str) -> Vec<Value> {
    let rec = v.get(name).unwrap_or_else(|| panic!("value `{name}` missing"));
    (0..rec.num_states())
        .map(|k| rec.state(k).expect("a state").value)
        .collect()
}

/// 0 < MFU ≤ 1.2 for every recorded MFU, top level and inside the sweep.
fn check_mfus(id: &str, v: &Values) {
    for (name, rec) in v {
        if name.ends_with("mfu") {
            let m = number_from_json(&rec.value).unwrap();
            assert!(m > 0.0 && m <= 1.2, "{id}.{name} = {m}");
        }
    }
    if let Some(Value::Array(points)) = v.get("throughput_sweep").map(|r| &r.value) {
        for p in points {
            if let Some(m) = p["mfu"].as_f64() {
                assert!(m > 0.0 && m <= 1.2, "{id} sweep point {p}");
            }
        }
    }
    // An MFU is either recorded or explained.
    for prefix in ["", "bf16_"] {
        assert!(
            v.contains_key(&format!("{prefix}mfu")) || v.contains_key(&format!("{prefix}mfu_unavailable_reason")),
            "{id}: no {prefix}mfu and no reason"
        );
    }
}

fn check_tensor_operations_flops(v: &Values, cpu: bool) {
    let (b, d, k) = (num(v, "B"), num(v, "D"), num(v, "K"));
    if cpu {
        assert_eq!((b, d, k), (1024.0, 256.0, 64.0));
    } else {
        // The lecture's GPU sizes, and TF32 beside fp32 and bf16.
        assert_eq!((b, d, k), (16384.0, 32768.0, 8192.0));
        let t = num(v, "tf32_actual_time");
        let spread = val(v, "tf32_actual_time_spread");
        assert!(
            t > 0.0 && spread["min_s"].as_f64().unwrap() <= t && t <= spread["max_s"].as_f64().unwrap(),
            "tf32: {t} {spread}"
        );
        assert!(
            (num(v, "tf32_actual_flop_per_sec") - num(v, "actual_num_flops") / t).abs()
                <= 1e-6 * num(v, "tf32_actual_flop_per_sec")
        );
        assert!(
            v.contains_key("tf32_mfu") || v.contains_key("tf32_mfu_unavailable_reason"),
            "no tf32_mfu and no reason"
        );
        // cuBLAS's default FP32 (PyTorch's) beside the pedantic row, timed the same way.
        let t = num(v, "fp32_default_actual_time");
        assert!(
            (num(v, "fp32_default_actual_flop_per_sec") - num(v, "actual_num_flops") / t).abs()
                <= 1e-6 * num(v, "fp32_default_actual_flop_per_sec")
        );
        assert_eq!(
            val(v, "bf16_reduced_precision_reduction"),
            &Value::Bool(true),
            "cuBLAS's default math mode"
        );
    }
    // The bf16 product hands back bf16 on both devices; only the GPU may reduce in bf16.
    assert_eq!(val(v, "bf16_output_dtype"), &Value::from("bfloat16"));
    if cpu {
        assert_eq!(val(v, "bf16_reduced_precision_reduction"), &Value::Bool(false));
    }
    assert_eq!(num(v, "actual_num_flops"), 2.0 * b * d * k);
    assert_eq!(
        num(v, "counted_num_flops"),
        num(v, "actual_num_flops"),
        "the FLOP counter must see 2·B·D·K"
    );
    assert!((num(v, "total_flops") - 8.0 * 604800.0 * 989.5e12).abs() < 1e9);
    for name in ["actual_time", "bf16_actual_time"] {
        let t = num(v, name);
        let spread = val(v, &format!("{name}_spread"));
        assert!(
            t > 0.0 && spread["min_s"].as_f64().unwrap() <= t && t <= spread["max_s"].as_f64().unwrap(),
            "{name}: {t} {spread}"
        );
    }
    assert!(
        (num(v, "actual_flop_per_sec") - num(v, "actual_num_flops") / num(v, "actual_time")).abs()
            <= 1e-6 * num(v, "actual_flop_per_sec")
    );
    if v.contains_key("mfu") {
        let expect = num(v, "actual_flop_per_sec") / num(v, "promised_flop_per_sec");
        assert!((num(v, "mfu") - expect).abs() < 1e-9, "mfu is achieved / promised");
    }
    check_mfus("tensor_operations_flops", v);
    let sweep = val(v, "throughput_sweep").as_array().unwrap();
    for dtype in ["fp32", "bf16"] {
        assert!(
            sweep.iter().filter(|p| p["dtype"] == dtype).count() >= 4,
            "sweep has too few {dtype} points"
        );
    }
    for p in sweep {
        let n = p["n"].as_f64().unwrap();
        assert_eq!(p["flops"].as_f64().unwrap(), 2.0 * n * n * n);
    }
}

fn check_gradients_basics(v: &Values) {
    assert_eq!(num(v, "loss"), 0.5);
    assert_eq!(floats(val(v, "w_grad")), vec![1.0, 2.0, 3.0]);
    assert_eq!(val(v, "x_grad_is_none"), &Value::Bool(true));
    assert_eq!(val(v, "pred_y_grad_is_none"), &Value::Bool(true));
}

fn check_gradients_flops(v: &Values, cpu: bool) {
    let (b, d, k) = (num(v, "B"), num(v, "D"), num(v, "K"));
    let forward = 2.0 * b * d * d + 2.0 * b * d * k;
    assert_eq!(num(v, "num_forward_flops"), forward);
    assert_eq!(num(v, "num_backward_flops"), 2.0 * forward);
    // Added up term by term: w2.grad, h1.grad (2·B·D·K each), w1.grad, x.grad (2·B·D·D each).
    let terms: Vec<f64> = states(v, "num_backward_flops")
        .iter()
        .map(|s| s.as_f64().unwrap())
        .collect();
    let (bdk, bdd) = (2.0 * b * d * k, 2.0 * b * d * d);
    assert_eq!(terms, [0.0, bdk, 2.0 * bdk, 2.0 * bdk + bdd, 2.0 * bdk + 2.0 * bdd]);
    let lines: Vec<u32> = {
        let rec = &v["num_backward_flops"];
        rec.history.iter().map(|s| s.line).chain([rec.line]).collect()
    };
    assert!(
        lines.windows(2).all(|w| w[0] < w[1]),
        "each term on its own line: {lines:?}"
    );
    if cpu {
        assert_eq!(num(v, "num_forward_flops"), 167_772_160.0);
        assert_eq!(num(v, "num_backward_flops"), 335_544_320.0);
    }
    assert_eq!(num(v, "counted_forward_flops"), forward, "counted forward = formula");
    // x needs no gradient: backward skips x.grad, 2·B·D·D.
    assert_eq!(
        num(v, "counted_backward_flops"),
        2.0 * forward - 2.0 * b * d * d,
        "counted backward = formula − x.grad term"
    );
    assert_eq!(num(v, "backward_flops_skipped"), 2.0 * b * d * d);
    assert_eq!(num(v, "counted_backward_flops_x_requires_grad"), 2.0 * forward);
    assert!(num(v, "counted_forward_flops_all_ops") >= forward);
    assert!(num(v, "forward_time") > 0.0 && num(v, "backward_time") > 0.0);
}

fn check_module_parameters(v: &Values) {
    let ratio = num(v, "output_std") / num(v, "expected_output_std");
    assert!(
        (0.6..1.5).contains(&ratio),
        "N(0,1) weights: output std {ratio}× √input_dim"
    );
    assert!(
        (0.6..1.5).contains(&num(v, "xavier_output_std")),
        "Xavier outputs are O(1)"
    );
    let bound = num(v, "truncation_bound");
    assert_eq!(bound, 3.0 / 128.0);
    assert!(num(v, "truncated_min") >= -bound && num(v, "truncated_max") <= bound);
    assert_eq!(
        num(v, "weights_beyond_absolute_3"),
        0.0,
        "±3 absolute truncates nothing at std 1/128"
    );
    assert!(num(v, "weights_beyond_3_sigma") > 0.0);
    for p in val(v, "output_std_vs_input_dim").as_array().unwrap() {
        let root = p["sqrt_input_dim"].as_f64().unwrap();
        assert!((0.8..1.25).contains(&(p["normal_std"].as_f64().unwrap() / root)), "{p}");
        assert!((0.8..1.25).contains(&p["xavier_std"].as_f64().unwrap()), "{p}");
    }
}

fn check_custom_model(v: &Values) {
    let sizes: Vec<(String, f64)> = val(v, "param_sizes")
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap().to_string(), p["numel"].as_f64().unwrap()))
        .collect();
    assert_eq!(
        sizes,
        vec![
            ("layers.0.weight".to_string(), 4096.0),
            ("layers.1.weight".into(), 4096.0),
            ("final.weight".into(), 64.0)
        ]
    );
    assert_eq!(num(v, "num_parameters"), 8256.0);
    assert_eq!(num(v, "expected_num_parameters"), 8256.0);
    assert_eq!(floats(val(v, "y_shape")), vec![8.0]);
}

fn check_note_about_randomness(v: &Values) {
    assert_eq!(val(v, "same_seed_bit_identical"), &Value::Bool(true));
    assert_eq!(val(v, "different_seed_identical"), &Value::Bool(false));
    assert_eq!(val(v, "shared_stream_init_unchanged"), &Value::Bool(false));
    assert_eq!(val(v, "separate_streams_init_unchanged"), &Value::Bool(true));
    assert_ne!(floats(val(v, "x_seed_0")), floats(val(v, "x_seed_1")));
}

fn check_data_loading(v: &Values, cpu: bool) {
    if !cpu {
        // Host-to-device bandwidth measured both ways; the ratio is what the two figures give.
        let (pageable, pinned) = (num(v, "h2d_pageable_bytes_per_sec"), num(v, "h2d_pinned_bytes_per_sec"));
        assert!(pageable > 0.0 && pinned > 0.0);
        assert!((num(v, "pinned_over_pageable") - pinned / pageable).abs() <= 1e-9 * pinned / pageable);
    }
    assert_eq!(floats(val(v, "data")), (1..=10).map(f64::from).collect::<Vec<_>>());
    assert_eq!(val(v, "equal_to_original"), &Value::Bool(true));
    let x = val(v, "x").as_array().unwrap();
    let starts = floats(val(v, "starts"));
    assert_eq!(x.len(), 2);
    for (row, start) in x.iter().zip(&starts) {
        let row = floats(row);
        assert_eq!(row.len(), 4);
        // Token i of the file is i + 1; each row is 4 consecutive tokens from its start.
        assert_eq!(
            row,
            (0..4).map(|i| start + 1.0 + i as f64).collect::<Vec<_>>(),
            "row {row:?} from start {start}"
        );
        assert!(*start + 4.0 < 10.0, "the token after each window exists");
    }
    assert!(
        val(v, "odd_length_error")
            .as_str()
            .unwrap()
            .contains("not a whole number of int32 tokens")
    );
    assert!(
        val(v, "too_short_error")
            .as_str()
            .unwrap()
            .contains("needs at least 11")
    );
}

fn check_optimizer(v: &Values) {
    let (lr, eps) = (num(v, "lr"), num(v, "eps"));
    assert_eq!((lr, eps), (0.01, 1e-5));
    // AdaGrad's first step: g2 = g², p moves by lr·g/√(g² + eps) (about lr when |g| ≫ 3e-3).
    // `state` is one history: the parameters before the step, then after it.
    let state = states(v, "state");
    assert_eq!(state.len(), 2, "before and after the step");
    let (before, grads, after, g2) = (&state[0], val(v, "grads"), &state[1], val(v, "g2_after"));
    let mut checked = 0;
    for (name, p0) in before.as_object().unwrap() {
        let (p0, g, p1, s) = (
            floats(p0),
            floats(&grads[name]),
            floats(&after[name]),
            floats(&g2[format!("{name}.g2")]),
        );
        for i in 0..p0.len() {
            let step = lr * g[i] / (g[i] * g[i] + eps).sqrt();
            assert!(
                (p1[i] - (p0[i] - step)).abs() <= 2e-7 * p0[i].abs().max(1.0),
                "{name}[{i}]: {} vs {}",
                p1[i],
                p0[i] - step
            );
            assert!(
                (s[i] - g[i] * g[i]).abs() <= 1e-6 * (g[i] * g[i]).max(1e-30),
                "{name}.g2[{i}]"
            );
            if g[i].abs() > 0.1 {
                assert!(
                    ((p0[i] - p1[i]).abs() - lr).abs() < 1e-4,
                    "a large gradient moves the weight by ≈ lr"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 36);
    // The lecture's accounting.
    assert_eq!(num(v, "num_parameters"), 36.0);
    assert_eq!(num(v, "num_activations"), 16.0);
    assert_eq!(num(v, "num_gradients"), 36.0);
    assert_eq!(num(v, "num_optimizer_states"), 36.0);
    assert_eq!(num(v, "total_memory"), 496.0);
    assert_eq!(num(v, "flops"), 432.0);
    // What the code did: 6·B·P when x needs a gradient; 2·B·D·D less when it does not.
    assert_eq!(num(v, "counted_flops_x_requires_grad"), 6.0 * 2.0 * 36.0);
    assert_eq!(num(v, "counted_flops"), 432.0 - 2.0 * 2.0 * 4.0 * 4.0);
    assert_eq!(num(v, "counted_optimizer_flops"), 7.0 * 36.0);
    let m = val(v, "measured_bytes");
    assert_eq!(m["parameters"], 144);
    assert_eq!(m["gradients"], 144);
    assert_eq!(m["optimizer_state"], 144);
    // The layer outputs (B·D per layer) plus the loss's residual (B values).
    assert_eq!(m["saved_activations"], 4 * (16 + 2));
    assert_eq!(num(v, "measured_total_memory"), (144 * 3 + 72) as f64);
}

fn check_train_loop(v: &Values) {
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

fn check_checkpointing(v: &Values) {
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
    assert!(val(v, "truncated_error").as_str().unwrap().contains("truncated"));
    assert!(val(v, "corrupt_error").as_str().unwrap().contains("corrupt"));
    assert!(
        val(v, "shape_mismatch_error")
            .as_str()
            .unwrap()
            .contains("another shape")
    );
}

fn check_mixed_precision_training(v: &Values) {
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
        assert!((0.0..=1.0).contains(&lost));
    }
}

fn check(id: &str, v: &Values, cpu: bool) {
    match id {
        "tensor_operations_flops" => check_tensor_operations_flops(v, cpu),
        "gradients_basics" => check_gradients_basics(v),
        "gradients_flops" => check_gradients_flops(v, cpu),
        "module_parameters" => check_module_parameters(v),
        "custom_model" => check_custom_model(v),
        "note_about_randomness" => check_note_about_randomness(v),
        "data_loading" => check_data_loading(v, cpu),
        "optimizer" => check_optimizer(v),
        "train_loop" => check_train_loop(v),
        "checkpointing" => check_checkpointing(v),
        "mixed_precision_training" => check_mixed_precision_training(v),
        other => panic!("no checks for {other}"),
    }
}

const SECTIONS: &[&str] = &[
    "tensor_operations_flops",
    "gradients_basics",
    "gradients_flops",
    "module_parameters",
    "custom_model",
    "note_about_randomness",
    "data_loading",
    "optimizer",
    "train_loop",
    "checkpointing",
    "mixed_precision_training",
];

macro_rules! fresh_tests {
    ($($id:ident),*) => {$(
        #[test]
        fn $id() {
            let record = fresh(stringify!($id));
            check(stringify!($id), &record.values, true);
        }
    )*};
}

fresh_tests!(
    tensor_operations_flops,
    gradients_basics,
    gradients_flops,
    module_parameters,
    custom_model,
    note_about_randomness,
    data_loading,
    optimizer,
    train_loop,
    checkpointing,
    mixed_precision_training
);

/// Values that do not depend on timing are bit-identical across runs with the same seed.
#[test]
fn seed_reproducibility() {
    for id in [
        "module_parameters",
        "custom_model",
        "optimizer",
        "train_loop",
        "checkpointing",
        "mixed_precision_training",
        "data_loading",
    ] {
        let (a, b) = (fresh(id), fresh(id));
        assert_eq!(a.values, b.values, "{id} differs between two runs with seed 0");
    }
}

#[test]
fn committed_traces_hold_the_invariants() {
    let traces = common::checkable_traces();
    if traces.is_empty() {
        eprintln!("no committed traces under trace/: nothing to check");
    }
    for (path, t) in traces {
        let cpu = t.provenance.device.kind == "cpu";
        for id in SECTIONS {
            match t.section(id) {
                Some(s) => check(id, &s.values, cpu),
                None => eprintln!("note: {} has no section `{id}`; skipped", path.display()),
            }
        }
    }
}
