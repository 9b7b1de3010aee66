//! Where the book takes a section's code from (the file the trace names, inside the crate root
//! only), and how it treats a trace whose code has changed since: strictly for the default
//! trace, with a visible mark for another device's.

use crate::common;

use common::{Workspace, fresh_trace, only_problem};
use cs336::book::Cause;
use cs336::trace::Trace;

const MARK: &str = "recorded by older code (commit abcdef1)";

/// The fresh trace as another device's, with `tensors_memory` recorded by older code, and the
/// values only a GPU run records (the Devices chapter's GPU rows read them) made up from others.
fn stale_gpu_trace() -> Trace {
    let mut gpu = fresh_trace().clone();
    gpu.provenance.device.slug = "nvidia-h200".into();
    gpu.provenance.device.name = "NVIDIA H200".into();
    gpu.provenance.device.kind = "cuda".into();
    for (section, name, like) in [
        ("tensors_on_gpus", "memory_used", "expected_bytes"),
        ("data_loading", "h2d_pinned_bytes_per_sec", "llama_data_bytes"),
        ("data_loading", "h2d_pageable_bytes_per_sec", "llama_data_bytes"),
    ] {
        let s = gpu.sections.iter_mut().find(|s| s.id == section).expect("section");
        let value = s.values.get(like).expect("a value to copy").clone();
        s.values.insert(name.to_string(), value);
        s.steps.push((name.to_string(), 0));
    }
    let section = gpu
        .sections
        .iter_mut()
        .find(|s| s.id == "tensors_memory")
        .expect("section");
    section.source_hash = "0".repeat(64);
    section.run.git.commit = Some("abcdef1234567890".into());
    gpu
}

fn body(html: &str) -> &str {
    let start = html.find("<main>").expect("page body");
    &html[start..start + html[start..].find("</main>").expect("page body ends")]
}

#[test]
fn another_devices_stale_section_is_shown_with_a_mark() {
    let ws = Workspace::new();
    let cpu = ws.write_trace("cpu", fresh_trace());
    ws.write_trace("nvidia-h200", &stale_gpu_trace());
    let chapter = "GPU: {{value tensors_memory.bytes trace=nvidia-h200}}\n\n\
                   {{compare tensors_memory.bytes}}\n\n\
                   {{code tensors_memory trace=nvidia-h200}}\n\n\
                   {{chart float_ranges trace=nvidia-h200}}\n\n\
                   CPU: {{value tensors_memory.bytes}}\n";
    let html = ws
        .build_chapter(&cpu, chapter)
        .expect("another device's stale trace does not fail the build");
    let body = body(&html);
    // Beside the value, in the GPU's row of the comparison, on the code and under the chart.
    assert_eq!(body.matches(MARK).count(), 4, "{body}");
    assert!(
        body.contains("GPU: <span class=\"lecture-value lecture-computed\""),
        "{body}"
    );
    // The CPU's own values carry no mark.
    let cpu_slug = &fresh_trace().provenance.device.slug;
    let cpu_row = body
        .find(&format!("<td><code>{cpu_slug}</code></td>"))
        .expect("cpu row");
    let gpu_row = body.find("<td><code>nvidia-h200</code></td>").expect("gpu row");
    assert!(!body[cpu_row..gpu_row].contains("older code"), "{body}");
    // The paragraph the chapter wrote, not the words "CPU: " where a code view quotes them.
    let cpu_value = body.rfind("<p>CPU: ").expect("cpu value");
    assert!(!body[cpu_value..].contains("older code"), "{body}");
}

#[test]
fn the_default_traces_stale_section_still_fails_even_beside_another_device() {
    let ws = Workspace::new();
    let mut stale_cpu = fresh_trace().clone();
    let section = stale_cpu
        .sections
        .iter_mut()
        .find(|s| s.id == "tensors_memory")
        .expect("section");
    section.source_hash = "0".repeat(64);
    let cpu = ws.write_trace("cpu", &stale_cpu);
    ws.write_trace("nvidia-h200", fresh_trace());
    for chapter in [
        "{{value tensors_memory.bytes}}\n",
        "{{value tensors_memory.bytes trace=cpu}}\n",
        "{{compare tensors_memory.bytes}}\n",
    ] {
        let p = only_problem(ws.build_chapter(&cpu, chapter));
        assert!(matches!(p.cause, Cause::Stale { .. }), "{chapter}: {p}");
    }
    // The default decides: with the GPU's trace as the default, the GPU's is held strictly.
    let gpu = ws.write_trace("nvidia-h200", &stale_gpu_trace());
    let p = only_problem(ws.build_chapter(&gpu, "{{value tensors_memory.bytes}}\n"));
    assert!(matches!(p.cause, Cause::Stale { .. }), "{p}");
}

#[test]
fn another_devices_section_that_moved_away_is_shown_without_its_code() {
    let ws = Workspace::new();
    let cpu = ws.write_trace("cpu", fresh_trace());
    let mut gpu = stale_gpu_trace();
    let section = gpu
        .sections
        .iter_mut()
        .find(|s| s.id == "tensors_memory")
        .expect("section");
    section.source_file = "src/lecture/gone.rs".into();
    ws.write_trace("nvidia-h200", &gpu);
    let html = ws
        .build_chapter(
            &cpu,
            "{{value tensors_memory.bytes trace=nvidia-h200}}\n\n{{code tensors_memory trace=nvidia-h200}}\n",
        )
        .expect("builds");
    let body = body(&html);
    assert_eq!(body.matches(MARK).count(), 2, "{body}");
    assert!(
        body.contains("no longer holds this function") && body.contains("Recorded values: "),
        "{body}"
    );

    // The same for the default trace fails and says what to run.
    let mut moved = fresh_trace().clone();
    let section = moved
        .sections
        .iter_mut()
        .find(|s| s.id == "tensors_memory")
        .expect("section");
    section.source_file = "src/lecture/gone.rs".into();
    let path = ws.write_trace("cpu", &moved);
    let p = only_problem(ws.build_chapter(&path, "{{value tensors_memory.bytes}}\n"));
    assert!(matches!(p.cause, Cause::Source { .. }), "{p}");
    let text = p.to_string();
    assert!(
        text.contains(
            "cpu.json says section `tensors_memory` is in `src/lecture/gone.rs`, but the file cannot be read"
        ) && text.contains("run `cargo run --release --bin lecture -- --section tensors_memory`"),
        "{text}"
    );
}

#[test]
fn a_function_missing_from_its_file_fails_and_says_what_to_run() {
    let ws = Workspace::new();
    let mut trace = fresh_trace().clone();
    let section = trace
        .sections
        .iter_mut()
        .find(|s| s.id == "tensors_memory")
        .expect("section");
    section.source_file = "src/lecture/sections/motivating_questions.rs".into();
    let path = ws.write_trace("cpu", &trace);
    let p = only_problem(ws.build_chapter(&path, "{{value tensors_memory.bytes}}\n"));
    assert!(matches!(p.cause, Cause::Source { .. }), "{p}");
    let text = p.to_string();
    assert!(
        text.contains("no top-level function `tensors_memory`")
            && text.contains("run `cargo run --release --bin lecture -- --section tensors_memory`"),
        "{text}"
    );
}

#[test]
fn a_source_file_outside_the_crate_root_is_refused_for_every_trace() {
    let ws = Workspace::new();
    let outside = ws.dir.path().join("outside.rs");
    std::fs::write(&outside, "pub fn tensors_memory() {}\n").expect("write");
    let absolute = outside.to_str().expect("utf-8").to_string();
    for (named, why) in [
        ("../../../../../../../../etc/passwd", "`..`"),
        ("src/../../outside.rs", "`..`"),
        (absolute.as_str(), "absolute"),
    ] {
        for slug in ["cpu", "nvidia-h200"] {
            let mut trace = if slug == "cpu" {
                fresh_trace().clone()
            } else {
                stale_gpu_trace()
            };
            let section = trace
                .sections
                .iter_mut()
                .find(|s| s.id == "tensors_memory")
                .expect("section");
            section.source_file = named.to_string();
            let default = ws.write_trace("cpu", fresh_trace());
            ws.write_trace(slug, &trace);
            let p =
                only_problem(ws.build_chapter(&default, &format!("{{{{value tensors_memory.bytes trace={slug}}}}}\n")));
            assert!(matches!(p.cause, Cause::SourcePath { .. }), "{named} in {slug}: {p}");
            let text = p.to_string();
            assert!(
                text.contains(&format!("{slug}.json names `{named}`")) && text.contains(why),
                "{text}"
            );
        }
    }
}

/// The stale GPU trace with values its older run never recorded: one value of a stale section and
/// a whole section.
fn older_gpu_trace() -> Trace {
    let mut gpu = stale_gpu_trace();
    let section = gpu
        .sections
        .iter_mut()
        .find(|s| s.id == "tensors_memory")
        .expect("section");
    section.values.shift_remove("bytes");
    section.steps.retain(|(name, _)| name != "bytes");
    gpu.sections.retain(|s| s.id != "tensor_storage");
    gpu
}

#[test]
fn values_an_older_run_never_recorded_show_as_such_and_claims_on_them_take_no_branch() {
    let ws = Workspace::new();
    let cpu = ws.write_trace("cpu", fresh_trace());
    ws.write_trace("nvidia-h200", &older_gpu_trace());
    let chapter = "GPU bytes: {{value tensors_memory.bytes trace=gpu}}.\n\n\
                   GPU shape: {{value tensor_storage.shape trace=gpu}}.\n\n\
                   {{compare tensors_memory.bytes}}\n\n\
                   Verdict: {{if tensors_memory.bytes > 1 trace=gpu}}BIG{{else}}SMALL{{end}}.\n\n\
                   {{assert tensors_memory.bytes == 0 trace=gpu}}\n\n\
                   On {{device tensors_memory trace=gpu}}.\n\n\
                   {{provenance}}\n";
    let html = ws
        .build_chapter(&cpu, chapter)
        .expect("an older trace's gaps do not fail the build");
    let body = body(&html);
    let placeholder = "not recorded by the run of commit ";
    // The value of a stale section, a missing section, and the GPU's cell of the comparison.
    assert_eq!(body.matches(placeholder).count(), 3, "{body}");
    // The claim took neither branch, and said why; the assert was not checked (it would fail).
    assert!(!body.contains("BIG") && !body.contains("SMALL"), "{body}");
    assert!(body.contains("a passage here depends on <code>"), "{body}");
    // Listed once, before the provenance box, each key once.
    let list = body.find("lecture-unrecorded-list").expect("the page's list");
    assert!(
        list < body.find("lecture-provenance").expect("provenance box"),
        "{body}"
    );
    assert_eq!(
        body[list..].matches("<code>tensors_memory.bytes</code>").count(),
        1,
        "{body}"
    );
    assert!(body[list..].contains("<code>tensor_storage</code>"), "{body}");
    // The device tag names the device and day, with the older-code mark.
    assert!(body.contains("NVIDIA H200, "), "{body}");
    assert!(body.contains(MARK), "{body}");

    // In the trace held to the code the same gap is the chapter's fault: the build fails.
    let mut own = fresh_trace().clone();
    own.sections.retain(|s| s.id != "tensor_storage");
    let own = ws.write_trace("cpu", &own);
    let p = only_problem(ws.build_chapter(&own, "{{value tensor_storage.shape}}\n"));
    assert!(matches!(p.cause, Cause::MissingSection { .. }), "{p}");
    // As it is in another trace's section that the current code recorded.
    let mut current_gpu = fresh_trace().clone();
    current_gpu.provenance.device.slug = "nvidia-h200".into();
    current_gpu.provenance.device.name = "NVIDIA H200".into();
    current_gpu.provenance.device.kind = "cuda".into();
    ws.write_trace("nvidia-h200", &current_gpu);
    let cpu = ws.write_trace("cpu", fresh_trace());
    let p = only_problem(ws.build_chapter(&cpu, "{{value tensors_memory.no_such_value trace=gpu}}\n"));
    assert!(matches!(p.cause, Cause::MissingValue { .. }), "{p}");
}

#[test]
fn trace_gpu_is_the_newest_other_gpu_trace_and_has_is_false_without_one() {
    let ws = Workspace::new();
    let cpu = ws.write_trace("cpu", fresh_trace());
    let chapter = "{{if has tensors_memory.bytes trace=gpu}}GPU THERE{{else}}NO GPU TRACE{{end}}\n";
    let html = ws.build_chapter(&cpu, chapter).expect("builds without a GPU trace");
    assert!(body(&html).contains("NO GPU TRACE"), "{html}");
    // Anything else that needs it fails, naming what to do.
    let p = only_problem(ws.build_chapter(&cpu, "{{value tensors_memory.bytes trace=gpu}}\n"));
    assert!(matches!(p.cause, Cause::NoGpuTrace { .. }), "{p}");
    ws.write_trace("nvidia-h200", &stale_gpu_trace());
    let html = ws.build_chapter(&cpu, chapter).expect("builds");
    assert!(body(&html).contains("GPU THERE"), "{html}");
    // With the GPU's trace as the page default, `trace=gpu` names no other.
    let gpu = ws.trace_dir().join("nvidia-h200.json");
    let html = ws.build_chapter(&gpu, chapter).expect("builds");
    assert!(body(&html).contains("NO GPU TRACE"), "{html}");
}

#[test]
fn the_devices_table_has_a_column_per_trace_and_decides_its_verdict_from_them() {
    let ws = Workspace::new();
    let cpu = ws.write_trace("cpu", fresh_trace());
    let mut gpu = stale_gpu_trace();
    let flops = gpu
        .sections
        .iter_mut()
        .find(|s| s.id == "tensor_operations_flops")
        .expect("section");
    // An older run worded a row differently: it stays one row, under the newer run's words.
    let row = flops.devices.first_mut().expect("a Devices row");
    let label = row.label.clone();
    row.label = "an older wording of the same row".into();
    flops.run.recorded_at = "2026-01-01T00:00:00Z".into();
    let fp32 = cs336::trace::number_from_json(&flops.values["actual_flop_per_sec"].value).expect("fp32 rate");
    flops
        .values
        .get_mut("bf16_actual_flop_per_sec")
        .expect("bf16 rate")
        .value = serde_json::json!(fp32 * 10.0);
    ws.write_trace("nvidia-h200", &gpu);
    let first = ws.build_chapter(&cpu, "{{devices}}\n").expect("builds");
    let page = body(&first);
    assert!(page.contains("<code>nvidia-h200</code>"), "{page}");
    assert!(
        page.contains(&format!("<code>{}</code>", fresh_trace().provenance.device.slug)),
        "{page}"
    );
    assert!(page.contains("10.00×"), "{page}");
    assert!(!page.contains("an older wording"), "{page}");
    let label_cell = format!("<tr><th>{label}</th>");
    assert_eq!(page.matches(&label_cell).count(), 1, "{label_cell} in {page}");
    assert!(page.contains("no GPU"), "the CPU's allocator cell: {page}");
    // The trace just written is the reader's machine: its column comes first, and says so.
    let first_column = page.split("<th>").nth(2).expect("a first device column");
    assert!(
        first_column.starts_with("<strong>this machine</strong>"),
        "{first_column}"
    );
    assert!(
        first_column.contains(&format!("<code>{}</code>", fresh_trace().provenance.device.slug)),
        "{first_column}"
    );
    // One column heads as this machine (a device value's hover says "this machine decided it").
    assert_eq!(page.matches("<strong>this machine</strong>").count(), 1, "{page}");
    let older = format!(
        "of {} sections recorded by older code (commit abcdef1)",
        cs336::lecture::SECTIONS.len()
    );
    assert!(page.contains(&older), "{page}");
    assert!(page.contains("<svg"), "the chart: {page}");
    let fresh = fresh_trace();
    let ratio = |t: &Trace| {
        let s = t.section("tensor_operations_flops").expect("section");
        let n = |k: &str| cs336::trace::number_from_json(&s.values[k].value).expect("rate");
        n("bf16_actual_flop_per_sec") / n("actual_flop_per_sec")
    };
    // The verdict follows the numbers: a split when this CPU's bf16 does not pay, else none.
    if ratio(fresh) > 1.25 {
        assert!(page.contains("on every device here"), "{page}");
    } else {
        assert!(page.contains("depends on the hardware"), "{page}");
    }
    let mut slow = gpu.clone();
    let flops = slow
        .sections
        .iter_mut()
        .find(|s| s.id == "tensor_operations_flops")
        .expect("section");
    flops
        .values
        .get_mut("bf16_actual_flop_per_sec")
        .expect("bf16 rate")
        .value = serde_json::json!(fp32 * 0.5);
    for (name, peak) in [
        ("bf16_peak_flop_per_sec", 989.5e12),
        ("bf16_unit_flop_per_sec", 989.5e12),
        ("peak_flop_per_sec", 67e12),
    ] {
        flops.values.get_mut(name).expect("a peak").value = serde_json::json!(peak);
    }
    // A GPU's tensor cores take bfloat16 as it is: nothing widened (this copy of a CPU's run
    // recorded its route).
    for (name, is) in [("bf16_widened", false), ("bf16_has_instruction", true)] {
        if let Some(v) = flops.values.get_mut(name) {
            v.value = serde_json::json!(is);
        }
    }
    ws.write_trace("nvidia-h200", &slow);
    let html = ws.build_chapter(&cpu, "{{devices}}\n").expect("builds");
    assert!(body(&html).contains("0.50×"), "{html}");
    // A device where bfloat16 did not pay is given its own cause: the H200's datasheet peaks put
    // bfloat16 far above float32, so it is the product that fell short, not the unit.
    assert!(
        body(&html).contains("on the NVIDIA H200, the bfloat16 peak (989.5 TFLOP/s) is above the float32 one"),
        "{html}"
    );
    if ratio(fresh) <= 1.25 {
        assert!(body(&html).contains("on any device here"), "{html}");
    } else {
        assert!(body(&html).contains("depends on the hardware"), "{html}");
    }
}

#[test]
fn the_devices_chapter_shows_each_benchmark_table_with_ratios_from_its_medians() {
    let ws = Workspace::new();
    let cpu = ws.write_trace("cpu", fresh_trace());
    // Without a bench folder, nothing is added.
    let plain = ws.build_chapter(&cpu, "{{devices}}\n").expect("builds");
    assert!(!plain.contains("ours / numpy"));

    let bench = ws.dir.path().join("trace/bench");
    std::fs::create_dir_all(&bench).expect("bench folder");
    let row = |f32_s: f64, np_s: f64| {
        serde_json::json!({"shape": "256³", "m": 256, "k": 256, "n": 256,
            "our f32": {"timing": {"median_s": f32_s}}, "np f32": {"timing": {"median_s": np_s}},
            "our bf16": {"timing": {"median_s": f32_s / 2.0}}})
    };
    let table = serde_json::json!({"threads": 2, "bf16_isa": "avx512_bf16", "cpu_model": "Some Chip",
        "trace_name": "cpu-some", "recorded_at": "2026-12-02T00:00:00Z", "rows": [row(1e-4, 2e-4)]});
    std::fs::write(bench.join("cpu-some.json"), table.to_string()).expect("table");
    let html = ws.build_chapter(&cpu, "{{devices}}\n").expect("builds");
    // 2·256³ FLOP in 0.1 ms is 335.5 GFLOP/s; numpy took twice as long.
    for expect in [
        "<strong title=\"cpu-some\">The Some Chip</strong>",
        "<td>335.5</td><td>167.8</td><td>2.00×</td>",
        "<td>671.1</td><td>not timed</td><td>–</td>",
    ] {
        assert!(html.contains(expect), "`{expect}` in the table");
    }
    std::fs::write(bench.join("cpu-some.json"), "{ not json").expect("broken");
    let problems = ws
        .build_chapter(&cpu, "{{devices}}\n")
        .expect_err("a broken table fails the build");
    assert!(format!("{problems:?}").contains("cpu-some.json"), "{problems:?}");
}

/// `bench elementwise --json` tables (`kind: "elementwise"`) sit in the same folder as the matmul
/// ones: the chapter shows both kinds, each with its own columns, from the sizes and medians held.
#[test]
fn the_devices_chapter_shows_elementwise_tables_beside_the_matmul_ones() {
    let ws = Workspace::new();
    let cpu = ws.write_trace("cpu", fresh_trace());
    let bench = ws.dir.path().join("trace/bench");
    std::fs::create_dir_all(&bench).expect("bench folder");
    let matmul = serde_json::json!({"threads": 2, "bf16_isa": "avx512_bf16", "cpu_model": "Some Chip",
        "trace_name": "cpu-some", "recorded_at": "2026-12-02T00:00:00Z", "rows": [
            {"shape": "256³", "m": 256, "k": 256, "n": 256, "our f32": {"timing": {"median_s": 1e-4}}}]});
    std::fs::write(bench.join("cpu-some.json"), matmul.to_string()).expect("matmul table");
    let timing = |s: f64| serde_json::json!({"timing": {"median_s": s, "q1_s": s, "q3_s": s}});
    // 1 MB in 0.1 ms is 10 GB/s; the copy moved as much in half the time; PyTorch took 0.2 ms.
    let relu = serde_json::json!({"op": "relu", "dtype": "float32", "level": "L2", "n": 125000,
        "bytes": 1_000_000, "flops": 125000, "ours": timing(1e-4),
        "baseline": {"kind": "copy", "bytes": 1_000_000, "timing": {"median_s": 5e-5}},
        "torch": timing(2e-4), "numpy": null});
    let sum = serde_json::json!({"op": "sum", "dtype": "bfloat16", "level": "DRAM", "n": 1,
        "bytes": 4_000_000, "ours": timing(1e-3),
        "baseline": {"kind": "read", "bytes": 4_000_000, "timing": {"median_s": 1e-3}}, "torch": null});
    let elementwise = serde_json::json!({"kind": "elementwise", "threads": 2, "cpu_model": "Some Chip",
        "trace_name": "cpu-some", "recorded_at": "2026-12-03T00:00:00Z", "rows": [relu, sum]});
    std::fs::write(bench.join("cpu-some-elementwise.json"), elementwise.to_string()).expect("table");
    let html = ws.build_chapter(&cpu, "{{devices}}\n").expect("builds");
    for expect in [
        "<th>ours / numpy</th>",
        "<td>335.5</td>",
        "<th>our GB/s</th><th>of our baseline</th><th>ours / PyTorch</th>",
        "<tr><th>relu float32</th><td>L2</td><td>10.0</td><td>50 % of a copy</td><td>2.00×</td></tr>",
        "<tr><th>sum bfloat16</th><td>DRAM</td><td>4.0</td><td>100 % of a read</td><td>–</td></tr>",
    ] {
        assert!(html.contains(expect), "`{expect}` in the chapter");
    }
    // A kind the chapter does not know fails the build with the file named.
    let unknown = serde_json::json!({"kind": "fft", "rows": []});
    std::fs::write(bench.join("cpu-some-elementwise.json"), unknown.to_string()).expect("table");
    let problems = ws
        .build_chapter(&cpu, "{{devices}}\n")
        .expect_err("an unknown kind fails the build");
    let problems = format!("{problems:?}");
    assert!(
        problems.contains("cpu-some-elementwise.json") && problems.contains("fft"),
        "{problems}"
    );
}

/// A row the newest run declares and an older trace does not stands among its section's rows,
/// in the newest run's order, not at the end of the table (rows came in file order, older
/// traces first, so a row added since sat below every other section's).
#[test]
fn a_row_newer_than_an_older_trace_stands_in_its_sections_place() {
    let ws = Workspace::new();
    let mut old = fresh_trace().clone();
    let flops = old
        .sections
        .iter_mut()
        .find(|s| s.id == "tensor_operations_flops")
        .expect("section");
    let newest_row = flops.devices.remove(1);
    for section in &mut old.sections {
        section.run.recorded_at = "2026-01-01T00:00:00Z".into();
    }
    // The older trace is the page's own, so its column, and its rows, come first.
    let older = ws.write_trace("older-cpu", &old);
    ws.write_trace("cpu", fresh_trace());
    let html = ws.build_chapter(&older, "{{devices}}\n").expect("builds");
    let page = body(&html);
    let at = |label: &str| {
        page.find(&format!("<tr><th>{label}</th>"))
            .unwrap_or_else(|| panic!("no row {label:?} in {page}"))
    };
    let rows = &fresh_trace()
        .section("tensor_operations_flops")
        .expect("section")
        .devices;
    let (before, after) = (&rows[0].label, &rows[2].label);
    assert!(
        at(before) < at(&newest_row.label) && at(&newest_row.label) < at(after),
        "{page}"
    );
    let later_section = "the whole lecture, every section";
    assert!(at(&newest_row.label) < at(later_section));
}
