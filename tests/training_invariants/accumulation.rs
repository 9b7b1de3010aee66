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
