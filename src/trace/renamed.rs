//! Values renamed since traces were recorded. A trace keeps the names its run used; the reader
//! gives an older trace's values their current names as it loads it, so that the book, `lecture
//! get` and a comparison see one name per value whichever run recorded it. Only a run on the
//! device itself could record the value again under its new name, and a GPU's trace waits for one.

use super::schema::Trace;

/// `(section, old name, new name)`.
const RENAMED: &[(&str, &str, &str)] = &[
    // A CPU's peak is measured, not promised: the peak an MFU divides by, whatever its source.
    ("tensor_operations_flops", "promised_flop_per_sec", "peak_flop_per_sec"),
    ("tensor_operations_flops", "promised_peak_source", "peak_source"),
    ("tensor_operations_flops", "promised_peak_loop", "peak_loop"),
    (
        "tensor_operations_flops",
        "bf16_promised_flop_per_sec",
        "bf16_peak_flop_per_sec",
    ),
    (
        "tensor_operations_flops",
        "bf16_promised_peak_source",
        "bf16_peak_source",
    ),
    ("tensor_operations_flops", "bf16_promised_peak_loop", "bf16_peak_loop"),
    (
        "tensor_operations_flops",
        "fp32_default_promised_flop_per_sec",
        "fp32_default_peak_flop_per_sec",
    ),
    (
        "tensor_operations_flops",
        "fp32_default_promised_peak_source",
        "fp32_default_peak_source",
    ),
    (
        "tensor_operations_flops",
        "tf32_promised_flop_per_sec",
        "tf32_peak_flop_per_sec",
    ),
    (
        "tensor_operations_flops",
        "tf32_promised_peak_source",
        "tf32_peak_source",
    ),
];

/// The current name of value `name` of `section`.
fn current<'a>(section: &str, name: &'a str) -> &'a str {
    RENAMED
        .iter()
        .find(|(s, old, _)| *s == section && *old == name)
        .map_or(name, |(_, _, new)| new)
}

/// Gives every value of `trace` its current name: in the values (in their order), the steps that
/// recorded them, and the Devices rows that show them. A trace holding both an old name and its
/// new one keeps both as they are (the reader's duplicate checks then see what was written).
pub fn apply(trace: &mut Trace) {
    for section in &mut trace.sections {
        let id = section.id.clone();
        let renames = |name: &str| current(&id, name) != name && !section.values.contains_key(current(&id, name));
        if !section.values.keys().any(|k| renames(k)) {
            continue;
        }
        let values = std::mem::take(&mut section.values);
        section.values = values
            .into_iter()
            .map(|(name, record)| (current(&id, &name).to_string(), record))
            .collect();
        for (name, _) in &mut section.steps {
            *name = current(&id, name).to_string();
        }
        for row in &mut section.devices {
            row.value = rename_path(&id, &row.value);
            if let Some(over) = &mut row.over {
                *over = rename_path(&id, over);
            }
        }
    }
}

/// `NAME[.PATH]` with its name current.
fn rename_path(section: &str, path: &str) -> String {
    match path.split_once('.') {
        Some((name, rest)) => format!("{}.{rest}", current(section, name)),
        None => current(section, path).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::apply;
    use crate::schema::Trace;

    /// The H200's trace as committed, recorded before the rename: its peaks read under their new
    /// names, in the values, the steps and the Devices rows, with their values unchanged.
    #[test]
    fn an_older_trace_reads_under_the_current_names() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../trace/lecture_02/nvidia-h200.json");
        let text = std::fs::read_to_string(path).expect("the committed H200 trace");
        let mut trace: Trace = serde_json::from_str(&text).expect("a trace");
        let old = trace
            .value("tensor_operations_flops", "promised_flop_per_sec")
            .map(|v| v.value.clone());
        assert!(old.is_some(), "recorded under the old name");
        apply(&mut trace);
        let s = trace.section("tensor_operations_flops").expect("the FLOPs section");
        assert_eq!(s.values.get("peak_flop_per_sec").map(|v| v.value.clone()), old);
        assert!(
            !s.values.keys().any(|k| k.contains("promised")),
            "{:?}",
            s.values.keys()
        );
        assert!(!s.steps.iter().any(|(n, _)| n.contains("promised")));
        assert!(s.devices.iter().any(|r| r.value == "bf16_peak_flop_per_sec"));
        assert!(!s.devices.iter().any(|r| r.value.contains("promised")));
    }
}
