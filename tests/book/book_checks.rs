//! Checked facts: a section's `check!` is recorded in the trace, `{{check SECTION.NAME}}` quotes
//! it as a tick whose hover gives the claim and its line, anything else under that directive is
//! refused, and no chapter `{{assert}}`s a fact that the section's own code can check.

use crate::common;

use std::path::Path;

use common::{ROOT, Workspace, only_problem, section_mut};
use cs336::book::Cause;
use cs336::book::directive::claim::{Claim, Expr};
use cs336::book::directive::{Directive, find};
use cs336::trace::{self, Kind, Trace};

fn committed() -> Trace {
    trace::load(&common::default_trace_path()).expect("committed trace loads")
}

#[test]
fn a_check_is_quoted_as_a_tick_with_its_claim_and_line() {
    let ws = Workspace::new();
    let trace = committed();
    let record = common::val(
        trace.section("tensor_operations_flops").expect("the section"),
        "counter_agrees",
    );
    let claim = record.as_str().expect("a check holds its claim");
    assert!(claim.starts_with("counted_num_flops == "), "{claim}");
    let md = "The counter agrees.{{check tensor_operations_flops.counter_agrees}}\n";
    let html = ws
        .build_chapter(&ws.write_trace("cpu", &trace), md)
        .expect("the chapter builds");
    let at = html.find("class=\"lecture-check\"").expect("a tick");
    let tick = &html[at..at + html[at..].find("</span>").expect("its end")];
    assert!(tick.ends_with('✓'), "{tick}");
    // The claim as the code wrote it (escaped for HTML), and the file that checked it.
    assert!(tick.contains("counted_num_flops =="), "{tick}");
    assert!(
        tick.contains("src/lecture/sections/tensor_operations_flops.rs:"),
        "{tick}"
    );
}

#[test]
fn a_check_directive_on_anything_but_a_check_is_refused() {
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", &committed());
    let p = only_problem(ws.build_chapter(&path, "Counted.{{check tensor_operations_flops.actual_num_flops}}\n"));
    assert!(
        matches!(&p.cause, Cause::BadValue { msg, .. } if msg.contains("of kind computed") && msg.contains("check!")),
        "{p}"
    );
    let p = only_problem(ws.build_chapter(&path, "Counted.{{check tensor_operations_flops.no_such_check}}\n"));
    assert!(
        matches!(&p.cause, Cause::MissingValue { name, .. } if name == "no_such_check"),
        "{p}"
    );
    let p = only_problem(ws.build_chapter(
        &path,
        "Counted.{{check tensor_operations_flops.counter_agrees format=int}}\n",
    ));
    assert!(p.to_string().contains("takes no format"), "{p}");
}

#[test]
fn a_checked_value_that_is_not_a_claim_is_refused_when_read() {
    let ws = Workspace::new();
    let mut trace = committed();
    let record = section_mut(&mut trace, "tensor_operations_flops")
        .values
        .get_mut("counter_agrees")
        .expect("the check");
    assert_eq!(record.kind, Some(Kind::Checked));
    record.value = serde_json::json!(false);
    let path = ws.write_trace("cpu", &trace);
    let err = trace::load(&path)
        .expect_err("a checked value holds its claim")
        .to_string();
    assert!(
        err.contains("tensor_operations_flops.counter_agrees") && err.contains("kind checked"),
        "{err}"
    );
}

/// The keys a claim reads.
fn keys(claim: &Claim, out: &mut Vec<(String, String)>) {
    fn expr(e: &Expr, out: &mut Vec<(String, String)>) {
        match e {
            Expr::Num(_) => {}
            Expr::Key(a) => out.push((a.section.clone(), a.name.clone())),
            Expr::Neg(x) => expr(x, out),
            Expr::Bin(_, a, b) => {
                expr(a, out);
                expr(b, out);
            }
            Expr::Call(_, args) => args.iter().for_each(|a| expr(a, out)),
        }
    }
    match claim {
        Claim::Bool(a) | Claim::Has(a) | Claim::Finite(a) => out.push((a.section.clone(), a.name.clone())),
        Claim::Not(c) => keys(c, out),
        Claim::And(a, b) | Claim::Or(a, b) => {
            keys(a, out);
            keys(b, out);
        }
        Claim::Compare(a, _, b) => {
            expr(a, out);
            expr(b, out);
        }
        Claim::Within(a, lo, hi) => [a, lo, hi].into_iter().for_each(|e| expr(e, out)),
    }
}

/// The asserts of `markdown` that read only values the code decides the same on every device
/// (givens, computed values, checks) of one section, on this trace: they belong in that
/// section's code as `check!`. An assert naming a trace, or reading a clock, the device or a
/// kernel's rounding, is the book's to decide.
fn checkable_asserts(markdown: &str, trace: &Trace) -> Vec<String> {
    let mut found = Vec::new();
    for d in find(markdown) {
        let Ok(Directive::Assert { claim, trace: None }) = &d.parsed else {
            continue;
        };
        let mut read = Vec::new();
        keys(claim, &mut read);
        let sections: std::collections::BTreeSet<&str> = read.iter().map(|(s, _)| s.as_str()).collect();
        let code_decides = read.iter().all(|(s, n)| {
            let kind = trace.value(s, n).and_then(|v| v.kind());
            matches!(kind, Some(Kind::Given | Kind::Computed | Kind::Checked))
        });
        if sections.len() == 1 && code_decides {
            found.push(format!("line {}: {}", d.line, d.text));
        }
    }
    found
}

#[test]
fn no_chapter_asserts_what_its_section_can_check() {
    let trace = committed();
    // The finder itself: a formula assert is flagged, one over a clock is not.
    let flagged = checkable_asserts(
        "A.\n{{assert tensor_operations_flops.counted_num_flops == tensor_operations_flops.actual_num_flops}}\n\
         B.\n{{assert tensor_operations_flops.actual_time > 0}}\n",
        &trace,
    );
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    assert!(flagged[0].starts_with("line 2:"), "{flagged:?}");

    let src = Path::new(ROOT).join("book/src");
    let mut offenders = Vec::new();
    for entry in std::fs::read_dir(&src).expect("book/src") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            let markdown = std::fs::read_to_string(&path).expect("a chapter");
            for a in checkable_asserts(&markdown, &trace) {
                offenders.push(format!("{}: {a}", path.display()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "facts the section's own code decides are checked there with `check!` and quoted with \
         `{{{{check …}}}}`:\n{}",
        offenders.join("\n")
    );
}
