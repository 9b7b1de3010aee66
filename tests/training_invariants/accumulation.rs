//! The deep network and gradient accumulation.

use super::*;

pub(crate) fn check_deep_network(v: &Values) {
    let (d, layers, b) = (num(v, "d"), num(v, "num_layers"), num(v, "batch_size"));
    assert_eq!(num(v, "num_parameters"), d * d * layers);
    assert_eq!(num(v, "expected_num_parameters"), d * d * layers);
    assert_eq!(floats(val(v, "y_shape")), vec![b, d]);
    let y = floats(val(v, "y"));
    assert_eq!(y.len() as f64, b * d);
    assert!(y.iter().all(|&x| x >= 0.0), "a ReLU's output is never negative: {y:?}");
    let zeros = y.iter().filter(|&&x| x == 0.0).count() as f64;
    assert_eq!(num(v, "zero_fraction"), zeros / y.len() as f64);
    // Forward: a product (2·B·D² FLOPs) and a ReLU (B·D) per block. Backward: two products per
    // block but the first, whose input is the data.
    assert_eq!(num(v, "forward_flops"), layers * (2.0 * b * d * d + b * d));
    assert_eq!(num(v, "forward_matmul_flops"), layers * 2.0 * b * d * d);
    assert_eq!(num(v, "backward_matmul_flops"), (2.0 * layers - 1.0) * 2.0 * b * d * d);
    assert_eq!(num(v, "backward_over_forward"), (2.0 * layers - 1.0) / layers);
    // Memory: a gradient per parameter; kept for backward, each block's product and the ReLU
    // outputs the next products read, and the loss's differences, all float32 B × D.
    assert_eq!(num(v, "parameter_bytes"), 4.0 * d * d * layers);
    assert_eq!(num(v, "gradient_bytes"), num(v, "parameter_bytes"));
    assert_eq!(num(v, "activation_bytes"), 2.0 * layers * b * d * 4.0);
}

pub(crate) fn check_gradient_accumulation(v: &Values) {
    let (b, d, layers) = (num(v, "batch_size"), num(v, "d"), num(v, "num_layers"));
    let rows = val(v, "accumulation").as_array().expect("a list of rows").clone();
    let field = |r: &Value, k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"));
    let ks: Vec<f64> = rows.iter().map(|r| field(r, "micro_batches")).collect();
    let expected_ks: Vec<f64> = (0..)
        .map(|p| f64::from(1u32 << p))
        .take_while(|&k| k <= num(v, "max_micro_batches"))
        .collect();
    assert_eq!(ks, expected_ks);
    // The same products whatever k: forward 2·B·D² a block, backward twice that, less the
    // gradient of the data (which needs none).
    let step = 2.0 * b * d * d * (3.0 * layers - 1.0);
    assert_eq!(num(v, "step_matmul_flops"), step);
    let params = 4.0 * d * d * layers;
    assert_eq!(num(v, "parameter_bytes"), params);
    assert_eq!(
        num(v, "gradient_bytes"),
        params,
        "a gradient for every parameter, whatever k"
    );
    assert_eq!(num(v, "formula_activation_bytes"), 2.0 * b * d * layers * 4.0);
    let full_activation = field(&rows[0], "activation_bytes");
    assert!(full_activation >= num(v, "formula_activation_bytes"));
    for r in &rows {
        let k = field(r, "micro_batches");
        assert_eq!(field(r, "micro_batch_size") * k, b);
        assert_eq!(field(r, "matmul_flops"), step, "k = {k}");
        // Everything the forward pass keeps has a row per data point, but the loss (4 bytes):
        // a k-th of the batch keeps exactly a k-th of the full batch's.
        let activation = field(r, "activation_bytes");
        assert_eq!((activation - 4.0) * k, full_activation - 4.0, "k = {k}");
        let peak = field(r, "peak_bytes");
        assert!(
            peak >= activation,
            "k = {k}: the step's peak holds a micro-batch's activations"
        );
        if k > 1.0 {
            assert!(
                peak >= params + activation,
                "k = {k}: accumulated gradients sit beside them"
            );
        }
        let diff = field(r, "largest_gradient_difference");
        assert!((0.0..1e-5).contains(&diff), "k = {k}: rounding only, {diff}");
        assert!(field(r, "seconds_per_sample") > 0.0);
    }
    assert_eq!(field(&rows[0], "largest_gradient_difference"), 0.0);
    let last = &rows[rows.len() - 1];
    assert_eq!(num(v, "full_batch_peak"), field(&rows[0], "peak_bytes"));
    assert_eq!(num(v, "accumulated_peak"), field(last, "peak_bytes"));
    assert_eq!(
        num(v, "peak_ratio"),
        num(v, "full_batch_peak") / num(v, "accumulated_peak")
    );
    assert_eq!(
        num(v, "activation_ratio"),
        num(v, "full_batch_activation") / num(v, "accumulated_activation")
    );
    assert_eq!(
        num(v, "largest_gradient_difference"),
        field(last, "largest_gradient_difference")
    );
}

/// What a schedule keeps at its peak, in B × D tensors, counted by hand: segment j (of
/// `segment` layers, the last possibly shorter) rebuilt while j kept inputs wait, its graph
/// holding each layer's ReLU output, each layer's input but the first (kept, or the data), and
/// the gradient arriving at its output (the last segment: the loss's differences). Keeping none
/// holds one layer's input, its output and the arriving gradient.
fn counted_tensors(num_layers: usize, schedule: &str, segment_layers: usize) -> (usize, usize) {
    let sqrt = (num_layers as f64).sqrt().round() as usize;
    let segment = match schedule {
        "none kept" => return (3, num_layers * (num_layers - 1) / 2),
        "every layer kept" => num_layers,
        "every √L layers" => sqrt,
        _ => segment_layers,
    };
    let n = num_layers.div_ceil(segment);
    let last = num_layers - (n - 1) * segment;
    let peak = (0..n)
        .map(|j| j + 2 * if j == n - 1 { last } else { segment })
        .max()
        .unwrap_or(0);
    (peak, num_layers - last)
}

pub(crate) fn check_checkpoint_schedule(v: &Values, cpu: bool) {
    let (b, d) = (num(v, "batch_size"), num(v, "d"));
    let segment_layers = num(v, "segment_layers") as usize;
    let depths: Vec<usize> = floats(val(v, "depths")).iter().map(|&l| l as usize).collect();
    assert_eq!(depths, [4, 16, 64, 256][..depths.len()]);
    assert_eq!(*depths.last().expect("depths"), num(v, "max_num_layers") as usize);
    let tensor = b * d * 4.0;
    assert_eq!(num(v, "layer_flops"), 2.0 * b * d * d);
    let rows = val(v, "schedules").as_array().expect("a list of rows").clone();
    assert_eq!(rows.len(), 4 * depths.len(), "four schedules at every depth");
    let field = |r: &Value, k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"));
    // The high-water mark is the count plus the same working set everywhere: two B × D tensors
    // (the gradients arriving at and leaving a block) and two floats, each of which a GPU's
    // allocator may round up.
    let working_set = num(v, "largest_working_set");
    assert_eq!(num(v, "smallest_working_set"), working_set);
    if cpu {
        assert_eq!(working_set, 2.0 * tensor + 8.0);
    } else {
        assert!(working_set >= 2.0 * tensor + 8.0);
    }
    let mut peaks: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    let mut recomputed: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for (i, r) in rows.iter().enumerate() {
        let num_layers = depths[i / 4];
        assert_eq!(field(r, "num_layers") as usize, num_layers);
        let schedule = r["schedule"].as_str().expect("a schedule's name");
        let expected = [
            "none kept",
            "every √L layers",
            &format!("every {segment_layers} layers"),
            "every layer kept",
        ];
        assert_eq!(schedule, expected[i % 4], "row {i}");
        let (kept, layers) = counted_tensors(num_layers, schedule, segment_layers);
        assert_eq!(
            field(r, "counted_peak_bytes"),
            kept as f64 * tensor,
            "{schedule} at L = {num_layers}"
        );
        assert_eq!(
            field(r, "measured_peak_bytes"),
            field(r, "counted_peak_bytes") + working_set,
            "{schedule} at L = {num_layers}"
        );
        assert_eq!(
            field(r, "recomputed_layers"),
            layers as f64,
            "{schedule} at L = {num_layers}"
        );
        assert_eq!(field(r, "recomputed_flops"), layers as f64 * num(v, "layer_flops"));
        peaks
            .entry(schedule.into())
            .or_default()
            .push(field(r, "measured_peak_bytes"));
        recomputed
            .entry(schedule.into())
            .or_default()
            .push(field(r, "recomputed_flops"));
    }
    assert_eq!(
        val(v, "same_gradients"),
        &Value::from(true),
        "recomputation repeats the same arithmetic"
    );
    // The slopes are the rows' own, between the two deepest networks.
    let n = depths.len();
    let step = (depths[n - 1] as f64 / depths[n - 2] as f64).ln();
    let slope = |ys: &[f64]| (ys[n - 1] / ys[n - 2]).ln() / step;
    let every = format!("every {segment_layers} layers");
    for (name, schedule, of) in [
        ("peak_slope_none", "none kept", &peaks),
        ("peak_slope_sqrt", "every √L layers", &peaks),
        ("peak_slope_every", every.as_str(), &peaks),
        ("peak_slope_all", "every layer kept", &peaks),
        ("recompute_slope_none", "none kept", &recomputed),
        ("recompute_slope_sqrt", "every √L layers", &recomputed),
        ("recompute_slope_every", every.as_str(), &recomputed),
    ] {
        assert_eq!(num(v, name), slope(&of[schedule]), "{name}");
    }
    // The lecture's orders: none flat, √L about a half, all about one; recomputation about L²
    // keeping none.
    assert_eq!(num(v, "peak_slope_none"), 0.0);
    assert!((0.4..0.6).contains(&num(v, "peak_slope_sqrt")));
    assert!((0.9..1.0).contains(&num(v, "peak_slope_all")));
    assert!((1.9..2.1).contains(&num(v, "recompute_slope_none")));
    let deepest = depths[n - 1] as f64;
    assert_eq!(num(v, "deepest_peak_all"), peaks["every layer kept"][n - 1]);
    assert_eq!(num(v, "deepest_peak_sqrt"), peaks["every √L layers"][n - 1]);
    assert_eq!(num(v, "deepest_peak_none"), peaks["none kept"][n - 1]);
    assert_eq!(
        num(v, "deepest_recomputed_layers_none"),
        deepest * (deepest - 1.0) / 2.0
    );
    assert_eq!(num(v, "deepest_recomputed_layers_sqrt"), deepest - deepest.sqrt());
    assert_eq!(num(v, "deepest_none_forward_passes"), (deepest - 1.0) / 2.0);
}
