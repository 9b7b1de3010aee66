//! Claims: `{{if CLAIM}}` keeps the words that match the trace, `{{assert CLAIM}}` fails the build
//! naming the values, and a malformed claim is an error at its chapter and line. The trace is the
//! committed CPU trace, edited so that a comparison comes out the other way.

use crate::common;

use std::path::Path;

use common::{ROOT, Workspace, only_problem, provenance_box, section_mut};
use cs336::book::Cause;
use cs336::trace::{self, Trace};

/// The book's default trace (the newest committed one).
fn committed() -> Trace {
    trace::load(&common::default_trace_path()).expect("committed trace loads")
}

fn set(trace: &mut Trace, section: &str, name: &str, value: serde_json::Value) {
    let record = section_mut(trace, section)
        .values
        .get_mut(name)
        .unwrap_or_else(|| panic!("no value {section}.{name}"));
    record.value = value;
}

/// The words of a page: tags removed, whitespace collapsed.
fn words(html: &str) -> String {
    let body = &html[html.find("<main>").expect("main")..html.find("</main>").expect("/main")];
    let mut out = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A real chapter cites its sources: the small book gets the real bibliography.
fn with_bibliography(ws: &Workspace) {
    let mini = ws.dir.path().join("mini");
    std::fs::create_dir_all(&mini).expect("book folder");
    std::fs::copy(
        Path::new(ROOT).join("book/references.toml"),
        mini.join("references.toml"),
    )
    .expect("bibliography");
}

fn chapter(name: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join("book/src").join(name)).expect("chapter")
}

#[test]
fn a_claim_flips_with_its_value_inline_and_around_paragraphs() {
    let md = "bf16 {{if tensor_operations_flops.bf16_actual_flop_per_sec > tensor_operations_flops.actual_flop_per_sec}}ran \
              faster ({{value tensor_operations_flops.bf16_actual_flop_per_sec format=si}}){{else}}did not run faster{{end}}.\n\n\
              {{if ratio(tensor_operations_flops.bf16_actual_flop_per_sec, tensor_operations_flops.actual_flop_per_sec) in [0.8, 1.25]}}\n\
              About the same.\n\n{{else if has tensor_operations_flops.bf16_mfu}}\nDifferent, and {{if tensor_operations_flops.bf16_mfu < 1}}below{{else}}above{{end}} its peak.\n{{else}}\nDifferent.\n{{end}}\n";
    let ws = Workspace::new();
    let mut trace = committed();
    set(
        &mut trace,
        "tensor_operations_flops",
        "actual_flop_per_sec",
        1e11.into(),
    );
    set(
        &mut trace,
        "tensor_operations_flops",
        "bf16_actual_flop_per_sec",
        4e11.into(),
    );
    let faster = words(&ws.build_chapter(&ws.write_trace("cpu", &trace), md).expect("builds"));
    assert!(faster.contains("bf16 ran faster ( 400 GFLOP/s )."), "{faster}");
    assert!(faster.contains("Different, and below its peak."), "{faster}");
    assert!(
        !faster.contains("did not") && !faster.contains("About the same"),
        "{faster}"
    );

    set(
        &mut trace,
        "tensor_operations_flops",
        "bf16_actual_flop_per_sec",
        0.9e11.into(),
    );
    let same = words(&ws.build_chapter(&ws.write_trace("cpu", &trace), md).expect("builds"));
    assert!(same.contains("bf16 did not run faster."), "{same}");
    assert!(
        same.contains("About the same.") && !same.contains("Different"),
        "{same}"
    );
}

#[test]
fn the_real_chapter_changes_its_words_when_the_trace_disagrees() {
    let ws = Workspace::new();
    let md = chapter("mixed_precision_training.md");
    with_bibliography(&ws);
    let mut trace = committed();
    let before = words(&ws.build_chapter(&ws.write_trace("cpu", &trace), &md).expect("builds"));
    assert!(before.contains("pure bfloat16 did stall short of float32"), "{before}");
    // Pure bfloat16 ends below float32: the chapter must now say the opposite.
    set(&mut trace, "mixed_precision_training", "final_loss_bf16", 1e-9.into());
    let after = words(&ws.build_chapter(&ws.write_trace("cpu", &trace), &md).expect("builds"));
    assert!(
        after.contains("pure bfloat16 did not stall short of float32"),
        "{after}"
    );
}

#[test]
fn a_failed_assertion_names_the_claim_and_the_values() {
    let ws = Workspace::new();
    let mut trace = committed();
    set(&mut trace, "gradients_flops", "counted_forward_flops", 12345.into());
    let md = "Counted.\n\nThe counter agrees.\n{{assert gradients_flops.counted_forward_flops == gradients_flops.num_forward_flops}}\n";
    let problem = only_problem(ws.build_chapter(&ws.write_trace("cpu", &trace), md));
    assert_eq!(problem.line, 4);
    let Cause::AssertFailed { claim, values } = &problem.cause else {
        panic!("{problem}")
    };
    assert_eq!(
        claim,
        "gradients_flops.counted_forward_flops == gradients_flops.num_forward_flops"
    );
    assert!(
        values.contains("gradients_flops.counted_forward_flops = 12345")
            && values.contains("gradients_flops.num_forward_flops = "),
        "{values}"
    );
    let shown = problem.to_string();
    assert!(shown.contains("chapter.md:4") && shown.contains("12345"), "{shown}");
}

#[test]
fn malformed_claims_are_errors_with_chapter_and_line() {
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", &committed());
    let problem = |md: &str| only_problem(ws.build_chapter(&path, md));

    let p = problem("Text.\n\nA {{if tensors_memory.numel >}}x{{end}}.\n");
    assert_eq!(p.line, 3);
    assert!(
        matches!(&p.cause, Cause::Malformed(m) if m.contains("`if`: the claim ends")),
        "{p}"
    );

    let p = problem("A {{if tensors_memory.no_such_value > 1}}x{{end}}.\n");
    assert!(
        matches!(&p.cause, Cause::MissingValue { name, .. } if name == "no_such_value"),
        "{p}"
    );

    let p = problem("A\n{{assert no_such_section.x > 1}}\n");
    assert_eq!(p.line, 2);
    assert!(matches!(&p.cause, Cause::MissingSection { .. }), "{p}");

    let p = problem("A {{if tensors_memory.numel > 1}}x.\n");
    assert!(
        matches!(&p.cause, Cause::Structure(m) if m.contains("never closed")),
        "{p}"
    );
    let p = problem("A\n\nB {{else}} C.\n");
    assert_eq!(p.line, 3);
    assert!(
        matches!(&p.cause, Cause::Structure(m) if m.contains("`{{else}}` without")),
        "{p}"
    );
    let p = problem("A {{end}}.\n");
    assert!(
        matches!(&p.cause, Cause::Structure(m) if m.contains("`{{end}}` without")),
        "{p}"
    );
    let p = problem("A {{if tensors_memory.numel > 1}}x{{else}}y{{else if tensors_memory.numel > 2}}z{{end}}.\n");
    assert!(
        matches!(&p.cause, Cause::Structure(m) if m.contains("`{{else if}}` without")),
        "{p}"
    );

    // A string is not a number.
    let p = problem("A {{if tensors_memory.dtype > 1}}x{{end}}.\n");
    assert!(
        matches!(&p.cause, Cause::Claim { msg, .. } if msg.contains("not a number")),
        "{p}"
    );
}

#[test]
fn a_value_read_only_by_a_claim_is_quoted_and_must_be_fresh() {
    let ws = Workspace::new();
    let mut trace = committed();
    let md = "{{provenance}}\n\nA {{value tensors_memory.bytes}}{{if tensor_storage.index > 0}}, positive{{end}}.\n";
    let html = ws.build_chapter(&ws.write_trace("cpu", &trace), md).expect("builds");
    assert!(words(&html).contains(", positive."));
    // The provenance box names the section only the claim read.
    section_mut(&mut trace, "tensor_storage").run.seed = 7;
    let html = ws.build_chapter(&ws.write_trace("cpu", &trace), md).expect("builds");
    let boxed = provenance_box(&html);
    assert!(
        boxed.contains("<code>tensor_storage</code>") && boxed.contains("seed 7"),
        "{boxed}"
    );
    // A stale section fails the claim as it fails a value.
    section_mut(&mut trace, "tensor_storage").source_hash = "0".repeat(64);
    let p = only_problem(ws.build_chapter(&ws.write_trace("cpu", &trace), md));
    assert!(
        matches!(&p.cause, Cause::Stale { section, .. } if section == "tensor_storage"),
        "{p}"
    );
}

#[test]
fn objects_are_tables_never_raw_json_in_prose() {
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", &committed());
    let html = ws
        .build_chapter(
            &path,
            "Held:\n\n{{table optimizer.measured_bytes unit=bytes format=int}}\n",
        )
        .expect("builds");
    assert!(
        html.contains("<th>parameters</th><td>144 bytes</td>") && html.contains("<th>optimizer state</th>"),
        "{html}"
    );
    let html = ws
        .build_chapter(&path, "Runs:\n\n{{table mixed_precision_training.high_lr_results}}\n")
        .expect("builds");
    assert!(
        html.contains("<th>final loss</th>") && html.contains("<th>float32</th>"),
        "{html}"
    );

    let p = only_problem(ws.build_chapter(&path, "Raw {{value optimizer.measured_bytes}}.\n"));
    assert!(
        matches!(&p.cause, Cause::BadValue { msg, .. } if msg.contains("{{table optimizer.measured_bytes}}")),
        "{p}"
    );
    let p = only_problem(ws.build_chapter(&path, "Raw {{value custom_model.param_sizes}}.\n"));
    assert!(
        matches!(&p.cause, Cause::BadValue { msg, .. } if msg.contains("list of objects")),
        "{p}"
    );
    let p = only_problem(ws.build_chapter(&path, "\n{{table tensors_memory.numel}}\n"));
    assert!(
        matches!(&p.cause, Cause::BadValue { msg, .. } if msg.contains("`table` shows an object")),
        "{p}"
    );
}

/// The roofline chapter names what bounds each operation from the run, with three outcomes: a
/// ReLU recorded as memory-bound, compute-bound or overhead-bound gets that sentence, whatever the
/// lecture predicts.
#[test]
fn the_roofline_chapter_names_the_regime_of_relu_from_the_run() {
    let ws = Workspace::new();
    let md = chapter("arithmetic_intensity.md");
    with_bibliography(&ws);
    let mut trace = committed();
    let timings = section_mut(&mut trace, "arithmetic_intensity").values["op_timings"]
        .value
        .clone();
    let page_with = |trace: &mut Trace, regime: &str| {
        let mut timings = timings.clone();
        for r in ["memory", "compute", "overhead"] {
            timings["relu"][format!("{r}_bound")] = (r == regime).into();
        }
        timings["relu"]["regime"] = regime.into();
        set(trace, "arithmetic_intensity", "op_timings", timings);
        words(&ws.build_chapter(&ws.write_trace("cpu", trace), &md).expect("builds"))
    };
    let memory = page_with(&mut trace, "memory");
    assert!(memory.contains("It is memory-bound , as the lecture says."), "{memory}");
    let compute = page_with(&mut trace, "compute");
    assert!(compute.contains("On this run it was compute-bound"), "{compute}");
    assert!(
        !compute.contains("It is memory-bound , as the lecture says."),
        "{compute}"
    );
    let overhead = page_with(&mut trace, "overhead");
    assert!(
        overhead.contains("It was overhead-bound : at this size its call costs more than its bytes."),
        "{overhead}"
    );
    assert!(!overhead.contains("as the lecture says."), "{overhead}");
}

/// A point above its roof is refused: a copy of the trace whose ReLU moved 145 % of the memory's
/// bandwidth at its working set (beyond the spread the run allowed) does not build its roofline,
/// and the message names ReLU. At 90 % it builds.
#[test]
fn a_relu_above_its_roof_is_refused_by_the_roofline() {
    let ws = Workspace::new();
    let md = "{{chart roofline}}\n";
    let mut trace = committed();
    let mut timings = section_mut(&mut trace, "arithmetic_intensity").values["op_timings"]
        .value
        .clone();
    let roof = timings["relu"]["roof_bytes_per_sec"].as_f64().expect("relu has a roof");
    assert!(timings["relu"]["allowance"].as_f64().expect("and an allowance") < 1.45);
    timings["relu"]["bytes_per_sec"] = (0.9 * roof).into();
    set(&mut trace, "arithmetic_intensity", "op_timings", timings.clone());
    ws.build_chapter(&ws.write_trace("cpu", &trace), md)
        .expect("a point below its roof is drawn");
    timings["relu"]["bytes_per_sec"] = (1.45 * roof).into();
    set(&mut trace, "arithmetic_intensity", "op_timings", timings);
    let p = only_problem(ws.build_chapter(&ws.write_trace("cpu", &trace), md));
    assert!(
        matches!(&p.cause, Cause::BadValue { msg, address, .. }
            if address.ends_with("op_timings.relu.bytes_per_sec") && msg.contains("relu moved") && msg.contains("145%")),
        "{p}"
    );
}

/// The gradient accumulation chapter says whether the peak fell with the number of micro-batches
/// from the run: a trace whose peak did not fall must not say that it did, and one whose
/// activations did not shrink must say that too.
#[test]
fn the_accumulation_chapter_says_whether_the_peak_fell_from_the_run() {
    let ws = Workspace::new();
    let md = chapter("gradient_accumulation.md");
    with_bibliography(&ws);
    let mut trace = committed();
    let id = "gradient_accumulation";
    let k = section_mut(&mut trace, id).values["max_micro_batches"].value.clone();
    let accumulated = section_mut(&mut trace, id).values["accumulated_peak"].value.clone();
    // The peak fell by the number of micro-batches, and so did the activations.
    set(&mut trace, id, "peak_ratio", k.clone());
    set(&mut trace, id, "activation_ratio", k);
    let fell = words(&ws.build_chapter(&ws.write_trace("cpu", &trace), &md).expect("builds"));
    assert!(fell.contains("That is about the number of micro-batches"), "{fell}");
    assert!(fell.contains("the number of micro-batches, as it should"), "{fell}");
    assert!(!fell.contains("The peak did not fall"), "{fell}");
    // The same peak for the full batch and the most micro-batches: the prose must change.
    set(&mut trace, id, "full_batch_peak", accumulated);
    set(&mut trace, id, "peak_ratio", 1.0.into());
    set(&mut trace, id, "activation_ratio", 1.0.into());
    let flat = words(&ws.build_chapter(&ws.write_trace("cpu", &trace), &md).expect("builds"));
    assert!(flat.contains("The peak did not fall"), "{flat}");
    assert!(!flat.contains("That is about the number of micro-batches"), "{flat}");
    assert!(flat.contains("something in the forward pass does not shrink"), "{flat}");
}

/// The schedule chapter reads each order of growth off the slopes the run measured: a trace in
/// which keeping none grew like L must say so, and must not say that every schedule grew as the
/// lecture says; a working set that varies must not be called exact.
#[test]
fn the_schedule_chapter_reads_the_orders_from_the_run() {
    let ws = Workspace::new();
    let md = chapter("checkpoint_schedule.md");
    with_bibliography(&ws);
    let mut trace = committed();
    let id = "checkpoint_schedule";
    let as_committed = words(&ws.build_chapter(&ws.write_trace("cpu", &trace), &md).expect("builds"));
    assert!(
        as_committed.contains("grew as the lecture says it would"),
        "{as_committed}"
    );
    assert!(as_committed.contains("Keep none 0.00 constant"), "{as_committed}");
    assert!(
        as_committed.contains("at every depth and for every schedule"),
        "{as_committed}"
    );
    set(&mut trace, id, "peak_slope_none", 1.0.into());
    let smallest = section_mut(&mut trace, id).values["smallest_working_set"]
        .value
        .as_f64()
        .expect("a number");
    set(&mut trace, id, "largest_working_set", (smallest + 512.0).into());
    let changed = words(&ws.build_chapter(&ws.write_trace("cpu", &trace), &md).expect("builds"));
    assert!(changed.contains("Keep none 1.00 like L"), "{changed}");
    assert!(
        changed.contains("Not every schedule grew as the lecture says"),
        "{changed}"
    );
    assert!(!changed.contains("at every depth and for every schedule"), "{changed}");
    assert!(changed.contains("depending on the step"), "{changed}");
}

/// A layer of one output (`--set module_parameters.output_dim=1`, in its range) recorded one
/// output, and its chapter quoted the second and third: the book failed after the run. The chapter
/// quotes as many as there are now.
#[test]
fn the_parameters_chapter_quotes_as_many_outputs_as_the_run_made() {
    let ws = Workspace::new();
    let md = chapter("module_parameters.md");
    with_bibliography(&ws);
    let mut trace = committed();
    let page_with = |trace: &mut Trace, outputs: serde_json::Value| {
        set(trace, "module_parameters", "output", outputs);
        // Each value is its own element: the commas after them come out spaced.
        let page = words(&ws.build_chapter(&ws.write_trace("cpu", trace), &md).expect("builds")).replace(" ,", ",");
        // The sentence that quotes them, up to the next paragraph.
        let from = (page.find("The first outputs").or_else(|| page.find("Its one output"))).expect("the sentence");
        let to = page[from..].find("Stack a few").map_or(page.len(), |i| from + i);
        page[from..to].trim().to_string()
    };
    assert_eq!(page_with(&mut trace, serde_json::json!([1.5])), "Its one output: 1.5");
    assert_eq!(
        page_with(&mut trace, serde_json::json!([1.5, 2.0])),
        "The first outputs: 1.5, 2.0"
    );
    assert_eq!(
        page_with(&mut trace, serde_json::json!([1.5, 2.0, 3.0, 4.0])),
        "The first outputs: 1.5, 2.0, 3.0, …"
    );
}

/// The fusion paragraph decides from the run whether fusing saved time, and why the time grew by
/// more or less than the bytes: a copy of the trace edited to each case gets that case's sentence.
#[test]
fn the_fusion_paragraph_follows_the_measured_ratio() {
    let ws = Workspace::new();
    let md = chapter("arithmetic_intensity.md");
    with_bibliography(&ws);
    let mut trace = committed();
    let fusion = section_mut(&mut trace, "arithmetic_intensity").values["fusion"]
        .value
        .clone();
    assert_eq!(fusion["bytes_ratio"], 5.5, "{fusion}");
    let page_with = |trace: &mut Trace, time_ratio: f64, fused_over_erf_step: f64| {
        let mut fusion = fusion.clone();
        fusion["time_ratio"] = time_ratio.into();
        fusion["allowance"] = 1.1.into();
        fusion["fusing_saved_time"] = (time_ratio > 1.1).into();
        fusion["erf_time_share"] = 0.27.into();
        fusion["fused_over_erf_step"] = fused_over_erf_step.into();
        set(trace, "arithmetic_intensity", "fusion", fusion);
        words(&ws.build_chapter(&ws.write_trace("cpu", trace), &md).expect("builds"))
    };
    // The fused op took as long as the erf step alone: fusing removed the four cheap steps.
    let removed = page_with(&mut trace, 3.9, 1.02);
    assert!(removed.contains("fusing saved time."), "{removed}");
    assert!(removed.contains("on this device it held."), "{removed}");
    assert!(removed.contains("Its time grew by less than its bytes"), "{removed}");
    assert!(
        removed.contains("27% of all the steps’ time for 18.2% of their bytes"),
        "{removed}"
    );
    assert!(removed.contains("what fusing removed is the other steps"), "{removed}");
    let slower = page_with(&mut trace, 3.9, 2.0);
    assert!(
        slower.contains("The fused GeLU took 2.00 times as long as that one step."),
        "{slower}"
    );
    assert!(!slower.contains("what fusing removed"), "{slower}");
    let as_bytes = page_with(&mut trace, 5.4, 1.0);
    assert!(as_bytes.contains("Its time grew with its bytes"), "{as_bytes}");
    let calls = page_with(&mut trace, 9.0, 1.0);
    assert!(calls.contains("also pays its own call"), "{calls}");
    let none = page_with(&mut trace, 1.05, 1.0);
    assert!(none.contains("fusing saved no time."), "{none}");
    assert!(none.contains("on this device it did not pay."), "{none}");
    assert!(!none.contains("fusing saved time."), "{none}");
}

/// The accumulation chapter accounts for the gap between the lecture's count of activations and
/// the measured high-water mark: exactly the loss's tensors, or more than they explain.
#[test]
fn the_accumulation_chapter_accounts_for_the_counted_and_measured_activations() {
    let ws = Workspace::new();
    let md = chapter("gradient_accumulation.md");
    with_bibliography(&ws);
    let mut trace = committed();
    let section = section_mut(&mut trace, "gradient_accumulation");
    let num = |name: &str| section.values[name].value.as_f64().expect("a number");
    let (b, d, formula) = (num("batch_size"), num("d"), num("formula_activation_bytes"));
    let loss_bytes = 2.0 * b * d * 4.0 + 4.0;
    assert_eq!(num("full_batch_activation"), formula + loss_bytes, "the committed run");
    let page_with = |trace: &mut Trace, activation: f64| {
        set(
            trace,
            "gradient_accumulation",
            "full_batch_activation",
            activation.into(),
        );
        words(&ws.build_chapter(&ws.write_trace("cpu", trace), &md).expect("builds"))
    };
    let exact = page_with(&mut trace, formula + loss_bytes);
    assert!(
        exact.contains("the difference is exactly what the loss keeps."),
        "{exact}"
    );
    let more = page_with(&mut trace, formula + 2.0 * loss_bytes);
    assert!(more.contains("more than the loss’s own tensors explain"), "{more}");
    assert!(!more.contains("exactly what the loss keeps"), "{more}");
    let less = page_with(&mut trace, formula / 2.0);
    assert!(less.contains("the run held less than the count"), "{less}");
}

/// A measured peak below a rate the same run measured is refused: the CPU-peak appendix does not
/// build from a copy of the trace whose bfloat16 product beat its bfloat16 peak, and the message
/// names both values.
#[test]
fn a_peak_below_a_measured_rate_is_refused() {
    let ws = Workspace::new();
    let md = chapter("cpu_peak.md");
    let mut trace = committed();
    ws.build_chapter(&ws.write_trace("cpu", &trace), &md)
        .expect("the committed run's peaks hold");
    let peak = section_mut(&mut trace, "tensor_operations_flops").values["bf16_peak_flop_per_sec"]
        .value
        .as_f64()
        .expect("a bf16 peak");
    set(
        &mut trace,
        "tensor_operations_flops",
        "bf16_actual_flop_per_sec",
        (1.5 * peak).into(),
    );
    let problem = only_problem(ws.build_chapter(&ws.write_trace("cpu", &trace), &md));
    let Cause::AssertFailed { claim, values } = &problem.cause else {
        panic!("{problem}")
    };
    assert!(claim.contains("bf16_actual_flop_per_sec <= "), "{claim}");
    assert!(
        values.contains("tensor_operations_flops.bf16_actual_flop_per_sec = ")
            && values.contains("tensor_operations_flops.bf16_peak_flop_per_sec = "),
        "{values}"
    );
}

/// The mixed-precision chapter says why pure bfloat16 can end below mixed precision from the run:
/// close together they share the forward pass's floor; far apart, something more separates them;
/// and mixed below bfloat16 is what the master weights predict.
#[test]
fn the_mixed_precision_chapter_decides_its_closing_from_the_run() {
    let ws = Workspace::new();
    let md = chapter("mixed_precision_training.md");
    with_bibliography(&ws);
    let mut trace = committed();
    let high = section_mut(&mut trace, "mixed_precision_training").values["high_lr_results"]
        .value
        .clone();
    let page_with = |trace: &mut Trace, bf16: f64, mixed: f64| {
        let mut high = high.clone();
        high["bf16"]["final_loss"] = bf16.into();
        high["mixed"]["final_loss"] = mixed.into();
        set(trace, "mixed_precision_training", "high_lr_results", high);
        words(&ws.build_chapter(&ws.write_trace("cpu", trace), &md).expect("builds"))
    };
    let floor = page_with(&mut trace, 1.5e-5, 2.0e-5);
    assert!(floor.contains("pure bfloat16 ended below mixed precision"), "{floor}");
    assert!(floor.contains("Close to each other, they sit at the floor"), "{floor}");
    let apart = page_with(&mut trace, 1.0e-6, 2.0e-5);
    assert!(apart.contains("They ended far apart"), "{apart}");
    let below = page_with(&mut trace, 2.0e-5, 1.0e-6);
    assert!(below.contains("mixed precision ended below pure bfloat16"), "{below}");
    assert!(!below.contains("pure bfloat16 ended below"), "{below}");
}

/// A chapter's first tick says what it means, once; the others carry it on hover.
#[test]
fn the_first_tick_of_a_chapter_is_explained_in_words() {
    let ws = Workspace::new();
    let md = "A view.{{check tensor_slicing.transpose_is_a_view}} A copy.{{check tensor_slicing.contiguous_copies}}\n";
    let html = ws
        .build_chapter(&ws.write_trace("cpu", &committed()), md)
        .expect("builds");
    let explained = "(✓: the run’s code checked this as it ran)";
    let text = words(&html);
    assert_eq!(text.matches(explained).count(), 1, "{text}");
    assert_eq!(html.matches("class=\"lecture-check\"").count(), 2, "{html}");
}

/// The deep network chapter says why backward's products fell short of twice the forward's (the
/// first block's input is data) and whether the graph kept what the lecture counts, from the run.
#[test]
fn the_deep_network_chapter_explains_backward_and_its_activations_from_the_run() {
    let ws = Workspace::new();
    let md = chapter("deep_network.md");
    with_bibliography(&ws);
    let mut trace = committed();
    let num = |trace: &Trace, name: &str| {
        section_mut(&mut trace.clone(), "deep_network").values[name]
            .value
            .clone()
    };
    let layers = num(&trace, "num_layers").as_f64().expect("a number");
    assert_eq!(
        num(&trace, "backward_over_forward").as_f64(),
        Some((2.0 * layers - 1.0) / layers),
        "the committed run: every block but the first sends a gradient back"
    );
    assert_eq!(num(&trace, "activation_bytes"), num(&trace, "lecture_activation_bytes"));
    let page = words(&ws.build_chapter(&ws.write_trace("cpu", &trace), &md).expect("builds"));
    assert!(page.contains("the first block’s input is the data"), "{page}");
    assert!(page.contains("and gets the same total"), "{page}");
    assert!(!page.contains("this graph keeps"), "{page}");

    set(&mut trace, "deep_network", "backward_over_forward", 2.0.into());
    let lecture_bytes = num(&trace, "lecture_activation_bytes").as_f64().expect("a number");
    set(
        &mut trace,
        "deep_network",
        "activation_bytes",
        (lecture_bytes / 2.0).into(),
    );
    let page = words(&ws.build_chapter(&ws.write_trace("cpu", &trace), &md).expect("builds"));
    assert!(!page.contains("the first block’s input is the data"), "{page}");
    assert!(page.contains("every product ran twice in backward"), "{page}");
    assert!(page.contains("this graph keeps less"), "{page}");
    assert!(!page.contains("and gets the same total"), "{page}");
}

/// The FLOPs chapter says which unit the bfloat16 products took and why, from the run: widened
/// to float32 where the bfloat16 unit is the slower one, on the unit where it is not, and widened
/// with no unit to take where the CPU has no bfloat16 instruction.
#[test]
fn the_flops_chapter_names_the_unit_bfloat16_ran_on() {
    let ws = Workspace::new();
    let md = chapter("tensor_operations_flops.md");
    with_bibliography(&ws);
    let mut trace = committed();
    let section = section_mut(&mut trace, "tensor_operations_flops");
    let fp32_peak = section.values["peak_flop_per_sec"].value.as_f64().expect("a number");
    let page_with = |trace: &mut Trace, widened: bool, has_instruction: bool, unit_over_fp32: f64| {
        set(trace, "tensor_operations_flops", "bf16_widened", widened.into());
        set(
            trace,
            "tensor_operations_flops",
            "bf16_has_instruction",
            has_instruction.into(),
        );
        let mut peaks = section_mut(trace, "tensor_operations_flops").values["cpu_isa_peaks"]
            .value
            .clone();
        peaks["bf16"]["flop_per_sec"] = (unit_over_fp32 * fp32_peak).into();
        set(trace, "tensor_operations_flops", "cpu_isa_peaks", peaks);
        words(&ws.build_chapter(&ws.write_trace("cpu", trace), &md).expect("builds"))
    };
    let slower = page_with(&mut trace, true, true, 0.5);
    assert!(slower.contains("here the bfloat16 unit is the slower one"), "{slower}");
    assert!(
        slower.contains("So the library stores bfloat16 and computes in float32"),
        "{slower}"
    );
    assert!(
        slower.contains("The storage format is not the compute format"),
        "{slower}"
    );
    let kept = page_with(&mut trace, false, true, 0.5);
    assert!(kept.contains("here the bfloat16 unit is the slower one"), "{kept}");
    assert!(kept.contains("A library on such a CPU can store bfloat16"), "{kept}");
    assert!(!kept.contains("So the library stores bfloat16"), "{kept}");
    let faster = page_with(&mut trace, false, true, 2.0);
    assert!(!faster.contains("the slower one"), "{faster}");
    assert!(
        faster.contains("This CPU’s bfloat16 unit, timed on its own"),
        "{faster}"
    );
    let none = page_with(&mut trace, true, false, 1.0);
    assert!(none.contains("CPU has no bfloat16 multiply instruction"), "{none}");
    assert!(!none.contains("timed on its own"), "{none}");
}
