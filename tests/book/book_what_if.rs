//! A what-if book: a banner on every page names the changed givens against the lecture's; a value
//! the change moved shows the own run's beside it; each code view says whether its section ran
//! again; the "What if?" box lists a section's givens with an input for each. The device's own
//! book shows none of it.

use std::path::Path;

use cs336::device::{self, DeviceRequest};
use cs336::lecture::{run, what_if};

use crate::common::{Workspace, fresh_trace};

#[test]
fn a_what_if_book_shows_what_changed_against_the_own_run() {
    let changes = what_if::parse(&["motivating_questions.model_parameters=405e9".to_string()]).expect("valid");
    let choice = device::choose(DeviceRequest::Cpu).expect("cpu");
    crate::common::test_budget();
    let t = run::run_lecture_with(
        &what_if::sections(&changes),
        &choice,
        0,
        Path::new(env!("CARGO_MANIFEST_DIR")),
        Some(fresh_trace().clone()),
        &what_if::overrides(&changes),
        |_| {},
    )
    .expect("runs");
    let ws = Workspace::new();
    let slug = t.provenance.device.slug.clone();
    let own = ws.write_trace(&slug, fresh_trace());
    let path = ws.trace_dir().join("what-if/x").join(format!("{slug}.json"));
    std::fs::create_dir_all(path.parent().expect("folder")).expect("folder");
    cs336::trace::save(&path, &t).expect("written");
    ws.build_what_if_book(&path, &own).expect("the what-if book builds");
    let page = |name: &str| std::fs::read_to_string(ws.out_dir().join(name)).expect("page");

    let napkin = page("motivating_questions.html");
    for expect in [
        "lecture-what-if-banner",
        "<code>motivating_questions.model_parameters</code> = <strong>405 billion</strong> (the lecture's: 70 billion)",
        "(own run: 70 billion)",
        "Ran again with the what-if's givens",
        "data-key=\"motivating_questions.mfu\"",
        "This page cannot run anything itself",
    ] {
        assert!(napkin.contains(expect), "motivating_questions.html lacks `{expect}`");
    }
    // A value the change did not move has nothing beside it: the rate is the lecture's.
    let rate = napkin.find("989.5 TFLOP/s").expect("the H100's rate");
    assert!(
        !napkin[rate..rate + 80].contains("own run"),
        "{}",
        &napkin[rate..rate + 80]
    );
    let memory = page("tensors_memory.html");
    assert!(memory.contains("lecture-what-if-banner") && memory.contains("Not run again"));
    assert!(!memory.contains("(own run:"), "a section not run again moved nothing");

    // The own book: no banner, nothing beside values, every code view plain.
    let plain = ws
        .build_chapter(
            &own,
            "{{value motivating_questions.days}}\n\n{{code motivating_questions}}\n",
        )
        .expect("builds");
    assert!(!plain.contains("lecture-what-if-banner") && !plain.contains("own run") && !plain.contains("Ran again"));
    assert!(
        plain.contains("lecture-what-if-input"),
        "the box is on the own book's pages too"
    );
}
