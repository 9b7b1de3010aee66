//! The sections' registry (`src/lecture/sections/mod.rs`) is the one place that says what is about
//! a section: the charts it draws and its Devices rows reach the book through the trace, and the
//! book follows what the trace says.

use crate::common;

use common::{Workspace, fresh_trace, only_problem, section_mut};
use cs336::book::Cause;
use cs336::book::chart::CHARTS;
use cs336::lecture::SECTIONS;

/// Every chart the book can draw is declared by exactly one section, and every declared chart is
/// one the book can draw.
#[test]
fn every_chart_belongs_to_one_section() {
    for chart in CHARTS {
        let owners: Vec<&str> = SECTIONS
            .iter()
            .filter(|s| s.charts.contains(&chart.id))
            .map(|s| s.id)
            .collect();
        assert_eq!(owners.len(), 1, "chart `{}` is declared by {owners:?}", chart.id);
    }
    for s in SECTIONS {
        for id in s.charts {
            assert!(
                CHARTS.iter().any(|c| c.id == *id),
                "`{}` declares `{id}`, which the book cannot draw",
                s.id
            );
        }
    }
}

/// A run records its registry entries' charts and rows, each row's format is one the book reads,
/// and each row names values some committed trace holds (on a CPU, the GPU-only ones are absent).
#[test]
fn the_run_records_the_registry_and_the_rows_name_recorded_values() {
    let fresh = fresh_trace();
    let committed = common::committed_traces();
    for def in SECTIONS {
        let s = fresh.section(def.id).expect("the fresh run has every section");
        let charts: Vec<&str> = s.charts.iter().map(String::as_str).collect();
        assert_eq!(charts, def.charts, "{}", def.id);
        let rows: Vec<_> = def.devices.iter().map(|r| r.to_trace()).collect();
        assert_eq!(s.devices, rows, "{}", def.id);
        for r in def.devices {
            assert!(
                r.format.parse::<cs336::book::format::Format>().is_ok(),
                "{}: row {:?} has format `{}`",
                def.id,
                r.label,
                r.format
            );
            for name in std::iter::once(r.value).chain(r.over) {
                let held = committed
                    .iter()
                    .any(|(_, t)| t.section(def.id).is_some_and(|s| s.values.contains_key(name)));
                assert!(
                    held,
                    "{}: row {:?} names `{name}`, which no committed trace holds",
                    def.id, r.label
                );
            }
        }
    }
}

/// The Devices table's rows are the ones the traces declare: a label changed in a trace is the
/// label the page shows, and a row no trace declares is gone.
#[test]
fn the_devices_rows_come_from_the_trace() {
    let ws = Workspace::new();
    let mut trace = fresh_trace().clone();
    let flops = section_mut(&mut trace, "tensor_operations_flops");
    flops.devices[0].label = "THE DECLARED LABEL".to_string();
    let mfu = flops.devices.iter().position(|r| r.value == "mfu").expect("an MFU row");
    flops.devices.remove(mfu);
    let path = ws.write_trace("cpu", &trace);
    let html = ws.build_chapter(&path, "{{devices}}\n").expect("builds");
    assert!(html.contains("THE DECLARED LABEL"), "{html}");
    assert!(!html.contains("float32 matmul at the lecture"), "{html}");
    assert!(!html.contains("tensor_operations_flops.mfu"), "{html}");
    assert!(html.contains("tensor_operations_flops.bf16_mfu"), "{html}");
}

/// A trace older than the registry declares no charts: its chart is still drawn when another trace
/// of the folder declares whose values it reads, and refused, saying why, when none does.
#[test]
fn a_chart_finds_its_section_in_another_trace_or_says_why_not() {
    let ws = Workspace::new();
    let mut older = fresh_trace().clone();
    for s in &mut older.sections {
        s.charts.clear();
        s.devices.clear();
    }
    let path = ws.write_trace("cpu", &older);
    let p = only_problem(ws.build_chapter(&path, "{{chart init_std}}\n"));
    assert!(matches!(p.cause, Cause::Chart { .. }), "{p}");
    assert!(p.to_string().contains("older than the sections' registry"), "{p}");
    ws.write_trace("nvidia-h200", fresh_trace());
    let html = ws
        .build_chapter(&path, "{{chart init_std}}\n")
        .expect("another trace declares it");
    assert!(html.contains("<svg"), "{html}");
}
