//! The book in a real browser: headless Chromium, driven by puppeteer-core
//! (`tests/browser/drive.js`), opens the book built from the committed CPU trace and steps through
//! every code view with the keyboard, checking at each step the line marked `aria-current="step"`,
//! which values are shown and hidden and what they read; `?step=` links; mdBook's ←/→ chapter keys
//! outside step mode; presenter mode on and off; the page without JavaScript; that nothing is
//! loaded from the network; a GPU trace recorded by older code (no histories, no tokens); and every
//! chapter at a phone's width and a desktop's (`widths.rs`).
//!
//! Needs Debian's `chromium` (or `CS336_CHROMIUM`), `node`, and puppeteer-core installed under the
//! target folder (`.ci/browser-test-env` does both; `CS336_PUPPETEER` names another copy). Without
//! them the tests say they skipped and why; with `CS336_REQUIRE_BROWSER=1` (CI) a skip is a
//! failure. `CS336_SCREENSHOTS=DIR` also saves screenshots of presenter mode there.

mod grids;
mod hover;
mod plan;
mod widths;

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::ROOT;
use cs336::book::BuildOptions;
use cs336::book::format::{Format, format_value};
use cs336::trace::source::{FunctionSource, function_source};
use cs336::trace::{self, SectionRecord, Trace};
use serde::Deserialize;
use serde_json::{Value, json};

const DRIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser/drive.js");
const GPU_TRACE: &str = "trace/lecture_02/nvidia-h200.json";
/// Longest value text shown beside code (`src/book/code_view.rs`).
const MAX_SHOWN_CHARS: usize = 44;

struct Tools {
    node: PathBuf,
    chromium: PathBuf,
    puppeteer: PathBuf,
}

/// Chromium, node and puppeteer-core, or None (after saying what is missing).
fn tools() -> Option<Tools> {
    let on_path = |name: &str| {
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).map(|d| d.join(name)).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .find(|p| p.is_file())
    };
    let chromium = std::env::var_os("CS336_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| on_path("chromium"))
        .or_else(|| on_path("chromium-browser"));
    let node = on_path("node");
    // Where `.ci/browser-test-env` puts it: the CI cache folder (as the script finds it), else the
    // target folder, where it went before.
    let cache = std::env::var_os("CS336_CI_CACHE").map(PathBuf::from).or_else(|| {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
        Some(base.join("cs336-ci"))
    });
    // CARGO_TARGET_TMPDIR is `<target>/tmp`.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().map(Path::to_path_buf);
    let puppeteer = std::env::var_os("CS336_PUPPETEER").map(PathBuf::from).or_else(|| {
        [cache, target]
            .into_iter()
            .flatten()
            .map(|dir| dir.join("browser-test/node_modules/puppeteer-core"))
            .find(|p| p.join("package.json").is_file())
    });
    let missing: Vec<&str> = [
        (chromium.is_none(), "chromium (apt-get install -y chromium)"),
        (node.is_none(), "node"),
        (
            !puppeteer.as_ref().is_some_and(|p| p.join("package.json").is_file()),
            "puppeteer-core (.ci/browser-test-env installs it in the CI cache folder)",
        ),
    ]
    .into_iter()
    .filter_map(|(gone, what)| gone.then_some(what))
    .collect();
    if missing.is_empty() {
        return Some(Tools {
            node: node?,
            chromium: chromium?,
            puppeteer: puppeteer?,
        });
    }
    let msg = format!("browser tests skipped: missing {}", missing.join(", "));
    if std::env::var("CS336_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
        panic!("{msg}; CS336_REQUIRE_BROWSER=1 makes that a failure");
    }
    // Straight to the terminal, past the test harness's capture, so a passing run shows the skip.
    let _ = writeln!(std::io::stderr().lock(), "{msg}");
    None
}

#[derive(Debug, Deserialize)]
struct Report {
    observations: BTreeMap<String, Page>,
    /// Layouts by label (`widths.rs`).
    measures: BTreeMap<String, widths::Layout>,
    /// Hover texts and formula boxes by label (`hover.rs`).
    #[serde(default)]
    probes: BTreeMap<String, hover::Probe>,
    errors: Vec<String>,
    outside: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Page {
    path: String,
    search: String,
    presenting: bool,
    sidebar_visible: bool,
    menu_visible: bool,
    main_width: Option<f64>,
    window_height: f64,
    document_saw: Vec<String>,
    views: Vec<View>,
    what_if_command: Option<String>,
    pytorch_open: Vec<bool>,
}

#[derive(Debug, Deserialize)]
struct View {
    section: Option<String>,
    stepping: bool,
    bar: bool,
    status: Option<String>,
    current: Vec<Current>,
    slots: Vec<Slot>,
    font_px: Option<f64>,
    /// Top and bottom, in the window, of the current step's row (line number, code, values).
    current_box: Option<[f64; 2]>,
    /// Top and bottom, in the window, of the step bar, when it is shown.
    bar_box: Option<[f64; 2]>,
}

#[derive(Debug, Deserialize)]
struct Current {
    value: String,
    line: Option<u32>,
    tag: String,
}

#[derive(Debug, Deserialize, Clone)]
struct Slot {
    line: Option<u32>,
    name: Option<String>,
    text: String,
    title: Option<String>,
    hidden: bool,
    current: bool,
    /// The tensor grid the slot shows, if any (`grids.rs`).
    #[serde(default)]
    grid: Option<grids::Grid>,
}

impl Slot {
    fn key(&self) -> (Option<u32>, String) {
        (self.line, self.name.clone().unwrap_or_default())
    }
}

use plan::*;

/// A committed trace (a path relative to the crate root, or absolute).
fn load(path: &Path) -> Trace {
    trace::load(&Path::new(ROOT).join(path)).expect("committed trace loads")
}

fn build_book(out: &Path) -> PathBuf {
    let options = BuildOptions {
        strict: None,
        trace: Some(common::default_trace_path()),
        trace_dir: Some(Path::new(ROOT).join("trace/lecture_02")),
        out_dir: Some(out.to_path_buf()),
        source_root: None,
        baseline: None,
    };
    cs336::book::build(&Path::new(ROOT).join("book"), &options).expect("the book builds");
    out.to_path_buf()
}

/// The chapter a page's mdBook arrow leads to (`rel="next prefetch"` or `rel="prev"`).
fn chapter_link(html: &Path, page: &str, rel: &str) -> String {
    let text = std::fs::read_to_string(html.join(page)).expect("page");
    let marker = format!("rel=\"{rel}\" href=\"");
    let at = text.find(&marker).unwrap_or_else(|| panic!("{page} links {rel}")) + marker.len();
    text[at..].split('"').next().expect("href").to_string()
}

fn screenshot(name: &str) -> Option<Value> {
    let dir = PathBuf::from(std::env::var_os("CS336_SCREENSHOTS")?);
    std::fs::create_dir_all(&dir).expect("screenshot folder");
    Some(json!({ "screenshot": dir.join(name) }))
}

/// The mouse on `hover`, then [`screenshot`] `name`: nothing when screenshots are not asked for.
fn pointed_screenshot(hover: &str, name: &str) -> Vec<Value> {
    screenshot(name).map_or_else(Vec::new, |shot| vec![json!({ "hover": hover }), shot])
}

#[test]
fn every_code_view_steps_with_the_keyboard_and_presents() {
    let Some(tools) = tools() else { return };
    let out = tempfile::tempdir().expect("temporary folder");
    let html = build_book(&out.path().join("html"));
    let trace = load(&common::default_trace_path());
    let views = planned_views(&html, &trace, None);
    let steppable = views.iter().filter(|v| !v.steps.is_empty()).count();
    assert!(
        steppable >= trace.sections.len().min(20),
        "{steppable} code views to step through"
    );
    let find = |page: &str, number: usize| {
        views
            .iter()
            .find(|v| v.page == page && v.number == number)
            .unwrap_or_else(|| panic!("{page} has code view {number}"))
    };
    let flops = find("gradients.html", 2);
    assert_eq!(flops.section, "gradients_flops");
    let mid = flops.steps.len() / 2;

    let mut plan = walk_plan(&views, "");
    // The two links, and the first step of each for a different line.
    for (url, label) in [
        ("tensor_slicing.html?step=3", "slicing 3"),
        ("tensor_slicing.html?step=1", "slicing 1"),
        ("gradients.html?step=1", "gradients 1"),
        ("gradients.html?step=2", "gradients 2"),
    ] {
        let mut actions = vec![json!({ "observe": label })];
        actions.extend(screenshot(&format!("{}-1280x800.png", label.replace(' ', "-step-"))));
        plan.push(json!({ "name": label, "url": url, "actions": actions }));
    }
    // mdBook's ←/→ turn the page outside step mode only.
    plan.push(
        json!({ "name": "arrows in step mode", "url": format!("gradients.html?step=2.{mid}"), "actions": [
            { "press": "ArrowRight" }, { "observe": "arrows: stepping" },
            { "press": "Escape" }, { "observe": "arrows: left step mode" },
            { "press": "ArrowLeft", "navigates": true }, { "observe": "arrows: previous chapter" },
        ]}),
    );
    plan.push(
        json!({ "name": "arrows without step mode", "url": "gradients.html", "actions": [
            { "press": "ArrowRight", "navigates": true }, { "observe": "arrows: next chapter" },
        ]}),
    );
    // Presenter mode, by key at a middle step and by button.
    let mut present = vec![
        json!({ "observe": "present: before" }),
        json!({ "press": "p" }),
        json!({ "observe": "present: on" }),
    ];
    present.extend(screenshot("presenter-gradients-1280x800.png"));
    present.extend([
        json!({ "press": "ArrowRight" }),
        json!({ "observe": "present: next" }),
        json!({ "press": "Escape" }),
        json!({ "observe": "present: off" }),
        json!({ "press": "Escape" }),
        json!({ "observe": "present: step mode off" }),
    ]);
    plan.push(json!({ "name": "presenter", "url": format!("gradients.html?step=2.{mid}"), "viewport": [1280, 800], "actions": present }));
    plan.push(
        json!({ "name": "presenter button", "url": "gradients.html", "actions": [
            { "click": ".lecture-present-button" }, { "observe": "present button: on" },
            { "press": "p" }, { "observe": "present button: p again" },
        ]}),
    );
    if let Some(shot) = screenshot("presenter-gradients-1920x1080.png") {
        plan.push(
            json!({ "name": "projector", "url": format!("gradients.html?step=2.{mid}"), "viewport": [1920, 1080],
            "actions": [{ "press": "p" }, shot] }),
        );
        let train = find("train_loop.html", 1);
        let shots = [
            screenshot("presenter-train-loop-1920x1080.png"),
            screenshot("stepping-gradients-1280x800.png"),
        ];
        let [Some(train_shot), Some(plain_shot)] = shots else {
            unreachable!("CS336_SCREENSHOTS is set")
        };
        plan.push(
            json!({ "name": "projector train", "url": format!("train_loop.html?step={}", train.steps.len() / 2 + 2),
            "viewport": [1920, 1080], "actions": [{ "press": "p" }, train_shot] }),
        );
        plan.push(
            json!({ "name": "stepping", "url": format!("gradients.html?step=2.{mid}"), "viewport": [1280, 800],
            "actions": [plain_shot] }),
        );
    }

    // The PyTorch fold opens; the "What if?" box writes the command for a typed value.
    plan.push(
        json!({ "name": "what if", "url": "tensor_operations_flops.html", "actions": [
            { "observe": "what if: before" },
            { "click": "details.lecture-pytorch > summary" },
            { "click": "details.lecture-what-if > summary" },
            { "type": ["input.lecture-what-if-input[data-key='tensor_operations_flops.B']", "4096"] },
            { "observe": "what if: typed" },
        ]}),
    );
    let obs = drive(&tools, &html, &Value::Array(plan));
    let before = &obs["what if: before"];
    assert!(
        before.pytorch_open.iter().all(|open| !open),
        "the PyTorch fold starts closed"
    );
    assert_eq!(
        before.what_if_command.as_deref(),
        Some("cargo run --release --bin lecture -- --set SECTION.NAME=VALUE   (edit a value above)")
    );
    let typed = &obs["what if: typed"];
    assert_eq!(
        typed.pytorch_open.first(),
        Some(&true),
        "a click opens the PyTorch fold"
    );
    assert_eq!(
        typed.what_if_command.as_deref(),
        Some("cargo run --release --bin lecture -- --set tensor_operations_flops.B=4096")
    );
    let checked = check_walks(&obs, &views, "");
    let total: usize = views.iter().map(|v| v.steps.len()).sum();
    assert_eq!(checked, total);
    let _ = writeln!(
        std::io::stderr().lock(),
        "browser: {steppable} code views, {checked} steps checked"
    );

    // ?step=3 and ?step=1 of tensor_slicing, ?step=1 and ?step=2 of gradients.
    for (page, a, b) in [
        ("tensor_slicing.html", "slicing 3", "slicing 1"),
        ("gradients.html", "gradients 1", "gradients 2"),
    ] {
        let view = find(page, 1);
        let ka: usize = a.rsplit(' ').next().and_then(|k| k.parse().ok()).expect("step");
        let kb: usize = b.rsplit(' ').next().and_then(|k| k.parse().ok()).expect("step");
        check_step(&obs[a], view, ka, a);
        check_step(&obs[b], view, kb, b);
        assert_ne!(
            obs[a].views[0].current[0].line, obs[b].views[0].current[0].line,
            "{a} and {b} mark different lines"
        );
    }

    let prev = chapter_link(&html, "gradients.html", "prev");
    let next = chapter_link(&html, "gradients.html", "next prefetch");
    check_step(&obs["arrows: stepping"], flops, mid + 1, "→ in step mode steps");
    let left = &obs["arrows: left step mode"];
    assert!(
        !left.views[1].stepping && left.views[1].current.is_empty() && left.search.is_empty(),
        "Escape leaves step mode"
    );
    assert!(
        left.views[1].slots.iter().all(|s| !s.hidden),
        "Escape shows every value again"
    );
    assert_eq!(
        obs["arrows: previous chapter"].path, prev,
        "← outside step mode is mdBook's previous chapter"
    );
    assert_eq!(
        obs["arrows: next chapter"].path, next,
        "→ outside step mode is mdBook's next chapter"
    );

    let before = &obs["present: before"];
    let on = &obs["present: on"];
    let font = |p: &Page| p.views[1].font_px.expect("font size");
    assert!(
        !before.presenting && before.sidebar_visible && before.menu_visible,
        "{before:?}"
    );
    assert!(
        on.presenting && !on.sidebar_visible && !on.menu_visible,
        "presenter mode hides the sidebar and menu"
    );
    assert!(
        font(on) >= 1.3 * font(before),
        "presenter mode enlarges the code: {} px → {} px",
        font(before),
        font(on)
    );
    assert!(on.main_width > before.main_width, "presenter mode widens the page");
    check_step(on, flops, mid, "presenter mode keeps the step");
    check_step(&obs["present: next"], flops, mid + 1, "→ steps in presenter mode");
    let off = &obs["present: off"];
    assert!(
        !off.presenting && off.sidebar_visible && off.menu_visible,
        "Escape leaves presenter mode"
    );
    assert_eq!(font(off), font(before));
    check_step(off, flops, mid + 1, "leaving presenter mode keeps step mode");
    let done = &obs["present: step mode off"];
    assert!(
        !done.views[1].stepping && done.search.is_empty(),
        "a second Escape leaves step mode"
    );

    let button = &obs["present button: on"];
    assert!(
        button.presenting && !button.sidebar_visible,
        "the button enters presenter mode"
    );
    check_step(
        button,
        find("gradients.html", 1),
        1,
        "the button starts stepping its view",
    );
    assert!(!obs["present button: p again"].presenting, "p leaves presenter mode");
}

#[test]
fn a_gpu_trace_recorded_by_older_code_steps_by_line() {
    let Some(tools) = tools() else { return };
    let gpu = load(Path::new(GPU_TRACE));
    let older: Vec<&SectionRecord> = gpu
        .sections
        .iter()
        .filter(|s| !is_current(s, code_of(s).as_ref()))
        .collect();
    let _ = writeln!(
        std::io::stderr().lock(),
        "browser: {} section(s) of {GPU_TRACE} recorded by older code",
        older.len()
    );
    let dir = tempfile::tempdir().expect("temporary folder");
    let book = dir.path().join("book");
    std::fs::create_dir_all(book.join("src")).expect("book folder");
    std::fs::create_dir_all(book.join("theme")).expect("theme folder");
    for file in ["lecture.css", "lecture-steps.js"] {
        std::fs::copy(
            Path::new(ROOT).join("book/theme").join(file),
            book.join("theme").join(file),
        )
        .expect("theme file");
    }
    std::fs::write(
        book.join("book.toml"),
        "[book]\ntitle = \"gpu\"\n\n[output.html]\nadditional-css = [\"theme/lecture.css\"]\n\
         additional-js = [\"theme/lecture-steps.js\"]\n",
    )
    .expect("book.toml");
    std::fs::write(book.join("src/SUMMARY.md"), "# Summary\n\n- [GPU](gpu.md)\n").expect("SUMMARY.md");
    // Every section of the GPU trace, older code or not: it has no tokens, so all are placed by line.
    let chapter: String = gpu
        .sections
        .iter()
        .map(|s| format!("{{{{code {} trace=nvidia-h200}}}}\n\n", s.id))
        .collect();
    std::fs::write(book.join("src/gpu.md"), chapter).expect("chapter");
    let options = BuildOptions {
        strict: None,
        trace: Some(common::default_trace_path()),
        trace_dir: Some(Path::new(ROOT).join("trace/lecture_02")),
        out_dir: Some(dir.path().join("html")),
        source_root: Some(PathBuf::from(ROOT)),
        baseline: None,
    };
    cs336::book::build(&book, &options).expect("the book builds");
    let html = dir.path().join("html");
    let views = planned_views(&html, &load(&common::default_trace_path()), Some(&gpu));
    assert_eq!(views.len(), gpu.sections.len());
    let page = std::fs::read_to_string(html.join("gpu.html")).expect("page");
    assert_eq!(page.matches("class=\"lecture-older-code\"").count(), older.len());
    let obs = drive(&tools, &html, &Value::Array(walk_plan(&views, "")));
    let checked = check_walks(&obs, &views, "");
    assert_eq!(checked, views.iter().map(|v| v.steps.len()).sum::<usize>());
}
