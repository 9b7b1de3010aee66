//! The spec's invariants for the compute and training sections, checked on a fresh in-process
//! CPU run and on every committed trace under trace/ (a trace without a section fails; a GPU
//! trace's sections recorded by older code are set aside, and the run says so). Exact where the
//! value is knowable: rates are FLOPs over time and MFUs rates over peaks to the bit.

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

/// A spread's statistic (`median_s`, `min_s`…).
fn stat(spread: &Value, key: &str) -> f64 {
    spread[key]
        .as_f64()
        .unwrap_or_else(|| panic!("spread has no number `{key}`: {spread}"))
}

/// One timed product under the lecture's prefixed names: the time is the spread's median, the
/// rate is the FLOPs over that time and the MFU the rate over the promised peak, exactly (the
/// section computes them so, in f64; the trace keeps every bit).
fn check_speed(v: &Values, prefix: &str, flops: f64) {
    let name = |n: &str| format!("{prefix}{n}");
    let t = num(v, &name("actual_time"));
    let spread = val(v, &name("actual_time_spread"));
    assert_eq!(
        t,
        stat(spread, "median_s"),
        "{prefix}actual_time is the spread's median"
    );
    assert!(
        t > 0.0 && stat(spread, "min_s") <= t && t <= stat(spread, "max_s"),
        "{prefix}actual_time: {t} {spread}"
    );
    let rate = num(v, &name("actual_flop_per_sec"));
    assert_eq!(
        rate,
        flops / t,
        "{prefix}actual_flop_per_sec = actual_num_flops / {prefix}actual_time"
    );
    if v.contains_key(&name("mfu")) {
        let peak = num(v, &name("promised_flop_per_sec"));
        assert_eq!(
            num(v, &name("mfu")),
            rate / peak,
            "{prefix}mfu = {prefix}actual_flop_per_sec / {prefix}promised_flop_per_sec"
        );
    } else {
        assert!(
            !val(v, &name("mfu_unavailable_reason"))
                .as_str()
                .unwrap_or("")
                .is_empty(),
            "no {prefix}mfu and no reason"
        );
    }
}

/// The sweep: each point's FLOPs, rate and MFU from its size, median and the sweep's peak, exactly.
fn check_sweep(v: &Values, cpu: bool) {
    let sweep = val(v, "throughput_sweep").as_array().expect("a list of points");
    let peaks = val(v, "sweep_peaks");
    let sizes: &[u64] = if cpu {
        &[64, 128, 256, 512, 1024]
    } else {
        &[256, 512, 1024, 2048, 4096, 8192, 16384]
    };
    let dtypes: &[&str] = if cpu {
        &["fp32", "bf16"]
    } else {
        &["fp32", "bf16", "tf32"]
    };
    let expected: Vec<(u64, &str)> = sizes
        .iter()
        .flat_map(|&n| dtypes.iter().map(move |&d| (n, d)))
        .collect();
    let got: Vec<(u64, &str)> = sweep
        .iter()
        .map(|p| (p["n"].as_u64().unwrap(), p["dtype"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got, expected,
        "throughput_sweep: one point per size and dtype, in order"
    );
    for p in sweep {
        let n = p["n"].as_f64().unwrap();
        let flops = p["flops"].as_f64().unwrap();
        assert_eq!(flops, 2.0 * n * n * n, "throughput_sweep point {p}: flops = 2n³");
        let median = stat(p, "median_s");
        assert!(
            stat(p, "min_s") <= median && median <= stat(p, "max_s"),
            "throughput_sweep {p}"
        );
        let rate = p["flop_per_sec"].as_f64().unwrap();
        assert_eq!(
            rate,
            flops / median,
            "throughput_sweep point {p}: flop_per_sec = flops / median_s"
        );
        match peaks[p["dtype"].as_str().unwrap()]["flop_per_sec"].as_f64() {
            Some(peak) => assert_eq!(
                p["mfu"].as_f64(),
                Some(rate / peak),
                "throughput_sweep point {p}: mfu = flop_per_sec / sweep_peaks.{}",
                p["dtype"]
            ),
            None => assert!(p["mfu"].is_null(), "throughput_sweep point {p}: an MFU without a peak"),
        }
    }
    // The peaks drawn are the ones the MFUs above divide by.
    for (prefix, mode) in [("", "fp32"), ("bf16_", "bf16"), ("tf32_", "tf32")] {
        if let Some(rec) = v.get(&format!("{prefix}promised_flop_per_sec")) {
            assert_eq!(
                Some(&rec.value),
                peaks[mode].get("flop_per_sec"),
                "{prefix}promised_flop_per_sec = sweep_peaks.{mode}.flop_per_sec"
            );
            assert_eq!(
                val(v, &format!("{prefix}promised_peak_source")),
                &peaks[mode]["how"],
                "{prefix}promised_peak_source = sweep_peaks.{mode}.how"
            );
        }
    }
}

/// The textbook CPU peak: cores × FLOP per instruction × instructions per cycle × clock, and the
/// assumptions text says those numbers.
fn check_cpu_peak_formula(v: &Values) {
    let formula = val(v, "cpu_peak_formula");
    for mode in ["fp32", "bf16"] {
        let f = &formula[mode];
        if f.get("unavailable").is_some() {
            continue;
        }
        let field = |k: &str| {
            f[k].as_f64()
                .unwrap_or_else(|| panic!("cpu_peak_formula.{mode}.{k} is not a number: {f}"))
        };
        let (cores, per_instruction, ipc, clock) = (
            field("physical_cores"),
            field("flop_per_instruction"),
            field("instructions_per_cycle"),
            field("clock_hz"),
        );
        assert_eq!(
            field("flop_per_sec"),
            cores * per_instruction * ipc * clock,
            "cpu_peak_formula.{mode}.flop_per_sec = cores × FLOP/instruction × IPC × clock"
        );
        let text = f["assumptions"].as_str().unwrap_or("");
        for part in [
            format!("{cores} physical cores"),
            format!("{per_instruction} FLOP per"),
            format!("{ipc} per cycle"),
            format!("{:.0} MHz", clock / 1e6),
        ] {
            assert!(
                text.contains(&part),
                "cpu_peak_formula.{mode}.assumptions does not say `{part}`: {text}"
            );
        }
    }
}

fn check_tensor_operations_flops(v: &Values, cpu: bool) {
    let (b, d, k) = (num(v, "B"), num(v, "D"), num(v, "K"));
    let mut prefixes = vec!["", "bf16_"];
    if cpu {
        assert_eq!((b, d, k), (1024.0, 256.0, 64.0));
        check_cpu_peak_formula(v);
    } else {
        // The lecture's GPU sizes, and TF32 and cuBLAS's default FP32 (PyTorch's) beside the
        // pedantic fp32 row and bf16, timed the same way.
        assert_eq!((b, d, k), (16384.0, 32768.0, 8192.0));
        prefixes.extend(["tf32_", "fp32_default_"]);
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
    assert_eq!(floats(val(v, "y_shape")), vec![b, k], "y_shape");
    assert_eq!(num(v, "total_flops"), 8.0 * 604800.0 * 989.5e12);
    for prefix in prefixes {
        check_speed(v, prefix, num(v, "actual_num_flops"));
    }
    check_mfus("tensor_operations_flops", v);
    check_sweep(v, cpu);
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
    if cpu {
        assert_eq!((b, d, k), (1024.0, 256.0, 64.0), "the CPU's sizes");
    } else {
        assert_eq!((b, d, k), (16384.0, 32768.0, 8192.0), "the lecture's GPU sizes");
    }
    // Backward over forward, by the formula: 4 FLOPs per (data point, parameter) over 2.
    assert_eq!(num(v, "backward_to_forward_ratio"), 2.0, "backward_to_forward_ratio");
    assert_eq!(
        num(v, "backward_to_forward_ratio"),
        num(v, "num_backward_flops") / num(v, "num_forward_flops"),
        "backward_to_forward_ratio = num_backward_flops / num_forward_flops"
    );
    // Every op counted (1 FLOP per output element of an elementwise op, per input element of a
    // reduction). Forward adds h2² and its mean: B·K each.
    let bk = b * k;
    assert_eq!(
        num(v, "counted_forward_flops_all_ops"),
        forward + 2.0 * bk,
        "counted_forward_flops_all_ops = matmuls + square + mean"
    );
    // Backward adds the mean's gradient (one division of the scalar incoming gradient) and the
    // square's, 2·h2·g: h2¹, times 2, times g, B·K each.
    assert_eq!(
        num(v, "counted_backward_flops_all_ops"),
        num(v, "counted_backward_flops") + 3.0 * bk + 1.0,
        "counted_backward_flops_all_ops = matmuls + 3·B·K + 1"
    );
    // Timed: each time is its spread's median; the measured ratio is theirs.
    for name in ["forward_time", "backward_time"] {
        let t = num(v, name);
        let spread = val(v, &format!("{name}_spread"));
        assert_eq!(t, stat(spread, "median_s"), "{name} is its spread's median");
        assert!(
            t > 0.0 && stat(spread, "min_s") <= t && t <= stat(spread, "max_s"),
            "{name}: {spread}"
        );
    }
    assert_eq!(
        num(v, "measured_backward_to_forward_ratio"),
        num(v, "backward_time") / num(v, "forward_time"),
        "measured_backward_to_forward_ratio = backward_time / forward_time"
    );
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
        assert_eq!(
            num(v, "pinned_over_pageable"),
            pinned / pageable,
            "pinned_over_pageable = h2d_pinned_bytes_per_sec / h2d_pageable_bytes_per_sec"
        );
    }
    let data = floats(val(v, "data"));
    assert_eq!(data, (1..=10).map(f64::from).collect::<Vec<_>>(), "data");
    assert_eq!(val(v, "equal_to_original"), &Value::Bool(true), "equal_to_original");
    // get_batch: B = 2 rows of L = 4 tokens, row r the L tokens of the file from starts[r]; every
    // start leaves room for the target token after its window.
    let x: Vec<Vec<f64>> = val(v, "x").as_array().expect("x is rows").iter().map(floats).collect();
    let starts = floats(val(v, "starts"));
    assert_eq!((x.len(), starts.len()), (2, 2), "x has B rows, one start each");
    for (r, (row, &start)) in x.iter().zip(&starts).enumerate() {
        assert!(
            start.fract() == 0.0 && start >= 0.0 && start + 4.0 < data.len() as f64,
            "starts[{r}] = {start}: the window and its next token lie in the file"
        );
        let s = start as usize;
        assert_eq!(row, &data[s..s + 4], "x row {r} is data[{s}..{}]", s + 4);
    }
    let consecutive = x.iter().all(|row| row.windows(2).all(|w| w[1] == w[0] + 1.0));
    assert!(consecutive, "the file counts up by one, so every row does: {x:?}");
    assert_eq!(
        val(v, "rows_consecutive"),
        &Value::Bool(consecutive),
        "rows_consecutive says what the rows show"
    );
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
            if let Some(isa) = record.values.get("bf16_matmul_isa") {
                assert_eq!(isa.value, Value::from(cs336::device::cpu::bf16_matmul_isa()), "bf16_matmul_isa");
            }
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
    assert!(!traces.is_empty(), "no committed traces under trace/: nothing to check");
    let mut checked: Vec<&str> = Vec::new();
    for c in &traces {
        let cpu = c.trace.provenance.device.kind == "cpu";
        for id in SECTIONS {
            // A trace missing a section fails here; one set aside as older code's is skipped.
            let Some(s) = common::section_to_check(c, id) else {
                continue;
            };
            // Captured, and shown beside the panic when a check fails.
            eprintln!("checking {id} of {}", c.path.display());
            check(id, &s.values, cpu);
            if *id == "tensor_operations_flops" && cpu {
                // The kernel the section names is the one the trace says this CPU used.
                assert_eq!(
                    s.values["bf16_matmul_isa"].value,
                    c.trace.provenance.device.details["bf16_matmul_isa"],
                    "{}: tensor_operations_flops.bf16_matmul_isa is the trace's provenance.device.details.bf16_matmul_isa",
                    c.path.display()
                );
            }
            checked.push(id);
        }
    }
    let unchecked: Vec<&&str> = SECTIONS.iter().filter(|id| !checked.contains(id)).collect();
    assert!(
        unchecked.is_empty(),
        "no committed trace holds a current {unchecked:?} to check"
    );
}
