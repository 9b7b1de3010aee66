//! The spec's invariants for the compute and training sections, checked on a fresh in-process
//! CPU run and on every committed trace under trace/ (a trace without a section fails; a GPU
//! trace's sections recorded by older code are set aside, and the run says so). Exact where the
//! value is knowable: rates are FLOPs over time and MFUs rates over peaks to the bit.

mod accumulation;
mod data_optimizer;
mod gradients_models;
mod speed;
mod training;
mod what_if;

#[path = "../common/mod.rs"]
mod common;

use std::sync::{Mutex, OnceLock};

use indexmap::IndexMap;
use serde_json::Value;

use cs336::device::{Device, DeviceChoice};
use cs336::lecture::{self, run};
use cs336::trace::{SectionRecord, ValueRecord, number_from_json};

type Values = IndexMap<String, ValueRecord>;

/// Sections that time things run one at a time, so they do not slow each other down.
fn timing_lock() -> &'static Mutex<()> {
    static LOCK: OnceLock<Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| Mutex::new(()))
}

fn fresh(id: &str) -> SectionRecord {
    let _guard = timing_lock().lock().unwrap_or_else(|e| e.into_inner());
    common::test_budget();
    let def = lecture::find(id).unwrap_or_else(|| panic!("no section {id}"));
    let choice = DeviceChoice {
        device: Device::Cpu,
        cuda_unavailable_reason: None,
    };
    let run = cs336::lecture::provenance::run(0, std::path::Path::new(common::ROOT));
    run::run_section(def, &choice, &run).unwrap_or_else(|e| panic!("{e}"))
}

fn num(v: &Values, name: &str) -> f64 {
    let rec = v.get(name).unwrap_or_else(|| panic!("value `{name}` missing"));
    number_from_json(&rec.value).unwrap_or_else(|| panic!("`{name}` is not a number: {}", rec.value))
}

fn val<'a>(v: &'a Values, name: &str) -> &'a Value {
    &v.get(name).unwrap_or_else(|| panic!("value `{name}` missing")).value
}

fn floats(x: &Value) -> Vec<f64> {
    match x {
        Value::Array(items) => items.iter().flat_map(floats).collect(),
        other => vec![number_from_json(other).unwrap_or_else(|| panic!("not a number: {other}"))],
    }
}

/// The states of a value recorded as a history (earlier states, then the final one).
fn states(v: &Values, name: &str) -> Vec<Value> {
    let rec = v.get(name).unwrap_or_else(|| panic!("value `{name}` missing"));
    (0..rec.num_states())
        .map(|k| rec.state(k).expect("a state").value)
        .collect()
}

use accumulation::*;
use data_optimizer::*;
use gradients_models::*;
use speed::*;
use training::*;

/// The sections these invariants check, each named once: the dispatch by id, the list of ids and
/// one test per section running it fresh are all made from this table.
macro_rules! checked_sections {
    ($($id:ident => $check:expr),* $(,)?) => {
        fn check(id: &str, v: &Values, cpu: bool) {
            match id {
                $(stringify!($id) => ($check)(v, cpu),)*
                other => panic!("no checks for {other}"),
            }
        }

        const SECTIONS: &[&str] = &[$(stringify!($id)),*];

        $(
            #[test]
            fn $id() {
                let record = fresh(stringify!($id));
                check(stringify!($id), &record.values, true);
                if let Some(isa) = record.values.get("bf16_matmul_isa") {
                    assert_eq!(isa.value, Value::from(cs336::device::cpu::bf16_matmul_isa()), "bf16_matmul_isa");
                }
            }
        )*
    };
}

checked_sections!(
    tensor_operations_flops => check_tensor_operations_flops,
    gradients_basics => |v: &Values, _cpu: bool| check_gradients_basics(v),
    gradients_flops => check_gradients_flops,
    deep_network => |v: &Values, _cpu: bool| check_deep_network(v),
    module_parameters => |v: &Values, _cpu: bool| check_module_parameters(v),
    custom_model => |v: &Values, _cpu: bool| check_custom_model(v),
    note_about_randomness => |v: &Values, _cpu: bool| check_note_about_randomness(v),
    data_loading => check_data_loading,
    optimizer => |v: &Values, _cpu: bool| check_optimizer(v),
    gradient_accumulation => |v: &Values, _cpu: bool| check_gradient_accumulation(v),
    checkpoint_schedule => check_checkpoint_schedule,
    train_loop => |v: &Values, _cpu: bool| check_train_loop(v),
    checkpointing => |v: &Values, _cpu: bool| check_checkpointing(v),
    mixed_precision_training => |v: &Values, _cpu: bool| check_mixed_precision_training(v),
);

/// Every section the table names is one of the lecture's (a renamed section fails here, by name).
#[test]
fn the_checked_sections_are_the_lectures() {
    for id in SECTIONS {
        assert!(lecture::find(id).is_some(), "`{id}` is no section of the lecture");
    }
}

/// Values that do not depend on timing are bit-identical across runs with the same seed.
#[test]
fn seed_reproducibility() {
    for id in [
        "module_parameters",
        "custom_model",
        "deep_network",
        "checkpoint_schedule",
        "optimizer",
        "train_loop",
        "checkpointing",
        "mixed_precision_training",
        "data_loading",
    ] {
        let (a, b) = (fresh(id), fresh(id));
        assert_eq!(a.values, b.values, "{id} differs between two runs with seed 0");
    }
}

#[test]
fn committed_traces_hold_the_invariants() {
    let traces = common::checkable_traces();
    assert!(!traces.is_empty(), "no committed traces under trace/: nothing to check");
    let mut checked: Vec<&str> = Vec::new();
    for c in &traces {
        let cpu = c.trace.provenance.device.kind == "cpu";
        for id in SECTIONS {
            // A trace missing a section fails here; one set aside as older code's is skipped.
            let Some(s) = common::section_to_check(c, id) else {
                continue;
            };
            // Captured, and shown beside the panic when a check fails.
            eprintln!("checking {id} of {}", c.path.display());
            check(id, &s.values, cpu);
            if *id == "tensor_operations_flops" && cpu {
                // The kernel the section names is the one the trace says this CPU used.
                assert_eq!(
                    s.values["bf16_matmul_isa"].value,
                    c.trace.provenance.device.details["bf16_matmul_isa"],
                    "{}: tensor_operations_flops.bf16_matmul_isa is the trace's provenance.device.details.bf16_matmul_isa",
                    c.path.display()
                );
            }
            checked.push(id);
        }
    }
    let unchecked: Vec<&&str> = SECTIONS.iter().filter(|id| !checked.contains(id)).collect();
    assert!(
        unchecked.is_empty(),
        "no committed trace holds a current {unchecked:?} to check"
    );
}
