//! The spec's invariants for the first half of the lecture (napkin math, memory accounting,
//! tensor operations), asserted on a fresh CPU run and on every committed trace.

mod common;

use common::{close, flat, for_each_trace, num, val};
use serde_json::json;

#[test]
fn motivating_questions() {
    for_each_trace("motivating_questions", |from, _, s| {
        // Training time: 6 FLOPs per parameter per token, 70B parameters, 15T tokens, on 1024
        // H100s (datasheet bf16, dense) at 50% MFU. The section computes these products in f64,
        // in this order: each must come out to the bit.
        assert_eq!(
            num(s, "total_flops"),
            6.0 * 70e9 * 15e12,
            "{from}: total_flops = 6·70e9·15e12"
        );
        assert_eq!(num(s, "h100_flop_per_sec"), 989.5e12, "{from}: h100_flop_per_sec");
        assert_eq!(num(s, "mfu"), 0.5, "{from}: mfu");
        assert_eq!(num(s, "num_gpus"), 1024.0, "{from}: num_gpus");
        let per_day = num(s, "h100_flop_per_sec") * num(s, "mfu") * num(s, "num_gpus") * 60.0 * 60.0 * 24.0;
        assert_eq!(
            num(s, "flops_per_day"),
            per_day,
            "{from}: flops_per_day = h100_flop_per_sec·mfu·num_gpus·86400"
        );
        assert_eq!(
            num(s, "days"),
            num(s, "total_flops") / num(s, "flops_per_day"),
            "{from}: days = total_flops / flops_per_day"
        );
        let days = num(s, "days");
        assert!((days - 143.93).abs() < 0.01, "{from}: days = {days}");
        // Memory: 8 H100s of 80 GB, 16 bytes per parameter (fp32 parameters, gradients and
        // AdamW's two moments).
        assert_eq!(num(s, "h100_bytes"), 80e9, "{from}: h100_bytes");
        assert_eq!(num(s, "bytes_per_parameter"), 16.0, "{from}: bytes_per_parameter");
        assert_eq!(
            num(s, "num_parameters"),
            8.0 * num(s, "h100_bytes") / 16.0,
            "{from}: num_parameters = 8·h100_bytes / bytes_per_parameter"
        );
        assert_eq!(num(s, "num_parameters"), 4e10, "{from}: num_parameters");
        // The 2026 answer: bf16 parameters and gradients, float32 moments, 12 bytes; the largest
        // whole model that fits.
        if s.values.contains_key("mixed_bytes_per_parameter") {
            assert_eq!(num(s, "param_grad_bytes"), 2.0, "{from}: param_grad_bytes");
            assert_eq!(
                num(s, "mixed_bytes_per_parameter"),
                12.0,
                "{from}: mixed_bytes_per_parameter"
            );
            assert_eq!(
                num(s, "mixed_num_parameters"),
                (8.0 * num(s, "h100_bytes") / 12.0).floor(),
                "{from}: mixed_num_parameters = floor(8·h100_bytes / 12)"
            );
            assert_eq!(
                num(s, "mixed_num_parameters"),
                53_333_333_333.0,
                "{from}: mixed_num_parameters"
            );
        }
        // The same memory question for the device the run was on.
        let here = num(s, "this_device_bytes");
        assert_eq!(
            num(s, "this_device_num_parameters"),
            here / 16.0,
            "{from}: this_device_num_parameters = this_device_bytes / 16"
        );
    });
}

#[test]
fn tensors_basics() {
    for_each_trace("tensors_basics", |from, _, s| {
        assert_eq!(
            val(s, "x_from_data"),
            &json!([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
            "{from}"
        );
        assert!(flat(val(s, "x_zeros")).iter().all(|&v| v == 0.0), "{from}");
        assert!(flat(val(s, "x_ones")).iter().all(|&v| v == 1.0), "{from}");
        let randn = flat(val(s, "x_randn"));
        assert_eq!(randn.len(), 32);
        // 32 standard normal samples: not constant, mean near 0.
        let mean = randn.iter().sum::<f64>() / 32.0;
        assert!(
            mean.abs() < 1.0 && randn.iter().any(|&v| v != randn[0]),
            "{from}: {randn:?}"
        );
        assert_eq!(num(s, "x_empty_nbytes"), 128.0);
        // 2026's ranks 1 to 4, the last a Transformer's (B, S, H, D).
        if s.values.contains_key("rank4_shape") {
            for (rank, name) in ["rank1_rank", "rank2_rank", "rank3_rank", "rank4_rank"]
                .iter()
                .enumerate()
            {
                assert_eq!(num(s, name), rank as f64 + 1.0, "{from}: {name}");
            }
            assert_eq!(val(s, "rank4_shape"), &json!([32, 16, 16, 64]), "{from}: rank4_shape");
            assert_eq!(num(s, "rank4_numel"), 32.0 * 16.0 * 16.0 * 64.0, "{from}: rank4_numel");
            assert_eq!(num(s, "deepseek_v3_2_parameters"), 685e9, "{from}: DeepSeek v3.2");
        }
        // Truncated normal samples lie inside their bounds.
        let (a, b) = (num(s, "trunc_normal_a"), num(s, "trunc_normal_b"));
        let samples = flat(val(s, "x_trunc_normal"));
        assert!(samples.iter().all(|&v| a <= v && v <= b), "{from}: {samples:?}");
        assert_eq!(
            num(s, "trunc_normal_min"),
            samples.iter().cloned().fold(f64::INFINITY, f64::min)
        );
        assert_eq!(
            num(s, "trunc_normal_max"),
            samples.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
        );
    });
}

#[test]
fn tensors_memory() {
    for_each_trace("tensors_memory", |from, _, s| {
        // fp4 E2M1: the 15 values of the specification (OCP MX, NVFP4), derived from the layout.
        if s.values.contains_key("fp4_values") {
            let spec = [
                -6.0, -4.0, -3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
            ];
            assert_eq!(flat(val(s, "fp4_values")), spec, "{from}: fp4_values");
            assert_eq!(
                flat(val(s, "fp4_rounded")),
                [0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 6.0, -0.5],
                "{from}: fp4_rounded (ties to even, saturating at 6)"
            );
            // 1024 weights: 4 bits each, an 8-bit scale per 16, one 32-bit scale.
            assert_eq!(val(s, "trained_layer_shape"), &json!([32, 32]), "{from}");
            assert_eq!(num(s, "nvfp4_bits_per_parameter"), 4.0 + 0.5 + 32.0 / 1024.0, "{from}");
            assert_eq!(num(s, "fp8_bits_per_parameter"), 8.0 + 32.0 / 1024.0, "{from}");
            assert_eq!(num(s, "bf16_bits_per_parameter"), 16.0, "{from}");
            // Fewer bits, more error, within what each format's step allows for Gaussian-like
            // weights: bf16 about 2⁻⁹ relative, E4M3 about 2⁻⁵, NVFP4 about a tenth.
            let (fp4, fp8, bf16) = (
                num(s, "nvfp4_relative_error"),
                num(s, "fp8_relative_error"),
                num(s, "bf16_relative_error"),
            );
            assert!(0.0 < bf16 && bf16 < 0.005, "{from}: bf16 error {bf16}");
            assert!(bf16 < fp8 && fp8 < 0.05, "{from}: fp8 error {fp8}");
            assert!(fp8 < fp4 && fp4 < 0.2, "{from}: nvfp4 error {fp4}");
        }
        assert_eq!(num(s, "numel"), 32.0, "{from}");
        assert_eq!(num(s, "element_size"), 4.0, "{from}");
        assert_eq!(num(s, "bytes"), 128.0, "{from}");
        assert_eq!(num(s, "gpt3_ffn_bytes"), 2415919104.0, "{from}");
        assert_eq!(num(s, "gpt3_ffn_bytes"), 2304.0 * 1024.0 * 1024.0, "{from}");
        assert_eq!(num(s, "float16_element_size"), 2.0, "{from}");
        assert_eq!(num(s, "bfloat16_element_size"), 2.0, "{from}");
        assert_eq!(num(s, "fp16_1e_8"), 0.0, "{from}");
        assert_eq!(num(s, "bf16_1e_8"), 1.0011717677116394e-08, "{from}");
        let info = |name: &str, field: &str| {
            val(s, name)[field]
                .as_f64()
                .unwrap_or_else(|| panic!("{from}: {name}.{field}"))
        };
        assert_eq!(info("float32_info", "eps"), f32::EPSILON as f64);
        assert_eq!(info("float32_info", "max"), f32::MAX as f64);
        assert_eq!(info("float32_info", "smallest_normal"), f32::MIN_POSITIVE as f64);
        assert_eq!(info("float32_info", "resolution"), 1e-6);
        assert_eq!(info("float16_info", "max"), 65504.0);
        assert_eq!(info("float16_info", "eps"), 2f64.powi(-10));
        assert_eq!(info("float16_info", "smallest_normal"), 2f64.powi(-14));
        assert_eq!(info("bfloat16_info", "eps"), 2f64.powi(-7));
        assert_eq!(info("bfloat16_info", "max"), half::bf16::MAX.to_f64());
        assert_eq!(info("bfloat16_info", "min"), -half::bf16::MAX.to_f64());
        assert_eq!(info("bfloat16_info", "resolution"), 0.01);
        assert_eq!(info("fp8_e4m3_info", "max"), 448.0);
        assert_eq!(info("fp8_e5m2_info", "max"), 57344.0);
        assert_eq!(info("fp8_e4m3_info", "smallest_normal"), 2f64.powi(-6));
        assert_eq!(info("fp8_e5m2_info", "smallest_normal"), 2f64.powi(-14));
        let layouts = val(s, "bit_layouts").as_array().expect("a list");
        let bits: Vec<u64> = layouts
            .iter()
            .map(|l| {
                l["sign"].as_u64().unwrap_or(0)
                    + l["exponent"].as_u64().unwrap_or(0)
                    + l["mantissa"].as_u64().unwrap_or(0)
            })
            .collect();
        // fp4 E2M1 joined the list in 2026's edition; older traces end at fp8.
        let expected: &[u64] = if s.values.contains_key("fp4_values") {
            &[32, 16, 16, 8, 8, 4]
        } else {
            &[32, 16, 16, 8, 8]
        };
        assert_eq!(bits, expected, "{from}");
    });
}

#[test]
fn tensors_on_gpus() {
    for_each_trace("tensors_on_gpus", |from, t, s| {
        assert_eq!(val(s, "x_device"), &json!("cpu"), "{from}: tensors start on the CPU");
        let available = val(s, "cuda_available").as_bool().expect("a bool");
        if t.provenance.device.kind == "cpu" {
            assert!(!available, "{from}");
            let reason = val(s, "cuda_unavailable_reason").as_str().expect("a string");
            assert!(!reason.is_empty(), "{from}");
            assert_eq!(
                Some(reason),
                t.provenance.device.cuda_unavailable_reason.as_deref(),
                "{from}"
            );
        } else {
            assert!(available, "{from}");
            assert_eq!(num(s, "memory_used"), 2.0 * 32.0 * 32.0 * 4.0, "{from}");
            assert_eq!(
                num(s, "new_memory_allocated") - num(s, "memory_allocated"),
                num(s, "memory_used"),
                "{from}"
            );
            assert_eq!(
                num(s, "memory_allocated_after_free"),
                num(s, "memory_allocated"),
                "{from}: freeing gives the bytes back"
            );
            assert!(num(s, "num_gpus") >= 1.0, "{from}");
            let props = val(s, "properties");
            assert_eq!(
                props["name"].as_str(),
                Some(t.provenance.device.name.as_str()),
                "{from}"
            );
            assert!(
                props["multi_processor_count"].as_f64().is_some_and(|n| n > 0.0),
                "{from}"
            );
            assert_eq!(val(s, "y_device"), &json!("cuda:0"), "{from}");
            // The driver works in pages: it never reports less than the tensors hold, unless its
            // pool already had the room (then nothing new was reserved).
            let driver = num(s, "driver_memory_used");
            assert!(
                driver == 0.0 || driver >= num(s, "memory_used"),
                "{from}: driver delta {driver}"
            );
        }
    });
}

#[test]
fn tensor_storage() {
    for_each_trace("tensor_storage", |from, _, s| {
        assert_eq!(val(s, "stride"), &json!([4, 1]), "{from}");
        assert_eq!(num(s, "index"), 6.0, "{from}");
        assert_eq!(num(s, "element"), 6.0, "{from}");
        assert_eq!(num(s, "element_at_index"), num(s, "element"), "{from}");
    });
}

#[test]
fn tensor_slicing() {
    for_each_trace("tensor_slicing", |from, _, s| {
        assert_eq!(val(s, "row_0"), &json!([1.0, 2.0, 3.0]), "{from}");
        assert_eq!(val(s, "column_1"), &json!([2.0, 5.0]), "{from}");
        assert_eq!(
            val(s, "view_3_2"),
            &json!([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
            "{from}"
        );
        assert_eq!(
            val(s, "transpose"),
            &json!([[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]),
            "{from}"
        );
        for name in [
            "row_0_same_storage",
            "column_1_same_storage",
            "view_3_2_same_storage",
            "transpose_same_storage",
        ] {
            assert_eq!(val(s, name), &json!(true), "{from}: {name}");
        }
        assert_eq!(num(s, "transpose_after_write_0_0"), 100.0, "{from}");
        assert_eq!(val(s, "transpose_is_contiguous"), &json!(false), "{from}");
        let err = val(s, "view_error").as_str().expect("a message");
        assert!(
            err.contains("not contiguous") && err.contains("contiguous()"),
            "{from}: {err}"
        );
        assert_eq!(
            val(s, "contiguous_view_2_3"),
            &json!([[1.0, 4.0, 2.0], [5.0, 3.0, 6.0]]),
            "{from}"
        );
        assert_eq!(val(s, "contiguous_same_storage"), &json!(false), "{from}");
    });
}

#[test]
fn tensor_elementwise() {
    for_each_trace("tensor_elementwise", |from, _, s| {
        assert_eq!(val(s, "pow_2"), &json!([1.0, 16.0, 81.0]), "{from}");
        assert_eq!(val(s, "sqrt"), &json!([1.0, 2.0, 3.0]), "{from}");
        let rsqrt = flat(val(s, "rsqrt"));
        assert!(
            close(rsqrt[0], 1.0, 1e-7) && close(rsqrt[1], 0.5, 1e-7) && close(rsqrt[2], 1.0 / 3.0, 1e-7),
            "{from}: {rsqrt:?}"
        );
        for name in ["x_plus_x", "x_times_2", "x_div_0_5"] {
            assert_eq!(val(s, name), &json!([2.0, 8.0, 18.0]), "{from}: {name}");
        }
        assert_eq!(
            val(s, "triu"),
            &json!([[1.0, 1.0, 1.0], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]),
            "{from}"
        );
    });
}

#[test]
fn tensor_matmul() {
    for_each_trace("tensor_matmul", |from, _, s| {
        assert_eq!(val(s, "y_shape"), &json!([16, 2]), "{from}");
        assert_eq!(num(s, "y_0_0"), 32.0, "{from}");
        assert_eq!(val(s, "batched_y_shape"), &json!([4, 8, 16, 2]), "{from}");
        assert_eq!(
            (num(s, "batched_y_min"), num(s, "batched_y_max")),
            (32.0, 32.0),
            "{from}"
        );
    });
}

#[test]
fn tensor_operations_flops_napkin() {
    for_each_trace("tensor_operations_flops", |from, t, s| {
        // Reference points and datasheet speeds, as the section states them.
        assert_eq!(num(s, "gpt3_flops"), 3.14e23, "{from}: gpt3_flops");
        assert_eq!(num(s, "gpt4_flops"), 2e25, "{from}: gpt4_flops");
        assert_eq!(
            num(s, "reporting_threshold_flops"),
            1e26,
            "{from}: reporting_threshold_flops"
        );
        assert_eq!(num(s, "a100_flop_per_sec"), 312e12, "{from}: a100_flop_per_sec");
        assert_eq!(num(s, "h100_flop_per_sec"), 989.5e12, "{from}: h100_flop_per_sec");
        // The same H100 figure as the opening napkin math.
        if let Some(napkin) = t.section("motivating_questions") {
            assert_eq!(
                num(s, "h100_flop_per_sec"),
                num(napkin, "h100_flop_per_sec"),
                "{from}: h100_flop_per_sec in both sections"
            );
        }
        assert_eq!(num(s, "one_week_seconds"), 604800.0, "{from}: one_week_seconds");
        assert_eq!(
            num(s, "total_flops"),
            8.0 * num(s, "one_week_seconds") * num(s, "h100_flop_per_sec"),
            "{from}: total_flops = 8·one_week_seconds·h100_flop_per_sec"
        );
        let total = num(s, "total_flops");
        assert!((total - 4.79e21).abs() < 0.01e21, "{from}: total_flops = {total}");
        // 2026's additions: the two weeks computed as two, and the B200's dense peaks.
        if s.values.contains_key("two_weeks_total_flops") {
            assert_eq!(num(s, "two_weeks_total_flops"), 2.0 * total, "{from}: two weeks");
            assert_eq!(num(s, "b200_fp32_flop_per_sec"), 75e12, "{from}: B200 fp32");
            assert_eq!(num(s, "b200_flop_per_sec"), 4.5e15 / 2.0, "{from}: B200 bf16 dense");
        }
    });
}

#[test]
fn every_section_has_provenance_and_a_source_hash() {
    let t = common::fresh_trace();
    assert_eq!(t.schema_version, cs336::trace::SCHEMA_VERSION);
    assert_eq!(
        t.provenance.device.slug,
        cs336::device::cpu::trace_name().expect("this CPU has a trace name")
    );
    assert!(t.provenance.device.slug.starts_with("cpu-"));
    assert!(t.provenance.host.logical_cores >= 1);
    let ids: Vec<&str> = t.sections.iter().map(|s| s.id.as_str()).collect();
    let expected: Vec<&str> = cs336::lecture::SECTIONS.iter().map(|s| s.id).collect();
    assert_eq!(ids, expected, "every section runs, in lecture order");
    // One run: every section carries the same run provenance, built as this test was.
    let run = &t.sections[0].run;
    assert_eq!(run.seed, common::SEED);
    assert_eq!(run.build, cs336::lecture::provenance::build());
    assert!(run.build.is_optimised(), "{:?}", run.build);
    assert_eq!(t.created_at(), Some(run.recorded_at.as_str()));
    for s in &t.sections {
        assert_eq!(&s.run, run, "{}", s.id);
        assert_eq!(s.source_hash.len(), 64, "{}", s.id);
        assert!(s.wall_time_s >= 0.0);
        s.check_steps().unwrap_or_else(|e| panic!("{}: {e}", s.id));
        let def = cs336::lecture::find(&s.id).expect("a section of the lecture");
        let code = cs336::trace::source::function_source(def.source, def.id).expect("its function");
        for (name, v) in &s.values {
            // Every value's line lies inside its section's function (or is 0: recorded elsewhere),
            // and its token is the first on that line.
            let states = v.history.iter().map(|h| (h.line, h.token)).chain([(v.line, v.token)]);
            for (line, token) in states {
                assert!(
                    line == 0 || (line >= code.start_line && line <= code.end_line),
                    "{}.{name} line {line} outside its function ({}..{})",
                    s.id,
                    code.start_line,
                    code.end_line
                );
                assert_eq!(token, code.token_at_line(line).filter(|_| line != 0), "{}.{name}", s.id);
                assert_eq!(
                    token.and_then(|t| code.line_of_token(t)),
                    Some(line).filter(|&l| l != 0)
                );
            }
            assert!(v.num_states() <= cs336::trace::history::MAX_HISTORY, "{}.{name}", s.id);
        }
    }
}

#[test]
fn every_value_declares_what_decided_it() {
    use cs336::trace::Kind::{self, *};
    use cs336::trace::Unit;
    let t = common::fresh_trace();
    let kind = |section: &str, name: &str| -> Option<Kind> {
        t.value(section, name)
            .unwrap_or_else(|| panic!("{section}.{name}"))
            .kind()
    };
    for (section, name, want) in [
        ("tensor_operations_flops", "actual_time", Clock),
        ("tensor_operations_flops", "actual_flop_per_sec", Clock),
        ("tensor_operations_flops", "mfu", Clock),
        ("tensor_operations_flops", "throughput_sweep", Clock),
        // On a CPU the peak is a timed FMA loop.
        ("tensor_operations_flops", "peak_flop_per_sec", Clock),
        ("gradients_flops", "backward_time", Clock),
        ("gradients_flops", "measured_backward_to_forward_ratio", Clock),
        // Datasheet figures and the lecture's choices are given, whatever their unit.
        ("motivating_questions", "h100_flop_per_sec", Given),
        ("motivating_questions", "mfu", Given),
        ("tensor_operations_flops", "B", Given),
        // Plain arithmetic is computed, whatever its unit.
        ("tensor_operations_flops", "one_week_seconds", Computed),
        ("tensor_operations_flops", "total_flops", Computed),
        ("gradients_flops", "num_backward_flops", Computed),
        ("optimizer", "state", Computed),
        ("mixed_precision_training", "losses_fp32", Computed),
        // The machine: its memory and its instruction sets; a bf16 kernel's rounding.
        ("motivating_questions", "this_device_bytes", Device),
        ("tensor_operations_flops", "cpu_isa", Device),
        ("mixed_precision_training", "losses_mixed", Rounding),
    ] {
        assert_eq!(kind(section, name), Some(want), "{section}.{name}");
    }
    // Every value says, and the unit never contradicts it: a time or a rate is a clock's, or a
    // figure the lecture gave or computed; the device and a rounding decide no time.
    for s in &t.sections {
        for (name, v) in &s.values {
            let k = v.kind().unwrap_or_else(|| panic!("{}.{name} declares no kind", s.id));
            if matches!(v.unit, Unit::Seconds | Unit::FlopPerSec | Unit::BytesPerSec) {
                assert!(
                    matches!(k, Clock | Given | Computed),
                    "{}.{name}: a {:?} that is {}",
                    s.id,
                    v.unit,
                    k.word()
                );
            }
        }
    }
}
