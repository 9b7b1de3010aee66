//! What decided a value, shown: the book reads each value's kind from the trace and marks a
//! measured number, a computed one and a given one apart, in prose and beside the code, and says
//! which on hover.

use crate::common::{Workspace, fresh_trace};

#[test]
fn prose_and_code_mark_given_computed_and_measured_values_apart() {
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", fresh_trace());
    let html = ws
        .build_chapter(
            &path,
            "{{value motivating_questions.mfu}} {{value tensors_memory.element_size}} \
             {{value tensor_operations_flops.actual_time}}\n\n{{code motivating_questions}}\n",
        )
        .expect("builds");
    for (class, words) in [
        ("lecture-value lecture-given", "given: the lecture chose it"),
        ("lecture-value lecture-computed", "computed from the lecture"),
        ("lecture-value lecture-measured", "measured: a clock decided it"),
    ] {
        let at = html
            .find(&format!("<span class=\"{class}\" title=\"{words}"))
            .unwrap_or_else(|| panic!("no {class} saying {words:?}: {html}"));
        assert!(at > 0);
    }
    // Beside the code: the chosen MFU, the computed days and this machine's memory.
    for (name, class) in [
        ("mfu", "lecture-given"),
        ("days", "lecture-computed"),
        ("this_device_bytes", "lecture-measured"),
    ] {
        let slot = html
            .split("<span data-slot=")
            .find(|s| s.contains(&format!("lecture-lv-name\">{name}<")))
            .unwrap_or_else(|| panic!("no slot for {name}"));
        assert!(slot.contains(&format!("class=\"{class}\"")), "{name}: {slot}");
    }
}
