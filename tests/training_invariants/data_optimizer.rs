//! Data loading and the optimizer's state.

use super::*;

pub(crate) fn check_data_loading(v: &Values, cpu: bool) {
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

pub(crate) fn check_optimizer(v: &Values) {
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
