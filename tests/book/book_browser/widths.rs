//! Every chapter at a phone's width (390 px) and a desktop's (1200 px): a full-page screenshot of
//! each, kept for a person to look at, and checks of the layout measured in the page
//! (`measure` in `tests/browser/drive.js`): no code line and no table column squeezed to a few
//! characters, no chart text below 10 px, no page wider than its window, and the benchmark tables
//! whole at 1200 px.

use super::*;

/// The widths checked: an iPhone's 390 px and a desktop window with the sidebar open.
const WIDTHS: [(u32, u32); 2] = [(390, 844), (1200, 900)];
/// Narrower than this many average characters, a code line wraps so often it no longer reads as
/// code (the bug this guards against left one character per line).
const MIN_CODE_CHARS: f64 = 20.0;
/// A table column narrower than this many characters, while its text is wider, breaks its words.
const MIN_CELL_CHARS: f64 = 3.0;
/// The smallest chart text a reader can make out (`READABLE_TEXT_PX` in `src/book/chart/plot.rs`).
const MIN_CHART_TEXT_PX: f64 = 10.0;

#[derive(Debug, Deserialize)]
pub(crate) struct Layout {
    window_width: f64,
    page_scroll_width: f64,
    code_lines: Vec<Measured>,
    cells: Vec<Measured>,
    charts: Vec<Chart>,
    bench_tables_scroll: Vec<bool>,
}

#[derive(Debug, Deserialize)]
struct Measured {
    chars: f64,
    /// The text's width unwrapped (cells only).
    natural_chars: Option<f64>,
    text: String,
}

#[derive(Debug, Deserialize)]
struct Chart {
    id: String,
    label: String,
    smallest_text_px: Option<f64>,
    scrolls: bool,
}

/// Figures still drawn once that scroll sideways in their box on a phone: the checkpointed
/// graph, whose automatic layout puts a parameter's box beside the op's other input, so that
/// it stays about 480 px wide even with each box's text split over more lines. Every other
/// chart fits a phone's column; a figure that comes to fit must leave this list (the test fails
/// on one listed that fits).
const SCROLLING_FIGURES: [&str; 1] = ["chart-checkpoint_graph"];

/// Where the screenshots go: `CS336_SCREENSHOTS`, else a folder under the target folder (never
/// committed), emptied first so that it holds this run's pages only.
fn screenshot_dir() -> PathBuf {
    let dir = match std::env::var_os("CS336_SCREENSHOTS") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("book-widths");
            let _ = std::fs::remove_dir_all(&dir);
            dir
        }
    };
    std::fs::create_dir_all(&dir).expect("screenshot folder");
    dir
}

/// The chapters of the built book (index.html repeats the first, print.html all of them).
fn chapters(html: &Path) -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(html)
        .expect("html folder")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".html"))
        .filter(|n| !["print.html", "index.html", "toc.html", "404.html"].contains(&n.as_str()))
        .collect();
    pages.sort();
    pages
}

/// What is wrong with `page`'s layout at its width, one line each.
fn faults(label: &str, layout: &Layout) -> Vec<String> {
    let mut found = Vec::new();
    if layout.page_scroll_width > layout.window_width + 1.0 {
        found.push(format!(
            "{label}: the page is {} px wide in a {} px window",
            layout.page_scroll_width, layout.window_width
        ));
    }
    for line in layout.code_lines.iter().filter(|l| l.chars < MIN_CODE_CHARS) {
        found.push(format!(
            "{label}: a code line {:.1} characters wide: {:?}",
            line.chars, line.text
        ));
    }
    for cell in &layout.cells {
        let natural = cell.natural_chars.unwrap_or(0.0);
        if cell.chars < MIN_CELL_CHARS.min(natural - 0.5) {
            found.push(format!(
                "{label}: a table column {:.1} characters wide for text {natural:.1} wide: {:?}",
                cell.chars, cell.text
            ));
        }
    }
    for chart in &layout.charts {
        let listed = SCROLLING_FIGURES.contains(&chart.id.as_str());
        if layout.window_width < 600.0 && chart.scrolls != listed {
            found.push(match listed {
                true => format!(
                    "{label}: {} fits the column now: take it off SCROLLING_FIGURES",
                    chart.id
                ),
                false => format!(
                    "{label}: {} scrolls sideways: it does not fit a phone's column",
                    chart.id
                ),
            });
        }
        match chart.smallest_text_px {
            Some(px) if px < MIN_CHART_TEXT_PX - 0.01 => {
                found.push(format!("{label}: chart text drawn at {px:.1} px in {:?}", chart.label))
            }
            _ => {}
        }
    }
    found
}

#[test]
fn every_chapter_reads_at_a_phones_width_and_a_desktops() {
    let Some(tools) = tools() else { return };
    let out = tempfile::tempdir().expect("temporary folder");
    let html = build_book(&out.path().join("html"));
    let shots = screenshot_dir();
    let pages = chapters(&html);
    assert!(pages.len() >= 20, "{} chapters", pages.len());
    let mut plan = Vec::new();
    for page in &pages {
        for (w, h) in WIDTHS {
            let stem = page.trim_end_matches(".html");
            plan.push(json!({
                "name": format!("{page} at {w} px"), "url": page, "viewport": [w, h],
                "actions": [
                    { "screenshot": shots.join(format!("{stem}-{w}.png")), "full": true },
                    // Folded code and tables are measured too, as a reader who opens them sees them.
                    { "open": "main details" },
                    { "measure": format!("{page} {w}") },
                ],
            }));
        }
    }
    let measures = drive_report(&tools, &html, &Value::Array(plan)).measures;
    let mut found = Vec::new();
    let (mut lines, mut cells, mut charts) = (0, 0, 0);
    for page in &pages {
        for (w, _) in WIDTHS {
            let label = format!("{page} {w}");
            let layout = &measures[&label];
            found.extend(faults(&label, layout));
            if w >= 1200 && layout.bench_tables_scroll.iter().any(|&s| s) {
                found.push(format!("{label}: a benchmark table is wider than the page"));
            }
            lines += layout.code_lines.len();
            cells += layout.cells.len();
            charts += layout.charts.len();
        }
    }
    // The checks saw what they check: the code views, the tables and the charts of every chapter.
    assert!(
        lines > 1000 && cells > 100 && charts >= 10,
        "{lines} code lines, {cells} cells, {charts} charts"
    );
    assert!(found.is_empty(), "{} fault(s):\n{}", found.len(), found.join("\n"));
    let _ = writeln!(
        std::io::stderr().lock(),
        "browser: {} chapters at {WIDTHS:?} px: {lines} code lines, {cells} table cells, {charts} charts; \
         screenshots in {}",
        pages.len(),
        shots.display()
    );
}
