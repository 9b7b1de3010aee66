//! Where the book takes a section's code from (the file the trace names, inside the crate root
//! only), and how it treats a trace whose code has changed since: strictly for the default
//! trace, with a visible mark for another device's.

mod common;

use common::{Workspace, fresh_trace, only_problem};
use cs336::book::Cause;
use cs336::trace::Trace;

const MARK: &str = "recorded by older code (commit abcdef1)";

/// The fresh trace as another device's, with `tensors_memory` recorded by older code.
fn stale_gpu_trace() -> Trace {
    let mut gpu = fresh_trace().clone();
    gpu.provenance.device.slug = "nvidia-h200".into();
    gpu.provenance.device.name = "NVIDIA H200".into();
    gpu.provenance.device.kind = "cuda".into();
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
    assert!(body.contains("GPU: <span class=\"lecture-value\""), "{body}");
    // The CPU's own values carry no mark.
    let cpu_slug = &fresh_trace().provenance.device.slug;
    let cpu_row = body
        .find(&format!("<td><code>{cpu_slug}</code></td>"))
        .expect("cpu row");
    let gpu_row = body.find("<td><code>nvidia-h200</code></td>").expect("gpu row");
    assert!(!body[cpu_row..gpu_row].contains("older code"), "{body}");
    let cpu_value = body.find("CPU: ").expect("cpu value");
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
    section.source_file = "src/lecture/napkin.rs".into();
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
