//! End to end: run the lecture in-process, build the repository's book from that trace into a
//! temporary folder, and read the HTML as a reader's browser would get it.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{ROOT, Workspace, fresh_trace};
use cs336::book::directive::{self, Directive};
use cs336::book::format::{Format, format_value};
use cs336::book::html::escape;
use cs336::trace::Trace;

/// The formatted text of a recorded value, as the book must show it.
fn formatted(trace: &Trace, section: &str, name: &str, format: Format) -> String {
    let record = trace
        .value(section, name)
        .unwrap_or_else(|| panic!("{section}.{name} recorded"));
    format_value(&record.value, record.unit, format).expect("formats")
}

fn pages(out: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(out)
        .expect("output folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "html") && p.file_name().is_some_and(|n| n != "print.html"))
        .map(|p| {
            (
                p.file_name().unwrap_or_default().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).expect("page"),
            )
        })
        .collect()
}

/// Page text with `<pre>…</pre>` blocks removed: code shown as code may contain `{{`.
fn outside_pre(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(start) = rest.find("<pre") {
        out.push_str(&rest[..start]);
        rest = rest[start..].find("</pre>").map_or("", |end| &rest[start + end + 6..]);
    }
    out.push_str(rest);
    out
}

/// Every chart's `<svg>…</svg>` element of a page: one drawing of each chart, and a line chart's
/// drawing for a phone's column beside its wide one (`chart/fit.rs`).
fn svgs(html: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg class=\"lecture-chart-svg") {
        let end = rest[start..].find("</svg>").expect("svg closed") + start + "</svg>".len();
        found.push(&rest[start..end]);
        rest = &rest[end..];
    }
    found
}

#[test]
fn the_book_shows_the_traces_values_code_and_charts() {
    let trace = fresh_trace().clone();
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", &trace);
    let index = ws.build_real_book(&path).expect("the book builds");
    assert!(index.ends_with("index.html") && index.is_file(), "{}", index.display());
    let pages = pages(&ws.out_dir());
    let page = |name: &str| pages.get(name).unwrap_or_else(|| panic!("page {name} built"));

    // The Reference shows the map of the code from the one file the crate's front page shows too
    // (`book/src/code_map.md`): mdBook's include is expanded, and paths only the map names are there.
    let reference = page("reference.html");
    assert!(
        !reference.contains("{{#include code_map.md}}"),
        "the map's include is left as written"
    );
    for path in ["src/lecture/recorder/record.rs", "src/book/chart/mod.rs"] {
        assert!(reference.contains(path), "the Reference's map lacks `{path}`");
    }

    // Values appear exactly as formatted from the trace.
    let memory = page("tensors_memory.html");
    for (name, format) in [
        ("gpt3_ffn_bytes", Format::Auto),
        ("gpt3_ffn_bytes", Format::Int),
        ("bf16_1e_8", Format::Auto),
        ("fp16_1e_8", Format::Auto),
    ] {
        let text = formatted(&trace, "tensors_memory", name, format);
        assert!(
            memory.contains(&format!(">{text}</span>")),
            "tensors_memory.{name} as {format}: `{text}` not on the page"
        );
    }
    assert_eq!(
        formatted(&trace, "tensors_memory", "gpt3_ffn_bytes", Format::Auto),
        "2.42 GB (2.25 GiB)"
    );
    let napkin = page("motivating_questions.html");
    for (name, format) in [
        ("total_flops", Format::Auto),
        ("days", Format::Fixed(0)),
        ("num_parameters", Format::Auto),
        ("h100_bytes", Format::Si(None)),
    ] {
        let text = formatted(&trace, "motivating_questions", name, format);
        assert!(
            napkin.contains(&format!(">{text}</span>")),
            "motivating_questions.{name}: `{text}` not on the page"
        );
    }
    // A recorded string (an error message with backticks) arrives as text, not as markdown.
    let error = formatted(&trace, "tensor_slicing", "view_error", Format::Auto);
    assert!(error.contains('`'), "{error}");
    assert!(page("tensor_slicing.html").contains(&format!(">{}</span>", escape(&error))));

    // No directive is left in any page, except where the book shows directives as code.
    for (name, html) in &pages {
        assert!(!outside_pre(html).contains("{{"), "{name} still holds directive text");
    }
    assert!(
        page("how_this_book_is_made.html").contains("{{value tensors_memory.gpt3_ffn_bytes}}"),
        "directives in code blocks stay as written"
    );

    // Code with values: the line that recorded `bytes` has its value beside it.
    let line = trace.value("tensors_memory", "bytes").expect("recorded").line;
    assert!(
        memory.contains(&format!(
            "<span class=\"lecture-ln\">{line}</span><code class=\"lang-rust"
        )),
        "line {line} shown"
    );
    let bytes = formatted(&trace, "tensors_memory", "bytes", Format::Auto);
    assert!(
        memory.contains(&format!(
            "<span class=\"lecture-lv-name\">bytes</span> = {bytes}</span>"
        )),
        "value beside code"
    );

    // Every chart a chapter asks for is on its page and is well-formed SVG with labelled axes.
    let src = Path::new(ROOT).join("book/src");
    let mut charts_seen = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&src).expect("book sources") {
        let path = entry.expect("entry").path();
        let markdown = std::fs::read_to_string(&path).expect("chapter");
        // Charts of the page's own trace; a `trace=gpu` chart stands in a branch kept only where
        // the folder has a GPU trace, which this book's folder has not.
        let ids: Vec<String> = directive::find(&markdown)
            .into_iter()
            .filter_map(|f| match f.parsed {
                Ok(Directive::Chart { id, trace: None }) => Some(id),
                _ => None,
            })
            .collect();
        let wanted = ids.len();
        if wanted == 0 {
            continue;
        }
        let html_name = format!("{}.html", path.file_stem().unwrap_or_default().to_string_lossy());
        let found = svgs(page(&html_name));
        let narrow = |svg: &str| {
            svg.split_once('>')
                .is_some_and(|(tag, _)| tag.contains("lecture-chart-narrow"))
        };
        let drawn = found.iter().filter(|svg| !narrow(svg)).count();
        let narrow_drawn = found.len() - drawn;
        assert_eq!(drawn, wanted, "{html_name}: {wanted} chart(s) asked for");
        assert!(
            narrow_drawn <= wanted,
            "{html_name}: one narrow drawing a chart at most"
        );
        for svg in found {
            let doc = roxmltree::Document::parse(svg)
                .unwrap_or_else(|e| panic!("{html_name}: chart is not well-formed SVG: {e}"));
            let root = doc.root_element();
            assert_eq!(root.tag_name().name(), "svg");
            assert_eq!(root.tag_name().namespace(), Some("http://www.w3.org/2000/svg"));
            assert!(
                root.attributes().any(|a| a.name().eq_ignore_ascii_case("viewbox")),
                "charts scale with the page"
            );
            let shapes = doc
                .descendants()
                .filter(|n| n.has_tag_name("rect") || n.has_tag_name("polyline") || n.has_tag_name("line"))
                .count();
            assert!(shapes > 5, "{html_name}: something is drawn");
            let texts: Vec<&str> = doc
                .descendants()
                .filter(|n| n.has_tag_name("text"))
                .filter_map(|n| n.text())
                .collect();
            let unit_labels = texts.iter().filter(|t| t.contains('(') && t.ends_with(')')).count();
            // A graph of boxes (autograd) has no axes: its legend says what the boxes are.
            let graph = root.attribute("aria-label").is_some_and(|l| l.contains("graph"));
            assert!(
                unit_labels >= 1 || (graph && texts.contains(&"parameter")),
                "{html_name}: an axis labelled with its unit, or a graph's legend: {texts:?}"
            );
            if html_name == "tensors_memory.html" {
                assert!(
                    texts.contains(&"float32") && texts.contains(&"bfloat16"),
                    "formats named: {texts:?}"
                );
            }
        }
        charts_seen.extend(ids);
    }
    // The CPU–GPU picture is drawn only from a GPU run (`a_gpu_run_draws_the_cpu_gpu_picture`). A
    // chart may be drawn in more than one chapter (the checkpointed step's graph is).
    let defined: std::collections::BTreeSet<String> = cs336::book::chart::CHARTS
        .iter()
        .filter(|c| c.id != "cpu_gpu")
        .map(|c| c.id.to_string())
        .collect();
    assert_eq!(charts_seen, defined, "every chart the book defines is drawn");

    // Provenance names the device and the commit.
    let commit: String = trace.sections[0]
        .run
        .git
        .commit
        .clone()
        .unwrap_or_default()
        .chars()
        .take(10)
        .collect();
    assert!(memory.contains("Where the numbers on this page come from"));
    assert!(memory.contains(&commit), "commit {commit} shown");
    // On a CPU trace the GPU chapter says so and shows the recorded reason.
    let reason = trace
        .value("tensors_on_gpus", "cuda_unavailable_reason")
        .expect("a CPU trace records why")
        .value
        .as_str()
        .expect("text")
        .to_string();
    let gpus = page("tensors_on_gpus.html");
    assert!(gpus.contains("This run was on a CPU"));
    assert!(gpus.contains(&escape(&reason)), "reason shown");
    assert!(!gpus.contains("What the GPU recorded"));
}

#[test]
fn changing_a_value_changes_the_page_and_renaming_one_fails_the_build() {
    let mut trace = fresh_trace().clone();
    let ws = Workspace::new();
    let section = trace
        .sections
        .iter_mut()
        .find(|s| s.id == "tensors_memory")
        .expect("section");
    section.values.get_mut("gpt3_ffn_bytes").expect("value").value = serde_json::json!(3 * 1024u64.pow(3));
    let path = ws.write_trace("cpu", &trace);
    ws.build_real_book(&path).expect("the book builds");
    let page = std::fs::read_to_string(ws.out_dir().join("tensors_memory.html")).expect("page");
    assert!(page.contains(">3.22 GB (3 GiB)</span>") && page.contains(">3,221,225,472 bytes</span>"));
    assert!(!page.contains("(2.25 GiB)</span>"));

    let section = trace
        .sections
        .iter_mut()
        .find(|s| s.id == "tensors_memory")
        .expect("section");
    let record = section.values.shift_remove("gpt3_ffn_bytes").expect("value");
    section.values.insert("gpt3_ffn_size".into(), record);
    for step in &mut section.steps {
        if step.0 == "gpt3_ffn_bytes" {
            step.0 = "gpt3_ffn_size".into();
        }
    }
    let path = ws.write_trace("cpu", &trace);
    let Err(cs336::book::BookError::Problems(problems)) = ws.build_real_book(&path) else {
        panic!("the build must fail")
    };
    assert!(!problems.is_empty());
    for p in &problems {
        assert!(p.to_string().contains("has no value `gpt3_ffn_bytes`"), "{p}");
    }
    assert!(problems.iter().any(|p| p.chapter.ends_with("tensors_memory.md")));
}

#[test]
fn a_gpu_run_draws_the_cpu_gpu_picture() {
    let mut gpu = fresh_trace().clone();
    gpu.provenance.device.slug = "nvidia-h200".into();
    gpu.provenance.device.name = "NVIDIA H200".into();
    gpu.provenance.device.kind = "cuda".into();
    gpu.provenance.device.memory_bytes = Some(150_109_880_320);
    let section = gpu
        .sections
        .iter_mut()
        .find(|s| s.id == "data_loading")
        .expect("section");
    let mut put = |name: &str, value: f64, unit: cs336::trace::Unit| {
        let mut record = section.values.values().next().expect("a value").clone();
        record.value = serde_json::json!(value);
        record.unit = unit;
        record.history.clear();
        section.values.insert(name.to_string(), record);
        section.steps.push((name.to_string(), 0));
    };
    put("h2d_pinned_bytes_per_sec", 55.4e9, cs336::trace::Unit::BytesPerSec);
    put("h2d_pageable_bytes_per_sec", 6.59e9, cs336::trace::Unit::BytesPerSec);
    let ws = Workspace::new();
    let path = ws.write_trace("nvidia-h200", &gpu);
    let html = ws.build_chapter(&path, "{{chart cpu_gpu}}\n").expect("builds");
    for drawn in [
        "NVIDIA H200",
        "memory: 150 GB (140 GiB)",
        "pinned: 55.4 GB/s",
        "pageable: 6.59 GB/s",
    ] {
        assert!(html.contains(drawn), "`{drawn}` in the picture: {html}");
    }
    // Without the host's memory recorded, the picture says so rather than guessing.
    assert!(html.contains("memory: not recorded by this run"));

    // A CPU run has no copy to a GPU to draw: the build names the missing value.
    let cpu = ws.write_trace("cpu", fresh_trace());
    let problems = ws
        .build_chapter(&cpu, "{{chart cpu_gpu}}\n")
        .expect_err("no GPU values");
    assert!(
        format!("{problems:?}").contains("h2d_pageable_bytes_per_sec"),
        "{problems:?}"
    );
}

#[test]
fn compare_shows_every_trace_with_its_device() {
    let trace = fresh_trace().clone();
    let ws = Workspace::new();
    let cpu = ws.write_trace("cpu", &trace);
    let mut other = trace.clone();
    other.provenance.device.slug = "nvidia-h200".into();
    other.provenance.device.name = "NVIDIA H200".into();
    other.provenance.device.kind = "cuda".into();
    let section = other
        .sections
        .iter_mut()
        .find(|s| s.id == "tensors_memory")
        .expect("section");
    section.values.get_mut("gpt3_ffn_bytes").expect("value").value = serde_json::json!(1024);
    ws.write_trace("nvidia-h200", &other);
    let html = ws
        .build_chapter(&cpu, "{{compare tensors_memory.gpt3_ffn_bytes}}\n")
        .expect("builds");
    let row = |slug: &str| {
        html.find(&format!("<td><code>{slug}</code></td>"))
            .unwrap_or_else(|| panic!("a row for {slug}"))
    };
    let cpu_row = row(&trace.provenance.device.slug);
    let gpu_row = html
        .find("<td><code>nvidia-h200</code></td><td>NVIDIA H200</td>")
        .expect("GPU row named");
    assert!(cpu_row < gpu_row, "the CPU first");
    assert!(html.contains(">2.42 GB (2.25 GiB)</span>") && html.contains(">1,024 bytes</span>"));

    // Another CPU's trace sits beside it, and CPU traces come first whatever their names.
    let mut laptop = trace.clone();
    laptop.provenance.device.slug = "zz-cpu-apple-m2".into();
    ws.write_trace("zz-cpu-apple-m2", &laptop);
    let html = ws
        .build_chapter(&cpu, "{{compare tensors_memory.gpt3_ffn_bytes}}\n")
        .expect("builds");
    let at = |slug: &str| html.find(&format!("<td><code>{slug}</code></td>")).expect("a row");
    assert!(at(&trace.provenance.device.slug) < at("zz-cpu-apple-m2"));
    assert!(at("zz-cpu-apple-m2") < at("nvidia-h200"), "CPU traces first");
}

#[test]
fn the_lecture_binary_builds_the_book_and_prints_where() {
    let ws = Workspace::new();
    let out_dir = ws.out_dir();
    let output = crate::common::process::at_test_budget(env!("CARGO_BIN_EXE_lecture"))
        .args(["--trace-dir", ws.dir.path().join("trace").to_str().expect("utf-8")])
        // mdbook's own override of `build-dir`, so the test does not write into the repository.
        .env("MDBOOK_BUILD__BUILD_DIR", &out_dir)
        .output()
        .expect("lecture runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let index = out_dir.join("index.html");
    assert_eq!(
        stdout.lines().last(),
        Some(format!("Book: {}", index.display()).as_str()),
        "{stdout}"
    );
    let page = std::fs::read_to_string(out_dir.join("tensors_memory.html")).expect("chapter built");
    let written = ws.trace_dir().join(format!(
        "{}.json",
        cs336::device::cpu::trace_name().expect("this CPU has a trace name")
    ));
    let trace = cs336::trace::load(&written).expect("the trace it wrote, named after the CPU");
    assert!(page.contains(&format!(
        ">{}</span>",
        formatted(&trace, "tensors_memory", "gpt3_ffn_bytes", Format::Int)
    )));
}

#[test]
fn pages_default_to_the_newest_trace_unless_told_otherwise() {
    use cs336::book::traces::{TraceChoice, Traces};
    let ws = Workspace::new();
    let recorded_at = |trace: &mut Trace, at: &str| {
        for s in &mut trace.sections {
            s.run.recorded_at = at.into();
        }
    };
    let mut older = fresh_trace().clone();
    recorded_at(&mut older, "2020-01-01T00:00:00Z");
    ws.write_trace("cpu", &older);
    let mut newer = fresh_trace().clone();
    recorded_at(&mut newer, "2030-01-01T00:00:00Z");
    ws.write_trace("nvidia-h200", &newer);
    let dir = ws.trace_dir();
    let root = Path::new(ROOT);

    assert_eq!(
        Traces::new(&dir, TraceChoice::parse("newest"), root).path(None),
        Ok(dir.join("nvidia-h200.json"))
    );
    assert_eq!(
        Traces::new(&dir, TraceChoice::parse("cpu"), root).path(None),
        Ok(dir.join("cpu.json"))
    );
    assert_eq!(
        TraceChoice::parse("../elsewhere/run.json"),
        TraceChoice::File("../elsewhere/run.json".into())
    );
    // The newest trace is the one whose newest section is newest: one section of the older trace
    // recorded again (`lecture --section`) after the other trace makes it the newest.
    older.sections[3].run.recorded_at = "2031-06-01T12:00:00Z".into();
    ws.write_trace("cpu", &older);
    assert_eq!(
        Traces::new(&dir, TraceChoice::parse("newest"), root).path(None),
        Ok(dir.join("cpu.json"))
    );
    // A newer trace holding fewer sections (`lecture --section ID` on a machine that had no
    // trace yet) does not hide the full ones: the build would fail on its missing sections.
    let mut partial = fresh_trace().clone();
    partial.sections.truncate(1);
    recorded_at(&mut partial, "2040-01-01T00:00:00Z");
    ws.write_trace("new-machine", &partial);
    assert_eq!(
        Traces::new(&dir, TraceChoice::parse("newest"), root).path(None),
        Ok(dir.join("cpu.json"))
    );
    // Of the complete traces a CPU's comes before a GPU's, however recent: the default is held to
    // the code, and only a CPU's can be recorded again where there is no GPU (CI).
    let mut gpu = fresh_trace().clone();
    // A GPU's device facts, from the committed H200 trace (a trace is checked to describe one device).
    let h200 = Path::new(ROOT).join("trace/lecture_02/nvidia-h200.json");
    let h200 = cs336::trace::load(&h200).expect("the committed H200 trace");
    gpu.provenance.device = h200.provenance.device;
    recorded_at(&mut gpu, "2050-01-01T00:00:00Z");
    ws.write_trace("nvidia-h200", &gpu);
    assert_eq!(
        Traces::new(&dir, TraceChoice::parse("newest"), root).path(None),
        Ok(dir.join("cpu.json"))
    );
    // A directive's own `trace=` wins over the default.
    assert_eq!(
        Traces::new(&dir, TraceChoice::Newest, root).path(Some("cpu")),
        Ok(dir.join("cpu.json"))
    );
    // No trace at all is a problem, not an empty page.
    let empty = tempfile::tempdir().expect("tempdir");
    assert!(matches!(
        Traces::new(empty.path(), TraceChoice::Newest, root).path(None),
        Err(cs336::book::Cause::NoTraces { .. })
    ));
}
