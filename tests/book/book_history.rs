//! Values with a history in the book: `state=` quotes an earlier state, the code view puts each
//! state beside the line that recorded it, and values find their lines by token after the code is
//! reformatted.

use crate::common;

use std::path::Path;

use common::{ROOT, Workspace, fresh_trace, only_problem};
use cs336::book::Cause;
use cs336::book::format::{Format, format_value};
use cs336::trace::Unit;

/// The cells of the code view's row for file line `n`: up to the next line number.
fn row(html: &str, n: u32) -> &str {
    let start = html
        .find(&format!("<span class=\"lecture-ln\">{n}</span>"))
        .unwrap_or_else(|| panic!("line {n} shown"));
    let rest = &html[start + 1..];
    let end = rest
        .find("<span class=\"lecture-ln\">")
        .map_or(html.len(), |e| start + 1 + e);
    &html[start..end]
}

fn shown(value: &serde_json::Value, unit: Unit, format: Format) -> String {
    format_value(value, unit, format).expect("formats")
}

#[test]
fn state_quotes_an_earlier_state_and_a_missing_state_is_an_error() {
    let trace = fresh_trace();
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", trace);
    let state = trace.value("optimizer", "state").expect("recorded");
    assert_eq!(state.num_states(), 2);
    let weight = |v: &serde_json::Value| v["layers.0.weight"][0][0].clone();
    let (before, after) = (weight(&state.history[0].value), weight(&state.value));
    assert_ne!(before, after, "the step moved the weight");
    let html = ws
        .build_chapter(
            &path,
            "BEFORE: {{value optimizer.state.layers.0.weight.0.0 state=first format=plain}} \
             AFTER: {{value optimizer.state.layers.0.weight.0.0 state=last format=plain}} \
             DEFAULT: {{value optimizer.state.layers.0.weight.0.0 format=plain}} \
             ZERO: {{value optimizer.state.layers.0.weight.0.0 state=0 format=plain}}\n",
        )
        .expect("builds");
    let plain = |v| shown(v, Unit::None, Format::Plain);
    for (label, v) in [
        ("BEFORE:", &before),
        ("AFTER:", &after),
        ("DEFAULT:", &after),
        ("ZERO:", &before),
    ] {
        assert!(html.contains(&format!("{label} <span")), "{label}");
        let at = html.find(&format!("{label} <span")).expect("value");
        let end = html[at..].find("</span>").expect("closed") + at;
        assert!(
            html[at..end].ends_with(&format!(">{}", plain(v))),
            "{label}: {}",
            &html[at..end]
        );
    }
    // The tooltip names the line of the state quoted.
    let title = format!("src/lecture/sections/optimizer.rs:{}", state.history[0].line);
    assert!(html.contains(&title), "{title}");

    // The count after each backward term.
    let flops = trace.value("gradients_flops", "num_backward_flops").expect("recorded");
    let html = ws
        .build_chapter(
            &path,
            "{{value gradients_flops.num_backward_flops state=1 format=int}}\n",
        )
        .expect("builds");
    let b = |n| common::num(trace.section("gradients_flops").expect("section"), n);
    let w2_term = serde_json::json!(2.0 * b("B") * b("D") * b("K"));
    assert_eq!(flops.history[1].value.as_f64(), w2_term.as_f64());
    assert!(html.contains(&format!(">{}</span>", shown(&w2_term, Unit::Flop, Format::Int))));

    // A state that does not exist fails the build, saying how many there are.
    let problem = only_problem(ws.build_chapter(&path, "{{value optimizer.state state=2}}\n"));
    assert!(
        matches!(&problem.cause, Cause::MissingState { count: 2, asked, .. } if asked == "2"),
        "{problem}"
    );
    assert!(problem.to_string().contains("2 state(s), 0 to 1"), "{problem}");

    // `if has` and `compare` take a state too.
    let html = ws
        .build_chapter(
            &path,
            "{{if has optimizer.state state=1}}\nSECOND\n{{else}}\nNOSECOND\n{{end}}\n\n\
             {{if has optimizer.state state=2}}\nTHIRD\n{{else}}\nNOTHIRD\n{{end}}\n\n\
             {{compare gradients_flops.num_backward_flops state=first}}\n",
        )
        .expect("builds");
    assert!(html.contains("SECOND") && !html.contains("NOSECOND"));
    assert!(html.contains("NOTHIRD") && !html.contains(">THIRD"));
    assert!(html.contains("gradients_flops.num_backward_flops state=first"));
    assert!(html.contains(&format!(
        ">{}</span>",
        shown(&serde_json::json!(0), Unit::Flop, Format::Auto)
    )));
}

#[test]
fn the_code_view_shows_each_state_beside_the_line_that_recorded_it() {
    let trace = fresh_trace();
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", trace);
    let html = ws.build_chapter(&path, "{{code gradients_flops}}\n").expect("builds");
    let flops = trace.value("gradients_flops", "num_backward_flops").expect("recorded");
    let states = flops
        .history
        .iter()
        .map(|s| (&s.value, s.line))
        .chain([(&flops.value, flops.line)]);
    for (value, line) in states {
        let cells = row(&html, line);
        let text = shown(value, Unit::Flop, Format::Auto);
        assert!(
            cells.contains(&format!(
                "<span class=\"lecture-lv-name\">num_backward_flops</span> = {text}</span>"
            )),
            "line {line}: {cells}"
        );
    }
    // A loop records `loss` ten times on one line: the line shows the last.
    let html = ws.build_chapter(&path, "{{code train_loop}}\n").expect("builds");
    let loss = trace.value("train_loop", "loss").expect("recorded");
    let cells = row(&html, loss.line);
    assert_eq!(cells.matches("lecture-lv-name\">loss<").count(), 1, "{cells}");
    assert!(
        cells.contains(&format!("= {}</span>", shown(&loss.value, Unit::None, Format::Auto))),
        "{cells}"
    );
}

#[test]
fn values_find_their_lines_by_token_after_the_code_is_reformatted() {
    let trace = fresh_trace();
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", trace);
    // A copy of the crate whose `tensors_memory` has three more lines (comments and a blank line)
    // before `bytes` is recorded: the same tokens, so the same hash, but the lines moved.
    let root = ws.dir.path().join("crate");
    std::fs::create_dir_all(root.join("src/lecture/sections")).expect("mkdir");
    let original = std::fs::read_to_string(Path::new(ROOT).join("src/lecture/sections/tensors_memory.rs"))
        .expect("tensors_memory.rs");
    let recording = "    record!(cx, computed bytes = x.nbytes(), bytes)?;\n";
    assert_eq!(original.matches(recording).count(), 1, "the line to move is there once");
    let moved = original.replace(
        recording,
        &format!("    // reformatted:\n\n    // three more lines\n{recording}"),
    );
    std::fs::write(root.join("src/lecture/sections/tensors_memory.rs"), &moved).expect("write");
    let section = trace.section("tensors_memory").expect("section");
    let code = cs336::trace::source::function_source(&moved, "tensors_memory").expect("function");
    assert_eq!(code.hash(), section.source_hash, "reformatting keeps the hash");
    assert_eq!(code.start_line, section.source_line, "the function itself did not move");

    let html = ws
        .build_chapter_from(&path, "{{code tensors_memory}}\n", &root)
        .expect("a reformatted section is not stale");
    let bytes = trace.value("tensors_memory", "bytes").expect("recorded");
    let text = shown(&bytes.value, Unit::Bytes, Format::Auto);
    let beside = format!("<span class=\"lecture-lv-name\">bytes</span> = {text}</span>");
    // Beside the line that records it now, three lines down; not beside the comment now on the
    // line it was recorded on (where placing by line alone would put it).
    let now = row(&html, bytes.line + 3);
    assert!(now.contains("record!(") && now.contains(&beside), "{now}");
    let then = row(&html, bytes.line);
    assert!(
        then.contains("// reformatted") && !then.contains("lecture-lv"),
        "{then}"
    );
    // A value recorded before the inserted lines stays where it was.
    let dtype = trace.value("tensors_memory", "dtype").expect("recorded");
    assert!(row(&html, dtype.line).contains("lecture-lv-name\">dtype<"));
}
