//! The provenance box of a page tells where the numbers the page quotes came from: the device
//! (trace-wide), and the run of each quoted section (a partial run re-records some sections, so
//! one trace may hold several runs); timings from an unoptimised build, or measured while the
//! machine was busy, are marked.

use crate::common;

use common::{Workspace, fresh_trace, provenance_box, section_mut};

#[test]
fn one_run_is_one_line_and_mixed_runs_are_listed_with_their_sections() {
    let ws = Workspace::new();
    let mut trace = fresh_trace().clone();
    // `tensor_storage` recorded again by another run: another seed, commit and time.
    let run = &mut section_mut(&mut trace, "tensor_storage").run;
    run.seed = 7;
    run.git.commit = Some("1234567890abcdef".into());
    run.git.dirty = Some(false);
    run.recorded_at = "2031-02-03T04:05:06Z".into();
    let path = ws.write_trace("cpu", &trace);

    // The box comes first on the page and still describes what the page quotes after it.
    let one = ws
        .build_chapter(&path, "{{provenance}}\n\nA {{value tensors_memory.bytes}}.\n")
        .expect("builds");
    let one = provenance_box(&one);
    assert!(
        one.contains(", seed 0, ") && one.contains("release profile, opt-level"),
        "{one}"
    );
    assert!(
        !one.contains("<ul>") && !one.contains("seed 7"),
        "one run, one line: {one}"
    );

    let both = ws
        .build_chapter(
            &path,
            "{{provenance}}\n\nA {{value tensors_memory.bytes}}, B {{value tensor_storage.index}}.\n",
        )
        .expect("builds");
    let both = provenance_box(&both);
    assert!(
        both.contains("The sections quoted on this page come from 2 runs"),
        "{both}"
    );
    let items: Vec<&str> = both.split("<li>").skip(1).collect();
    assert_eq!(items.len(), 2, "{both}");
    assert!(
        items[0].contains(", seed 0, ") && items[0].contains("<code>tensors_memory</code>"),
        "{}",
        items[0]
    );
    assert!(
        items[1].contains("<code>1234567890</code> on 2031-02-03 04:05 UTC, seed 7")
            && items[1].contains("<code>tensor_storage</code>")
            && !items[1].contains("tensors_memory"),
        "{}",
        items[1]
    );

    // A page that quotes nothing describes the whole trace: every run, every section.
    let none = ws.build_chapter(&path, "Prose.\n\n{{provenance}}\n").expect("builds");
    let none = provenance_box(&none);
    assert!(none.contains("Its sections come from 2 runs"), "{none}");
    assert!(none.contains("<code>mixed_precision_training</code>"), "{none}");
}

#[test]
fn timings_from_an_unoptimised_build_are_marked_on_the_pages_that_quote_them() {
    let ws = Workspace::new();
    let mut trace = fresh_trace().clone();
    // As a run at the lecture's budget records it: the tests' budget has its own mark (below).
    for s in &mut trace.sections {
        s.run.budget = None;
    }
    let build = &mut section_mut(&mut trace, "tensor_operations_flops").run.build;
    build.profile = "debug".into();
    build.opt_level = "0".into();
    build.debug_assertions = true;
    let path = ws.write_trace("cpu", &trace);
    let warning = |chapter: &str| -> Option<String> {
        let html = ws
            .build_chapter(&path, &format!("{chapter}\n\n{{{{provenance}}}}\n"))
            .expect("builds");
        let found = provenance_box(&html);
        let at = found.find("<p class=\"lecture-warning\">")?;
        Some(found[at..].to_string())
    };
    let w = warning("{{value tensor_operations_flops.actual_flop_per_sec}}").expect("a measured speed");
    assert!(
        w.contains("Unoptimised build")
            && w.contains("<code>tensor_operations_flops</code>")
            && w.contains("debug profile, opt-level 0, with debug assertions")
            && w.contains("cargo run --release --bin lecture"),
        "{w}"
    );
    for quoting in [
        "{{value tensor_operations_flops.mfu}}",
        "{{value tensor_operations_flops.throughput_sweep.0.flop_per_sec unit=FLOP/s}}",
        "{{code tensor_operations_flops}}",
        "{{chart matmul_throughput}}",
    ] {
        assert!(warning(quoting).is_some(), "{quoting} shows timings");
    }
    for quoting in [
        // Arithmetic and datasheet figures of the same section: no clock involved.
        "{{value tensor_operations_flops.total_flops}}",
        "{{value tensor_operations_flops.h100_flop_per_sec}}",
        // A timing from another section, recorded by an optimised build.
        "{{value gradients_flops.backward_time}}",
    ] {
        assert_eq!(warning(quoting), None, "{quoting}");
    }

    // `lecture` says so after a run that leaves such timings in the trace, naming the sections.
    let said = cs336::lecture::run::unoptimised_warning(&trace).expect("a warning");
    assert!(
        said.contains("1 section(s) (tensor_operations_flops)") && said.contains("debug profile, opt-level 0"),
        "{said}"
    );
    assert_eq!(cs336::lecture::run::unoptimised_warning(fresh_trace()), None);

    // The whole book from that trace: the compute chapter says so, the memory chapter does not.
    ws.build_real_book(&path).expect("the book builds");
    let page = |name: &str| std::fs::read_to_string(ws.out_dir().join(name)).expect("page");
    assert!(provenance_box(&page("tensor_operations_flops.html")).contains("Unoptimised build"));
    assert!(!page("tensors_memory.html").contains("Unoptimised build"));
}

#[test]
fn timings_measured_on_a_busy_machine_are_marked_at_the_top_and_in_the_box() {
    let ws = Workspace::new();
    let mut trace = fresh_trace().clone();
    section_mut(&mut trace, "tensor_operations_flops").disturbed = Some(cs336::trace::Disturbance {
        why: "other processes used 48 % of the CPU time".into(),
        load: Some(3.5),
        others: Some(0.48),
        steal: Some(0.0),
        spread: Some(1.7),
        tries: 3,
    });
    let path = ws.write_trace("cpu", &trace);
    let page = |quoting: &str| {
        ws.build_chapter(&path, &format!("Opening words.\n\n{quoting}\n\n{{{{provenance}}}}\n"))
            .expect("builds")
    };
    let line = "Measured while the machine was busy</strong> (<code>tensor_operations_flops</code>: other \
                processes used 48 % of the CPU time); timings may be low.";
    for quoting in [
        "{{value tensor_operations_flops.actual_flop_per_sec}}",
        "{{value tensor_operations_flops.mfu}}",
        "{{chart matmul_throughput}}",
    ] {
        let html = page(quoting);
        let top = html
            .find(line)
            .unwrap_or_else(|| panic!("{quoting}: no busy line in {html}"));
        let opening = html.find("Opening words.").expect("the chapter's text");
        assert!(top < opening, "{quoting}: the line comes before the chapter's text");
        assert!(provenance_box(&html).contains(line), "{quoting}: and in the box");
        assert!(
            provenance_box(&html).contains("--section tensor_operations_flops"),
            "{quoting}: with the command that measures again"
        );
    }
    for quoting in [
        // The section's arithmetic: no clock involved.
        "{{value tensor_operations_flops.total_flops}}",
        // A timing of another section, measured on a quiet machine.
        "{{value gradients_flops.backward_time}}",
    ] {
        assert!(!page(quoting).contains("machine was busy"), "{quoting}");
    }

    // `lecture` ends with the same warning and the command to run again.
    let said = cs336::lecture::run::disturbed_warning(&trace).expect("a warning");
    assert!(
        said.contains("tensor_operations_flops: other processes used 48 % of the CPU time")
            && said.contains("cargo run --release --bin lecture -- --section tensor_operations_flops"),
        "{said}"
    );
    assert_eq!(cs336::lecture::run::disturbed_warning(fresh_trace()), None);
}

/// The tests' own runs time at the tests' budget (`CS336_BUDGET=test`: one call each), and their
/// trace says so: the pages quoting its timings carry a mark, the others none, and `lecture`
/// names the sections after such a run. A run at the lecture's budget records no budget.
#[test]
fn timings_at_the_tests_budget_are_marked_on_the_pages_that_quote_them() {
    let ws = Workspace::new();
    let trace = fresh_trace().clone();
    assert!(
        trace.sections.iter().all(|s| s.run.at_test_budget()),
        "the tests' fresh run is at the tests' budget"
    );
    let path = ws.write_trace("cpu", &trace);
    let marked = |chapter: &str| {
        let html = ws
            .build_chapter(&path, &format!("{chapter}\n\n{{{{provenance}}}}\n"))
            .expect("builds");
        provenance_box(&html).contains("Timed at the tests' budget")
    };
    assert!(marked("{{value tensor_operations_flops.actual_flop_per_sec}}"));
    assert!(marked("{{value gradients_flops.backward_time}}"));
    assert!(
        !marked("{{value tensor_operations_flops.total_flops}}"),
        "no clock, no mark"
    );
    let said = cs336::lecture::run::test_budget_warning(&trace).expect("a warning");
    assert!(
        said.contains("tensor_operations_flops")
            && said.contains("CS336_BUDGET=test")
            && !said.contains("tensors_memory"),
        "{said}"
    );
    // Recorded at the lecture's budget, the same trace has neither.
    let mut lecture = trace;
    for s in &mut lecture.sections {
        s.run.budget = None;
    }
    assert_eq!(cs336::lecture::run::test_budget_warning(&lecture), None);
    let path = ws.write_trace("cpu", &lecture);
    let html = ws
        .build_chapter(
            &path,
            "{{value tensor_operations_flops.actual_flop_per_sec}}\n\n{{provenance}}\n",
        )
        .expect("builds");
    assert!(!provenance_box(&html).contains("Timed at the tests' budget"));
}
