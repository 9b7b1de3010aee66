//! What a reader meets by pointing and reading: every chart answers a hover (each point and bar
//! has a `<title>` with its value, unit and trace key, and the element under the pointer at the
//! centre of the target drawn last is that target) and a tap (the same text, written under the
//! chart), and every typeset formula renders as MathML with a box of
//! its own, at a desktop's width and a phone's.

use super::*;

#[derive(Debug, Deserialize)]
pub(crate) struct Probe {
    charts: Vec<ChartProbe>,
    math: Vec<MathProbe>,
}

#[derive(Debug, Deserialize)]
struct ChartProbe {
    id: String,
    targets: usize,
    titled: usize,
    first_title: Option<String>,
    hit_title: Option<String>,
    /// What the box under the chart says after a tap on the target under the finger.
    tapped: Option<String>,
    #[serde(rename = "box")]
    size: Option<[f64; 2]>,
}

#[derive(Debug, Deserialize)]
struct MathProbe {
    text: String,
    block: bool,
    #[serde(rename = "box")]
    size: [f64; 2],
    in_code: bool,
    /// The trace's values shown inside it.
    values: Vec<String>,
}

/// The pages of the built book that draw a chart or typeset a formula.
fn pages_with(html: &Path, marks: &[&str]) -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(html)
        .expect("html folder")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".html") && !["print.html", "index.html"].contains(&n.as_str()))
        .filter(|n| {
            let text = std::fs::read_to_string(html.join(n)).unwrap_or_default();
            marks.iter().any(|m| text.contains(m))
        })
        .collect();
    pages.sort();
    pages
}

#[test]
fn every_chart_answers_a_hover_and_every_formula_has_a_box() {
    let Some(tools) = tools() else { return };
    let out = tempfile::tempdir().expect("temporary folder");
    let html = build_book(&out.path().join("html"));
    let pages = pages_with(&html, &["lecture-chart-hover", "<math"]);
    let mut plan = Vec::new();
    for page in &pages {
        for (w, h) in [(1200, 900), (390, 844)] {
            let stem = page.trim_end_matches(".html");
            let mut actions = vec![json!({ "probe": format!("{page} {w}") })];
            // A point of the chart pointed at, and the first formula, for a person to look at.
            let charted = std::fs::read_to_string(html.join(page)).is_ok_and(|t| t.contains("lecture-chart-hover"));
            let pointed = match charted {
                true => "figure.lecture-chart .lecture-chart-hover > :last-child",
                false => "main math",
            };
            actions.extend(pointed_screenshot(pointed, &format!("hover-{stem}-{w}.png")));
            plan.push(json!({
                "name": format!("{page} at {w} px"), "url": page, "viewport": [w, h], "actions": actions,
            }));
        }
    }
    let probes = drive_report(&tools, &html, &Value::Array(plan)).probes;
    let mut charts_seen = BTreeSet::new();
    let (mut formulas, mut with_values) = (0, 0);
    let mut found = Vec::new();
    for (label, probe) in &probes {
        for chart in &probe.charts {
            charts_seen.insert(chart.id.clone());
            let def = cs336::book::chart::CHARTS
                .iter()
                .find(|c| format!("chart-{}", c.id) == chart.id);
            if chart.targets == 0 || chart.titled != chart.targets {
                found.push(format!(
                    "{label} {}: {} targets, {} with a title",
                    chart.id, chart.targets, chart.titled
                ));
                continue;
            }
            let title = chart.first_title.clone().unwrap_or_default();
            // Value and unit on the first line, what decided it on the next, in words: never a
            // trace key such as the section's id. (The registry says whose values a chart draws;
            // the Devices chart is the FLOPs section's.)
            let section = def
                .and_then(|d| cs336::lecture::SECTIONS.iter().find(|s| s.charts.contains(&d.id)))
                .map_or("tensor_operations_flops", |s| s.id);
            let decided = title.split_once('\n').map(|(_, rest)| rest).unwrap_or_default();
            let said = ["given", "computed", "measured", "checked", "older code"];
            if !title.contains(": ")
                || !said.iter().any(|w| decided.contains(w))
                || title.contains(section)
                || title.contains("trace: ")
            {
                found.push(format!(
                    "{label} {}: hover text {title:?} lacks a value or what decided it in words, or names a trace key of {section}",
                    chart.id
                ));
            }
            if chart.hit_title.as_deref() != Some(title.as_str()) {
                found.push(format!(
                    "{label} {}: the pointer at the last target's centre finds {:?}, not {title:?}",
                    chart.id, chart.hit_title
                ));
            }
            // A phone has no hover: a tap writes the same text under the chart.
            if chart.tapped.as_deref() != Some(title.as_str()) {
                found.push(format!(
                    "{label} {}: a tap on the last target shows {:?}, not {title:?}",
                    chart.id, chart.tapped
                ));
            }
            // A horizontal line's box is as thin as its geometry (the stroke is not counted).
            if !chart.size.is_some_and(|[w, h]| w > 0.0 || h > 0.0) {
                found.push(format!(
                    "{label} {}: the last target has no box ({:?})",
                    chart.id, chart.size
                ));
            }
        }
        for m in &probe.math {
            formulas += 1;
            with_values += usize::from(!m.values.is_empty() && m.values.iter().all(|v| !v.trim().is_empty()));
            if !(m.size[0] > 0.0 && m.size[1] > 0.0) || m.in_code {
                found.push(format!(
                    "{label}: formula {:?} (block {}) renders {:?}, in code {}",
                    m.text, m.block, m.size, m.in_code
                ));
            }
        }
    }
    assert!(found.is_empty(), "{} fault(s):\n{}", found.len(), found.join("\n"));
    // Every chart the CPU trace draws was pointed at (the CPU–GPU picture needs a GPU trace), and
    // the Devices chapter's own chart too.
    for def in cs336::book::chart::CHARTS.iter().filter(|c| c.id != "cpu_gpu") {
        assert!(
            charts_seen.contains(&format!("chart-{}", def.id)),
            "chart {} not found: {charts_seen:?}",
            def.id
        );
    }
    assert!(charts_seen.contains("chart-bf16-speedup-by-device"), "{charts_seen:?}");
    // The lecture's formulas, some with the trace's numbers inside them, at both widths.
    assert!(
        formulas >= 2 * 8 && with_values >= 2 * 4,
        "{formulas} formulas, {with_values} with values"
    );
    let _ = writeln!(
        std::io::stderr().lock(),
        "browser: {} charts answered a hover, {formulas} formulas rendered, on {} pages at 1200 and 390 px",
        charts_seen.len(),
        pages.len()
    );
}
