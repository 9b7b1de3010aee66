//! The book refuses to build rather than show a blank, a stale number or an unescaped string.

use crate::common;

use common::{Workspace, fresh_trace, only_problem};
use cs336::book::Cause;

#[test]
fn a_script_in_a_trace_string_renders_inert() {
    let mut trace = fresh_trace().clone();
    let section = trace
        .sections
        .iter_mut()
        .find(|s| s.id == "tensor_slicing")
        .expect("section");
    let script = "<script>alert('x')</script> *not emphasis* [not](a-link)";
    section.values.get_mut("view_error").expect("value").value = serde_json::json!(script);
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", &trace);
    let html = ws
        .build_chapter(&path, "Message: {{value tensor_slicing.view_error}}\n\n{{code tensor_slicing}}\n\n{{compare tensor_slicing.view_error}}\n")
        .expect("builds");
    let start = html.find("<main>").expect("page body");
    let body = &html[start..start + html[start..].find("</main>").expect("page body ends")];
    // The one script element a page may hold is a code view's data for the stepping script: JSON
    // in which no `<` can close it or open another element.
    const DATA: &str = "<script type=\"application/json\" class=\"lecture-steps-data\">";
    let mut rest = body.to_string();
    let mut data = 0;
    while let Some(at) = rest.find(DATA) {
        let len = rest[at + DATA.len()..]
            .find("</script>")
            .expect("the data element closes");
        let json = &rest[at + DATA.len()..at + DATA.len() + len];
        assert!(!json.contains('<') && json.contains("\\u003cscript"), "{json}");
        rest.replace_range(at..at + DATA.len() + len + "</script>".len(), "");
        data += 1;
    }
    assert_eq!(data, 1, "the code view carries its steps");
    assert!(!rest.contains("<script"), "a script tag reached the page");
    // In prose, beside the code (text and tooltip) and in the comparison.
    assert!(body.matches("&lt;script&gt;alert(").count() >= 3, "{body}");
    assert!(!html.contains("<em>not emphasis</em>") && html.contains("*not emphasis*"));
    assert!(!html.contains("<a href=\"a-link\""));
}

#[test]
fn directives_in_code_are_left_alone() {
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", fresh_trace());
    let html = ws
        .build_chapter(
            &path,
            "Inline `{{value nope.nope}}`.\n\n```text\n{{code nope}}\n```\n\nValue: {{value tensor_storage.index}}.\n",
        )
        .expect("builds: code is not read for directives");
    assert!(html.contains("{{value nope.nope}}") && html.contains("{{code nope}}"));
    assert!(html.contains(">6</span>"));
}

#[test]
fn a_missing_trace_fails_with_its_path() {
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", fresh_trace());
    let p = only_problem(ws.build_chapter(&path, "x {{value tensors_memory.bytes trace=nvidia-h999}}\n"));
    assert!(matches!(p.cause, Cause::MissingTrace { .. }), "{p}");
    let text = p.to_string();
    assert!(
        text.starts_with("src/chapter.md:1: `{{value tensors_memory.bytes trace=nvidia-h999}}`: no trace file "),
        "{text}"
    );
    assert!(
        text.contains("nvidia-h999.json") && text.contains("cargo run --release --bin lecture"),
        "{text}"
    );
}

#[test]
fn a_missing_section_fails_and_says_what_to_run() {
    let mut trace = fresh_trace().clone();
    trace.sections.retain(|s| s.id != "tensor_matmul");
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", &trace);
    let p = only_problem(ws.build_chapter(&path, "\n\n{{value tensor_matmul.y_0_0}}\n"));
    assert!(matches!(p.cause, Cause::MissingSection { .. }), "{p}");
    assert_eq!(p.line, 3);
    let text = p.to_string();
    assert!(text.contains("has no section `tensor_matmul`"), "{text}");
    assert!(
        text.contains("cargo run --release --bin lecture -- --section tensor_matmul"),
        "{text}"
    );

    // The book knows only the trace: a section it lacks is named with the sections it has.
    let p = only_problem(ws.build_chapter(&path, "{{value no_such_section.x}}\n"));
    assert!(matches!(p.cause, Cause::MissingSection { .. }), "{p}");
    let text = p.to_string();
    let first = format!(
        "has no section `no_such_section` (it has: {}, {},",
        trace.sections[0].id, trace.sections[1].id
    );
    assert!(text.contains(&first), "{text}");
    assert!(text.contains("`cargo run --release --bin lecture -- --list`"), "{text}");
}

#[test]
fn a_missing_value_fails_naming_it_and_what_exists() {
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", fresh_trace());
    let p = only_problem(ws.build_chapter(&path, "{{value tensors_memory.bytez}}\n"));
    let text = p.to_string();
    assert!(matches!(p.cause, Cause::MissingValue { .. }), "{p}");
    assert!(
        text.contains("section `tensors_memory` has no value `bytez`") && text.contains("numel, element_size, bytes"),
        "{text}"
    );

    let p = only_problem(ws.build_chapter(&path, "{{value tensors_memory.fp8_e4m3_info.maxx}}\n"));
    let text = p.to_string();
    assert!(matches!(p.cause, Cause::MissingPath { .. }), "{p}");
    assert!(text.contains("nothing at `maxx`") && text.contains("max"), "{text}");

    let p = only_problem(ws.build_chapter(&path, "{{value tensor_slicing.row_0.7}}\n"));
    assert!(p.to_string().contains("a list of 3 item(s)"), "{p}");
}

#[test]
fn a_stale_section_fails_and_says_what_to_run() {
    let mut trace = fresh_trace().clone();
    let section = trace
        .sections
        .iter_mut()
        .find(|s| s.id == "tensors_memory")
        .expect("section");
    section.source_hash = "0".repeat(64);
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", &trace);
    for chapter in [
        "{{value tensors_memory.bytes}}\n",
        "{{code tensors_memory}}\n",
        "{{chart float_ranges}}\n",
        "{{compare tensors_memory.bytes}}\n",
    ] {
        let p = only_problem(ws.build_chapter(&path, chapter));
        assert!(matches!(p.cause, Cause::Stale { .. }), "{chapter}: {p}");
        let text = p.to_string();
        assert!(text.contains("section `tensors_memory` changed since trace"), "{text}");
        assert!(
            text.contains(
                "run `cargo run --release --bin lecture -- --section tensors_memory` on the device that wrote it"
            ),
            "{text}"
        );
    }
}

#[test]
fn malformed_directives_fail_with_the_reason() {
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", fresh_trace());
    let cases = [
        ("{{valeu tensors_memory.bytes}}\n", "unknown directive `valeu`"),
        ("{{value tensors_memory.bytes\n", "not closed by `}}`"),
        ("See {{code tensors_memory}} here.\n", "must stand alone on its line"),
        ("{{value tensors_memory.bytes format=kilo}}\n", "unknown format `kilo`"),
        ("{{value tensors_memory.dtype format=sci}}\n", "needs a number"),
        ("{{chart no_such_chart}}\n", "unknown chart `no_such_chart`"),
        ("{{if tensors_on_gpus.cuda_available}}\ntext\n", "never closed"),
        ("{{end}}\n", "without an open"),
        ("{{if tensors_memory.bytes}}\nx\n{{end}}\n", "needs true or false"),
    ];
    for (chapter, expected) in cases {
        let p = only_problem(ws.build_chapter(&path, chapter));
        let text = p.to_string();
        assert!(text.contains(expected), "{chapter:?} gave: {text}");
        assert!(text.contains("fix: "), "{text}");
    }
}

#[test]
fn every_problem_in_a_chapter_is_reported_at_once() {
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", fresh_trace());
    let problems = ws
        .build_chapter(&path, "{{value a.b}}\n{{value tensors_memory.nope}}\n{{bogus}}\n")
        .expect_err("fails");
    let lines: Vec<usize> = problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, [1, 2, 3]);
}

#[test]
fn branches_keep_only_the_lines_that_hold() {
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", fresh_trace());
    let chapter = "A\n{{if tensors_on_gpus.cuda_available}}\nGPU {{value tensors_on_gpus.memory_used}}\n{{else}}\nCPU {{value tensors_on_gpus.x_device}}\n{{end}}\n\
                   {{if has tensors_on_gpus.memory_used}}\nhas\n{{end}}\n{{if not tensors_on_gpus.cuda_available}}\nnot\n{{end}}\nZ\n";
    let html = ws
        .build_chapter(&path, chapter)
        .expect("builds: the GPU branch is not evaluated on a CPU trace");
    let start = html.find("<main>").expect("page body");
    let body = &html[start..start + html[start..].find("</main>").expect("page body ends")];
    // The directive lines and the untaken branches are gone; the rest joins into one paragraph.
    assert!(
        body.contains("<p>A\nCPU <span") && body.contains(">cpu</span>\nnot\nZ</p>"),
        "{body}"
    );
    assert!(!body.contains("GPU") && !body.contains("has"), "{body}");
}

#[test]
fn a_value_where_markup_cannot_hold_it_is_an_error() {
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", fresh_trace());
    let cases = [
        (
            "[the size](https://example.com/{{value tensors_memory.bytes}})\n",
            "link",
        ),
        ("[the size]({{value tensors_memory.bytes}})\n", "link"),
        ("![plot](img/{{value tensors_memory.bytes}}.png)\n", "link"),
        (
            "[size][r]\n\n[r]: https://example.com/{{value tensors_memory.bytes}}\n",
            "link",
        ),
        ("<https://example.com/{{value tensors_memory.bytes}}>\n", "link"),
        (
            "<a href=\"https://example.com/{{value tensors_memory.bytes}}\">x</a>\n",
            "HTML tag",
        ),
        ("## Size: {{value tensors_memory.bytes}}\n", "heading"),
        ("Size {{value tensors_memory.bytes}}\n====\n", "heading"),
    ];
    for (chapter, expected) in cases {
        let p = only_problem(ws.build_chapter(&path, chapter));
        assert!(matches!(p.cause, Cause::Malformed(_)), "{chapter:?}: {p}");
        let text = p.to_string();
        assert!(text.contains(expected), "{chapter:?} gave: {text}");
    }
    // In a link's text, in emphasis, in a table cell and after a heading a value is fine.
    let html = ws
        .build_chapter(
            &path,
            "## Size\n\n[{{value tensors_memory.bytes}}](https://example.com) *{{value tensors_memory.bytes}}*\n\n\
             | a | b |\n|---|---|\n| {{value tensors_memory.bytes}} | x |\n",
        )
        .expect("builds");
    assert!(
        html.contains("<a href=\"https://example.com\"><span class=\"lecture-value lecture-computed\""),
        "{html}"
    );
}

/// Pieces of chapters: directives whole and broken, and the markdown around them.
const CHAPTER_PIECES: &[&str] = &[
    "{{",
    "}}",
    "{{value tensors_memory.bytes}}",
    "{{value tensors_memory.fp8_e4m3_info.max format=sci3}}",
    "{{value a.b}}",
    "{{value tensors_memory.bytes format=iec unit=FLOP}}",
    "{{code tensors_memory}}",
    "{{chart float_ranges}}",
    "{{chart nope}}",
    "{{provenance}}",
    "{{compare tensors_memory.bytes}}",
    "{{if tensors_on_gpus.cuda_available}}",
    "{{if has tensors_memory.x}}",
    "{{else}}",
    "{{end}}",
    "{{#include x}}",
    "\\{{",
    "\n",
    "\n\n",
    "\r\n",
    "    ",
    "`",
    "```",
    "~~~",
    "#",
    "## ",
    "===",
    "---",
    "[",
    "](",
    ")",
    "<",
    ">",
    "<div>",
    "</div>",
    "<!--",
    "-->",
    "|",
    "| a |\n|---|\n",
    "- ",
    "> ",
    "*",
    "_",
    "é",
    "💥",
    "\u{0}",
    " ",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Any chapter text renders or fails with problems; it never panics or hangs.
    #[test]
    fn no_chapter_text_breaks_the_renderer(
        pieces in proptest::collection::vec(proptest::sample::select(CHAPTER_PIECES), 0..40)
    ) {
        use cs336::book::render::render_chapter;
        use cs336::book::traces::{TraceChoice, Traces};
        static TRACE: std::sync::OnceLock<(Workspace, std::path::PathBuf)> = std::sync::OnceLock::new();
        let (ws, path) = TRACE.get_or_init(|| {
            let ws = Workspace::new();
            let path = ws.write_trace("cpu", fresh_trace());
            (ws, path)
        });
        let chapter = pieces.concat();
        let mut traces = Traces::new(&ws.trace_dir(), TraceChoice::File(path.clone()), std::path::Path::new(common::ROOT));
        match render_chapter(&chapter, &mut traces) {
            Ok(_) => {}
            Err(problems) => proptest::prop_assert!(!problems.is_empty()),
        }
    }
}
