//! What the browser must show: the expected steps of every code view from the trace, the plan of
//! scenarios handed to the driver, and the checks of what it observed.

use super::*;

/// Runs the plan's scenarios in one browser; fails on a JavaScript error or a request that left
/// the local server.
pub(crate) fn drive(tools: &Tools, book: &Path, plan: &Value) -> BTreeMap<String, Page> {
    drive_report(tools, book, plan).observations
}

/// [`drive`], with everything the driver reported.
pub(crate) fn drive_report(tools: &Tools, book: &Path, plan: &Value) -> Report {
    let dir = tempfile::tempdir().expect("temporary folder");
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan.to_string()).expect("plan written");
    let out = Command::new(&tools.node)
        .arg(DRIVER)
        .arg(&tools.puppeteer)
        .arg(&tools.chromium)
        .arg(book)
        .arg(&plan_file)
        .output()
        .expect("node starts");
    assert!(
        out.status.success(),
        "drive.js failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("drive.js report: {e}\n{}", String::from_utf8_lossy(&out.stdout)));
    assert!(report.errors.is_empty(), "JavaScript errors: {:#?}", report.errors);
    assert!(
        report.outside.is_empty(),
        "requests off the machine: {:#?}",
        report.outside
    );
    report
}

/// One step as the page must show it: the line marked (None: the value is shown below the code),
/// the value's name and, where it is a number the test can format, its text.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    line: Option<u32>,
    name: String,
    text: Option<String>,
}

impl Expected {
    fn key(&self) -> (Option<u32>, String) {
        (self.line, self.name.clone())
    }
}

/// The steps of `record` as a code view shows them: each state beside the line of today's code
/// that recorded it, found by its token where today's code is the code that ran, else by its
/// offset from the function's first line. Without the function (it moved since a GPU trace
/// recorded it) every value is below the code.
fn expected_steps(record: &SectionRecord, code: Option<&FunctionSource>, current: bool) -> Vec<Expected> {
    record
        .steps
        .iter()
        .map(|(name, k)| {
            let value = &record.values[name.as_str()];
            let state = value.state(*k).expect("a step names a state");
            let line = code.and_then(|code| {
                match (current, state.token) {
                    _ if state.line == 0 => None,
                    (true, Some(token)) => code.line_of_token(token),
                    _ => state
                        .line
                        .checked_sub(record.source_line)
                        .map(|offset| code.start_line + offset),
                }
                .filter(|l| (code.start_line..=code.end_line).contains(l))
            });
            let text = match &state.value {
                Value::Number(_) | Value::Bool(_) => {
                    Some(format_value(&state.value, value.unit, Format::Auto).expect("formats"))
                }
                _ => None,
            }
            .filter(|t| t.chars().count() <= MAX_SHOWN_CHARS);
            Expected {
                line,
                name: name.clone(),
                text,
            }
        })
        .collect()
}

/// The section's function as its file holds it now, if it is still there.
pub(crate) fn code_of(record: &SectionRecord) -> Option<FunctionSource> {
    let text = std::fs::read_to_string(Path::new(ROOT).join(&record.source_file)).ok()?;
    function_source(&text, &record.id).ok()
}

/// Whether the book takes `code` for the code that recorded the section (the hashes match).
pub(crate) fn is_current(record: &SectionRecord, code: Option<&FunctionSource>) -> bool {
    code.is_some_and(|c| c.hash() == record.source_hash)
}

/// A code view of a page: its number on the page (from 1) and what its steps must show.
pub(crate) struct Planned {
    pub(crate) page: String,
    pub(crate) number: usize,
    pub(crate) section: String,
    pub(crate) steps: Vec<Expected>,
}

/// Every code view of every page of the book in `html` (print.html and index.html repeat the
/// chapters), with its expected steps from `trace` (or `other` for a view quoting that trace).
pub(crate) fn planned_views(html: &Path, trace: &Trace, other: Option<&Trace>) -> Vec<Planned> {
    let mut planned = Vec::new();
    let mut pages: Vec<PathBuf> = std::fs::read_dir(html)
        .expect("html folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "html"))
        .filter(|p| {
            !["print.html", "index.html", "toc.html", "404.html"]
                .iter()
                .any(|n| p.ends_with(n))
        })
        .collect();
    pages.sort();
    for page in pages {
        let text = std::fs::read_to_string(&page).expect("page");
        let name = page.file_name().expect("name").to_string_lossy().into_owned();
        for (i, view) in text.split("<div class=\"lecture-code\"").skip(1).enumerate() {
            let head = view.split("<code>").nth(1).and_then(|s| s.split("</code>").next());
            let id = head.expect("a code view names its section");
            let (source, is_other) = match other {
                Some(o) if view.contains(&format!("data-trace=\"{}\"", o.provenance.device.slug)) => (o, true),
                _ => (trace, false),
            };
            let record = source.section(id).expect("section in trace");
            let code = code_of(record);
            let current = !is_other || is_current(record, code.as_ref());
            planned.push(Planned {
                page: name.clone(),
                number: i + 1,
                section: id.to_string(),
                steps: expected_steps(record, code.as_ref(), current),
            });
        }
    }
    planned
}

fn step_query(number: usize, step: usize) -> String {
    if number == 1 {
        format!("?step={step}")
    } else {
        format!("?step={number}.{step}")
    }
}

/// Scenarios that open each view at its first step, walk to the last with →, then press End and
/// Home; and each page without JavaScript.
pub(crate) fn walk_plan(views: &[Planned], prefix: &str) -> Vec<Value> {
    let mut plan = Vec::new();
    let pages: BTreeSet<&str> = views.iter().map(|v| v.page.as_str()).collect();
    for page in pages {
        plan.push(json!({
            "name": format!("{page} without JavaScript"), "url": format!("{prefix}{page}"), "javascript": false,
            "actions": [{ "observe": format!("static {prefix}{page}") }],
        }));
    }
    for v in views.iter().filter(|v| !v.steps.is_empty()) {
        let label = |what: String| format!("{prefix}{}#{} {what}", v.page, v.number);
        // The walked view's values only: the checks read no other view's at a step.
        let observe = |what: String| json!({ "observe": label(what), "view": v.number });
        let mut actions = vec![observe("step 1".into())];
        for k in 2..=v.steps.len() {
            actions.push(json!({ "press": "ArrowRight" }));
            actions.push(observe(format!("step {k}")));
        }
        actions.extend([
            json!({ "press": "ArrowRight" }),
            observe("past the end".into()),
            json!({ "press": "Home" }),
            observe("home".into()),
            json!({ "press": "End" }),
            observe("end".into()),
        ]);
        plan.push(json!({
            "name": label("walk".into()),
            "url": format!("{prefix}{}{}", v.page, step_query(v.number, 1)),
            "actions": actions,
        }));
    }
    plan
}

/// The view at step `k` (from 1) shows exactly the values recorded up to it, the value of step k
/// as recorded, and marks its line.
pub(crate) fn check_step(page: &Page, v: &Planned, k: usize, what: &str) {
    let view = &page.views[v.number - 1];
    let want = &v.steps[k - 1];
    assert_eq!(view.section.as_deref(), Some(v.section.as_str()), "{what}");
    assert!(view.stepping, "{what}: step mode on");
    assert_eq!(page.search, step_query(v.number, k), "{what}: the URL names the step");
    let status = view.status.as_deref().unwrap_or("");
    assert!(
        status.starts_with(&format!("step {k} of {} ", v.steps.len())),
        "{what}: status {status:?}"
    );
    match want.line {
        Some(line) => {
            assert_eq!(
                view.current.len(),
                1,
                "{what}: one element is the current step: {:?}",
                view.current
            );
            let current = &view.current[0];
            assert_eq!(
                (current.value.as_str(), current.tag.as_str(), current.line),
                ("step", "code", Some(line)),
                "{what}: the line of step {k} ({})",
                want.name
            );
        }
        None => assert_eq!(
            view.current.len(),
            1,
            "{what}: the value below the code is the current step"
        ),
    }
    // Stepping keeps the current step in the window (a row taller than most of the window: its
    // top, in the upper part); in presenter mode below the step bar, which stays in the window.
    let [top, bottom] = view.current_box.expect("the current step's element has a box");
    let height = page.window_height;
    let shown = if bottom - top > 0.8 * height {
        top >= -0.5 && top <= 0.2 * height
    } else {
        top >= -0.5 && bottom <= height + 0.5
    };
    assert!(
        shown,
        "{what}: the current step ({top}..{bottom} px) is in the window (0..{height} px)"
    );
    if page.presenting {
        let [bar_top, bar_bottom] = view.bar_box.expect("the step bar is shown");
        assert!(
            bar_top >= -0.5 && bar_bottom <= page.window_height,
            "{what}: the step bar ({bar_top}..{bar_bottom} px) is in the window"
        );
        assert!(
            top >= bar_bottom - 0.5,
            "{what}: the current step ({top} px) is below the step bar ({bar_bottom} px)"
        );
    }
    let recorded: BTreeSet<_> = v.steps[..k].iter().map(Expected::key).collect();
    for slot in &view.slots {
        assert_eq!(
            slot.hidden,
            !recorded.contains(&slot.key()),
            "{what}: `{}` beside line {:?} (hidden: {})",
            slot.name.as_deref().unwrap_or(""),
            slot.line,
            slot.hidden
        );
    }
    let now: Vec<&Slot> = view.slots.iter().filter(|s| s.current).collect();
    assert_eq!(now.len(), 1, "{what}: one value is the current step's");
    assert_eq!(now[0].key(), want.key(), "{what}: the value of step {k}");
    if let Some(text) = &want.text {
        assert_eq!(&now[0].text, text, "{what}: `{}` at step {k}", want.name);
    }
    assert!(
        !page
            .document_saw
            .iter()
            .any(|key| key.starts_with("Arrow") || key == "Home" || key == "End"),
        "{what}: a stepping key reached mdBook's listeners: {:?}",
        page.document_saw
    );
}

/// Walks every view and compares with the static page.
pub(crate) fn check_walks(obs: &BTreeMap<String, Page>, views: &[Planned], prefix: &str) -> usize {
    let mut checked = 0;
    for v in views {
        let statics = &obs[&format!("static {prefix}{}", v.page)];
        let view = &statics.views[v.number - 1];
        assert!(
            !view.bar && !view.stepping && view.current.is_empty(),
            "{}: static without JavaScript",
            v.page
        );
        assert!(
            view.slots.iter().all(|s| !s.hidden),
            "{}: every value shown without JavaScript",
            v.page
        );
        if v.steps.is_empty() {
            continue;
        }
        let label = |what: &str| format!("{prefix}{}#{} {what}", v.page, v.number);
        for k in 1..=v.steps.len() {
            check_step(&obs[&label(&format!("step {k}"))], v, k, &label(&format!("step {k}")));
            checked += 1;
        }
        check_step(&obs[&label("past the end")], v, v.steps.len(), &label("past the end"));
        check_step(&obs[&label("home")], v, 1, &label("home"));
        check_step(&obs[&label("end")], v, v.steps.len(), &label("end"));
        // At the last step every value is back at its final state: what the static page shows.
        let end = &obs[&label("end")].views[v.number - 1];
        let strip = |s: &[Slot]| {
            s.iter()
                .map(|s| (s.key(), s.text.clone(), s.title.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            strip(&end.slots),
            strip(&view.slots),
            "{}: the last step shows the static values",
            label("end")
        );
    }
    checked
}
