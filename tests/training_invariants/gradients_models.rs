//! Gradients and their FLOPs, parameters, the custom model and randomness.

use super::*;

pub(crate) fn check_gradients_basics(v: &Values) {
    assert_eq!(num(v, "loss"), 0.5);
    assert_eq!(floats(val(v, "w_grad")), vec![1.0, 2.0, 3.0]);
    assert_eq!(val(v, "x_grad_is_none"), &Value::Bool(true));
    assert_eq!(val(v, "pred_y_grad_is_none"), &Value::Bool(true));
}

pub(crate) fn check_gradients_flops(v: &Values, cpu: bool) {
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
    // 2026's check: the hand-derived h1.grad and w2.grad against autograd's, within rounding.
    if v.contains_key("h1_grad_max_difference") {
        for (name, scale) in [
            ("h1_grad_max_difference", "h1_grad_max_abs"),
            ("w2_grad_max_difference", "w2_grad_max_abs"),
        ] {
            let (diff, size) = (num(v, name), num(v, scale));
            assert!(size > 0.0 && diff <= size * 1e-6, "{name} = {diff} against {size}");
        }
        for name in [
            "h1_grad_autograd",
            "h1_grad_by_hand",
            "w2_grad_autograd",
            "w2_grad_by_hand",
        ] {
            assert_eq!(floats(val(v, name)).len(), 8, "{name}: a 2×4 corner");
        }
    }
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

pub(crate) fn check_module_parameters(v: &Values) {
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

pub(crate) fn check_custom_model(v: &Values) {
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

pub(crate) fn check_note_about_randomness(v: &Values) {
    assert_eq!(val(v, "same_seed_bit_identical"), &Value::Bool(true));
    assert_eq!(val(v, "different_seed_identical"), &Value::Bool(false));
    assert_eq!(val(v, "shared_stream_init_unchanged"), &Value::Bool(false));
    assert_eq!(val(v, "separate_streams_init_unchanged"), &Value::Bool(true));
    assert_ne!(floats(val(v, "x_seed_0")), floats(val(v, "x_seed_1")));
}
