//! Recorded tensors drawn as grids beside their code: the slicing chapter's `x` shows its dtype
//! and shape and one cell per element with its value and storage position on hover, stays inside
//! a phone's window, and is there again when stepping reaches the step that recorded it; its
//! views (`transpose`, `column_1`) show their strides and offset, and each cell where it sits in
//! the storage they share with `x`.

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
    let first = format!(
        "{}\n[0, 0] at storage position 0",
        x.value.pointer("/0/0").expect("x[0][0]")
    );
    // A view: its head adds its strides (and offset), its first cell's hover its storage position.
    let view = |name: &str| {
        let v = &trace
            .sections
            .iter()
            .find(|s| s.id == "tensor_slicing")
            .expect("section")
            .values[name];
        let layout = v
            .layout
            .clone()
            .unwrap_or_else(|| panic!("{name}'s layout is recorded"));
        let list = |xs: &[usize]| xs.iter().map(usize::to_string).collect::<Vec<_>>().join(", ");
        let offset = match layout.offset {
            0 => String::new(),
            o => format!(", offset {o}"),
        };
        let shape = v.shape.clone().expect("a shape");
        let head = format!(
            "{} [{}] strides ({}){offset}",
            v.dtype.clone().expect("a dtype"),
            list(&shape),
            list(&layout.strides)
        );
        let zero = vec![0; shape.len()];
        let title = format!(
            "{}\n[{}] at storage position {}",
            v.value
                .pointer(&format!("/{}", list(&zero).replace(", ", "/")))
                .expect("the first element"),
            list(&zero),
            layout.offset
        );
        (head, title)
    };
    let views = [("transpose", view("transpose")), ("column_1", view("column_1"))];
    assert_eq!(
        views[0].1.0, "float32 [3, 2] strides (1, 3)",
        "the transpose's strides are x's, swapped"
    );
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
        // (At step 1 the views are not made yet.)
        for (name, (head, title)) in views.iter().filter(|_| label != "step 1") {
            let grid = slot(page, name)
                .grid
                .as_ref()
                .unwrap_or_else(|| panic!("{label}: {name} is drawn as a grid"));
            assert_eq!(&grid.head, head, "{label}: {name}'s strides");
            assert_eq!(
                grid.first_title.as_ref(),
                Some(title),
                "{label}: {name}'s storage position"
            );
        }
        // A boolean is not a tensor: it stays text.
        assert!(slot(page, "row_0_same_storage").grid.is_none(), "{label}");
    }
}
