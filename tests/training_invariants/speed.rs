//! Timed products, the sweep, the CPU peak formula and the FLOPs chapter's values.

use super::*;

/// 0 < MFU ≤ 1.2 for every recorded MFU, top level and inside the sweep.
pub(crate) fn check_mfus(id: &str, v: &Values) {
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
pub(crate) fn stat(spread: &Value, key: &str) -> f64 {
    spread[key]
        .as_f64()
        .unwrap_or_else(|| panic!("spread has no number `{key}`: {spread}"))
}

/// One timed product under the lecture's prefixed names: the time is the spread's median, the
/// rate is the FLOPs over that time and the MFU the rate over the peak, exactly (the
/// section computes them so, in f64; the trace keeps every bit).
pub(crate) fn check_speed(v: &Values, prefix: &str, flops: f64) {
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
        let peak = num(v, &name("peak_flop_per_sec"));
        assert_eq!(
            num(v, &name("mfu")),
            rate / peak,
            "{prefix}mfu = {prefix}actual_flop_per_sec / {prefix}peak_flop_per_sec"
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
pub(crate) fn check_sweep(v: &Values, cpu: bool) {
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
        if let Some(rec) = v.get(&format!("{prefix}peak_flop_per_sec")) {
            assert_eq!(
                Some(&rec.value),
                peaks[mode].get("flop_per_sec"),
                "{prefix}peak_flop_per_sec = sweep_peaks.{mode}.flop_per_sec"
            );
            assert_eq!(
                val(v, &format!("{prefix}peak_source")),
                &peaks[mode]["how"],
                "{prefix}peak_source = sweep_peaks.{mode}.how"
            );
        }
    }
}

/// The textbook CPU peak: cores × FLOP per instruction × instructions per cycle × clock, and the
/// assumptions text says those numbers.
pub(crate) fn check_cpu_peak_formula(v: &Values) {
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

pub(crate) fn check_tensor_operations_flops(v: &Values, cpu: bool) {
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
