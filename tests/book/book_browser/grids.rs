//! Recorded tensors drawn as grids beside their code: the slicing chapter's `x` shows its dtype
//! and shape and one cell per element with its value on hover, stays inside a phone's window, and
//! is there again when stepping reaches the step that recorded it.

use super::*;

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Grid {
    head: String,
    cells: usize,
    first_title: Option<String>,
    within: bool,
}

/// The slot named `name` in the first code view of an observed page.
fn slot<'a>(page: &'a Page, name: &str) -> &'a Slot {
    page.views
        .iter()
        .flat_map(|v| &v.slots)
        .find(|s| s.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("a slot named {name}"))
}

#[test]
fn the_slicing_chapter_draws_its_tensors_as_grids_at_both_widths_and_while_stepping() {
    let Some(tools) = tools() else { return };
    let out = tempfile::tempdir().expect("temporary folder");
    let html = build_book(&out.path().join("html"));
    let trace = load(&common::default_trace_path());
    let x = &trace
        .sections
        .iter()
        .find(|s| s.id == "tensor_slicing")
        .expect("tensor_slicing is in the trace")
        .values["x"];
    let (dtype, shape) = (x.dtype.clone().expect("x's dtype"), x.shape.clone().expect("x's shape"));
    let head = format!(
        "{dtype} [{}]",
        shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
    );
    let first = x.value.pointer("/0/0").expect("x[0][0]").to_string();
    let mut plan = Vec::new();
    for (w, h) in [(1200, 900), (390, 844)] {
        let mut actions = vec![json!({ "observe": format!("static {w}") })];
        actions.extend(pointed_screenshot(
            ".lecture-tensor-grid > span",
            &format!("grid-slicing-{w}.png"),
        ));
        plan.push(json!({ "name": format!("grids at {w}"), "url": "tensor_slicing.html", "viewport": [w, h], "actions": actions }));
    }
    plan.push(
        json!({ "name": "grids stepping", "url": "tensor_slicing.html?step=1", "actions": [
            { "observe": "step 1" }, { "press": "End" }, { "observe": "last step" },
        ]}),
    );
    let report = drive_report(&tools, &html, &Value::Array(plan));
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    for label in ["static 1200", "static 390", "step 1", "last step"] {
        let page = &report.observations[label];
        let grid = slot(page, "x")
            .grid
            .as_ref()
            .unwrap_or_else(|| panic!("{label}: x is drawn as a grid"));
        assert_eq!(grid.head, head, "{label}");
        assert_eq!(
            grid.cells,
            shape.iter().product::<usize>(),
            "{label}: one cell per element"
        );
        assert_eq!(
            grid.first_title.as_deref(),
            Some(first.as_str()),
            "{label}: the value on hover"
        );
        assert!(grid.within, "{label}: the grid stays inside the window");
        // A boolean is not a tensor: it stays text.
        assert!(slot(page, "row_0_same_storage").grid.is_none(), "{label}");
    }
}
