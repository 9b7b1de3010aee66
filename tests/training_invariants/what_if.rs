//! What-ifs keep the lecture's invariants: a property test draws givens within their ranges
//! (small sizes), runs the sections they belong to, and checks each invariant in its general form
//! (6·N·D with the drawn N and D, the activation formula with the drawn sizes…); and a what-if
//! changes exactly the values that depend on the givens it changed.

use std::path::Path;

use proptest::prelude::*;
use serde_json::json;

use cs336::device::{self, DeviceRequest};
use cs336::lecture::{run, what_if};
use cs336::trace::{Kind, SectionRecord, Trace};

use crate::common::{fresh_trace, num};

/// The sections of `sets` run with those givens, merged into a copy of the fresh run (as
/// `lecture --set` merges into the device's own trace).
fn what_if(sets: &[String]) -> Trace {
    let changes = what_if::parse(sets).unwrap_or_else(|e| panic!("{sets:?} are valid: {e}"));
    let choice = device::choose(DeviceRequest::Cpu).expect("the CPU");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate::common::test_budget();
    run::run_lecture_with(
        &what_if::sections(&changes),
        &choice,
        0,
        root,
        Some(fresh_trace().clone()),
        &what_if::overrides(&changes),
        |_| {},
    )
    .unwrap_or_else(|e| panic!("a what-if with {sets:?} runs: {e}"))
}

fn section<'t>(t: &'t Trace, id: &str) -> &'t SectionRecord {
    t.section(id).unwrap_or_else(|| panic!("the what-if has `{id}`"))
}

/// The napkin math in its general form, whatever the givens.
fn napkin_holds(s: &SectionRecord) {
    let total = num(s, "flop_per_parameter_token") * num(s, "model_parameters") * num(s, "num_tokens");
    assert_eq!(num(s, "total_flops"), total, "total_flops = 6·N·D");
    let per_day = num(s, "h100_flop_per_sec") * num(s, "mfu") * num(s, "num_gpus") * 60.0 * 60.0 * 24.0;
    assert_eq!(num(s, "flops_per_day"), per_day, "flops_per_day");
    assert_eq!(num(s, "days"), total / per_day, "days = total / per day");
    let fits = num(s, "memory_num_gpus") * num(s, "h100_bytes") / num(s, "bytes_per_parameter");
    assert_eq!(num(s, "num_parameters"), fits, "num_parameters = memory / 16 bytes");
    assert_eq!(
        num(s, "bytes_per_parameter"),
        16.0,
        "AdamW in float32: 16 bytes per parameter"
    );
    // The 2026 answer: parameters and gradients in the given format, the two moments in float32.
    let mixed = 2.0 * num(s, "param_grad_bytes") + 8.0;
    assert_eq!(num(s, "mixed_bytes_per_parameter"), mixed, "2·param_grad_bytes + 8");
    let fits = (num(s, "memory_num_gpus") * num(s, "h100_bytes") / mixed).floor();
    assert_eq!(
        num(s, "mixed_num_parameters"),
        fits,
        "mixed_num_parameters = ⌊memory / bytes⌋"
    );
}

/// What backward keeps and what checkpointing trades, for the drawn sizes.
fn activations_hold(s: &SectionRecord) {
    let (b, d, layers) = (num(s, "batch_size"), num(s, "d"), num(s, "num_layers"));
    assert_eq!(
        num(s, "kept_for_backward"),
        (layers * b * d + b) * 4.0,
        "B·D per layer plus the loss's B"
    );
    assert_eq!(num(s, "kept_for_backward"), num(s, "formula_kept_for_backward"));
    assert_eq!(
        num(s, "checkpoint_peak_kept"),
        num(s, "formula_checkpoint_peak"),
        "checkpoint peak"
    );
    assert_eq!(
        num(s, "recomputed_matmul_flops"),
        num(s, "formula_recomputed_flops"),
        "recomputed FLOPs"
    );
    // Forward: every layer and the head; backward: every weight's gradient, and every input's
    // but the data's.
    let plain = 2.0 * b * d * d * (3.0 * layers - 1.0) + 6.0 * b * d;
    assert_eq!(num(s, "plain_matmul_flops"), plain, "plain step's matmul FLOPs");
    assert_eq!(
        s.values["same_gradients"].value,
        json!(true),
        "checkpointing changes no gradient"
    );
}

/// The parameter and memory accounting of a small model, for the drawn sizes.
fn models_hold(params: &SectionRecord, custom: &SectionRecord, opt: &SectionRecord) {
    let (i, o) = (num(params, "input_dim"), num(params, "output_dim"));
    assert_eq!(num(params, "expected_output_std"), i.sqrt(), "√input_dim");
    assert_eq!(num(params, "num_weights"), i * o, "input_dim·output_dim weights");
    let bound = num(params, "truncation_bound");
    assert!(num(params, "truncated_max") <= bound && num(params, "truncated_min") >= -bound);
    let (d, layers) = (num(custom, "d"), num(custom, "num_layers"));
    assert_eq!(num(custom, "num_parameters"), d * d * layers + d, "D²·L + D");
    assert_eq!(
        custom.values["y_shape"].value,
        json!([num(custom, "batch_size") as u64])
    );
    let (d, layers, b) = (num(opt, "d"), num(opt, "num_layers"), num(opt, "batch_size"));
    let p = d * d * layers + d;
    assert_eq!(num(opt, "num_parameters"), p);
    let measured = &opt.values["measured_bytes"].value;
    for part in ["parameters", "gradients", "optimizer_state"] {
        assert_eq!(measured[part].as_f64(), Some(4.0 * p), "{part}: 4 bytes per parameter");
    }
    assert_eq!(num(opt, "flops"), 6.0 * b * p, "6 FLOPs per parameter per data point");
    assert_eq!(num(opt, "counted_flops_x_requires_grad"), num(opt, "flops"));
}

#[test]
fn every_section_with_givens_estimates_its_cost() {
    let device = cs336::device::Device::Cpu;
    for (s, _) in cs336::lecture::givens::all() {
        let get = |name: &str| {
            cs336::lecture::givens::find(s.id, name)
                .map_or(f64::NAN, |(_, g)| (g.default)(&device).as_f64().unwrap_or(f64::NAN))
        };
        let cost = what_if::cost(s.id, &get).unwrap_or_else(|| panic!("`{}` has givens but no cost model", s.id));
        assert!(cost.bytes.is_finite() && cost.flops.is_finite(), "`{}`: {cost:?}", s.id);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn drawn_givens_keep_the_invariants(
        // Counts are whole (a trace holds no other): parameters, tokens and bytes too.
        params in 1_000_000u64..10_000_000_000_000, tokens in 1_000_000u64..100_000_000_000_000,
        mfu in 0.01f64..=1.0, gpus in 1usize..100_000, memory_gpus in 1usize..1024,
        // An H100's bytes in sixteens: the range of `h100_bytes` (they are divided into
        // 16-byte parameters, a whole count).
        gpu_sixteenths in 62_500_000u64..62_500_000_000,
        // The format of parameters and gradients, in bytes: fp8, bf16, fp32 or fp64.
        param_grad_log2 in 0u32..4,
        b in 1usize..24, d in 1usize..48, layers in 1usize..9, segment in 1usize..10,
        lr in 0.001f64..0.2,
        input_dim in 1usize..600, output_dim in 1usize..20, width in 1usize..12, depth in 1usize..4,
        batch in 1usize..12, opt_lr in 0.001f64..0.5,
    ) {
        let sets: Vec<String> = [
            format!("motivating_questions.model_parameters={params}"),
            format!("motivating_questions.num_tokens={tokens}"),
            format!("motivating_questions.mfu={mfu}"),
            format!("motivating_questions.num_gpus={gpus}"),
            format!("motivating_questions.memory_num_gpus={memory_gpus}"),
            format!("motivating_questions.h100_bytes={}", 16 * gpu_sixteenths),
            format!("motivating_questions.param_grad_bytes={}", 1u32 << param_grad_log2),
            format!("activation_memory.batch_size={b}"),
            format!("activation_memory.d={d}"),
            format!("activation_memory.num_layers={layers}"),
            format!("activation_memory.segment_layers={segment}"),
            format!("mixed_precision_training.lr={lr}"),
            format!("module_parameters.input_dim={input_dim}"),
            format!("module_parameters.output_dim={output_dim}"),
            format!("custom_model.d={width}"),
            format!("custom_model.num_layers={depth}"),
            format!("custom_model.batch_size={batch}"),
            format!("optimizer.d={width}"),
            format!("optimizer.num_layers={depth}"),
            format!("optimizer.lr={opt_lr}"),
        ]
        .to_vec();
        let t = what_if(&sets);
        let napkin = section(&t, "motivating_questions");
        prop_assert_eq!(num(napkin, "model_parameters"), params as f64);
        napkin_holds(napkin);
        let act = section(&t, "activation_memory");
        prop_assert_eq!(num(act, "segment_layers"), segment as f64);
        activations_hold(act);
        models_hold(section(&t, "module_parameters"), section(&t, "custom_model"), section(&t, "optimizer"));
        let mixed = section(&t, "mixed_precision_training");
        prop_assert_eq!(&mixed.values["setup"].value["lr"], &json!(lr));
        // Every given records its default beside the drawn value.
        for s in [napkin, act, mixed] {
            for (name, v) in &s.values {
                if let Some(g) = &v.given {
                    prop_assert!(v.kind == Some(Kind::Given), "{}.{} is a given", s.id, name);
                    prop_assert!(!g.range.is_empty() && !g.help.is_empty());
                }
            }
        }
    }
}

/// The values of `id` that differ between `a` and `b`, leaving out what a clock or the device
/// decided (two runs never agree on those).
fn moved(a: &Trace, b: &Trace, id: &str) -> Vec<String> {
    let (x, y) = (section(a, id), section(b, id));
    let mut out: Vec<String> = x
        .values
        .iter()
        .filter(|(_, v)| matches!(v.kind, Some(Kind::Given | Kind::Computed)))
        .filter(|(name, v)| y.values.get(*name).map(|w| &w.value) != Some(&v.value))
        .map(|(name, _)| name.clone())
        .collect();
    out.sort();
    out
}

#[test]
fn a_what_if_changes_exactly_what_depends_on_its_givens() {
    let own = fresh_trace();
    let t = what_if(&["motivating_questions.model_parameters=405e9".into()]);
    assert_eq!(
        moved(own, &t, "motivating_questions"),
        [
            "days",
            "gpus_for_training_state",
            "model_parameters",
            "total_flops",
            "training_state_bytes"
        ],
        "the parameter count moves the work, the days and the model's memory, not the rate or what fits"
    );
    // Every other section is the device's own, untouched: the float formats among them.
    for s in &own.sections {
        if s.id != "motivating_questions" {
            assert_eq!(section(&t, &s.id), s, "`{}` is the own run's", s.id);
        }
    }
    let napkin = section(&t, "motivating_questions");
    assert!(napkin.values["model_parameters"].changed_given());
    assert!(!napkin.values["num_tokens"].changed_given());
    assert_eq!(
        what_if::changed_givens(&t),
        ["motivating_questions.model_parameters = 4.05e11 (default 7e10)"]
    );

    // The matmul re-measured at another size: its count moves with B, the reference totals do not.
    let t = what_if(&["tensor_operations_flops.B=2048".into()]);
    assert_eq!(
        moved(own, &t, "tensor_operations_flops"),
        ["B", "actual_num_flops", "counted_num_flops", "y_shape"]
    );
    let s = section(&t, "tensor_operations_flops");
    assert_eq!(num(s, "actual_num_flops"), 2.0 * 2048.0 * num(s, "D") * num(s, "K"));
    assert_eq!(s.values["y_shape"].value, json!([2048, num(s, "K") as u64]));
}
