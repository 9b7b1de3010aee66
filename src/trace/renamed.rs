//! Values renamed since traces were recorded. A trace keeps the names its run used; the reader
//! gives an older trace's values their current names as it loads it, so that the book, `lecture
//! get` and a comparison see one name per value whichever run recorded it. Only a run on the
//! device itself could record the value again under its new name, and a GPU's trace waits for one.

use std::collections::BTreeMap;

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
/// recorded them, and the Devices rows that show them. A value whose new name the section already
/// holds keeps its old one (the reader's duplicate checks then see what was written), and so do
/// its steps and rows; the others are renamed.
pub fn apply(trace: &mut Trace) {
    for section in &mut trace.sections {
        let id = section.id.clone();
        let renamed: BTreeMap<String, String> = section
            .values
            .keys()
            .filter_map(|old| {
                let new = current(&id, old);
                (new != old && !section.values.contains_key(new)).then(|| (old.clone(), new.to_string()))
            })
            .collect();
        if renamed.is_empty() {
            continue;
        }
        let name_of = |name: &str| renamed.get(name).map_or(name, String::as_str).to_string();
        let values = std::mem::take(&mut section.values);
        section.values = values
            .into_iter()
            .map(|(name, record)| (name_of(&name), record))
            .collect();
        for (name, _) in &mut section.steps {
            *name = name_of(name);
        }
        let path_of = |path: &str| match path.split_once('.') {
            Some((name, rest)) => format!("{}.{rest}", name_of(name)),
            None => name_of(path),
        };
        for row in &mut section.devices {
            row.value = path_of(&row.value);
            if let Some(over) = &mut row.over {
                *over = path_of(over);
            }
        }
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

    /// A section holding a value under both its old and its new name keeps both, and its other
    /// old names are still renamed: no value is dropped by a name collision.
    #[test]
    fn a_value_whose_new_name_is_taken_keeps_its_old_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../trace/lecture_02/nvidia-h200.json");
        let text = std::fs::read_to_string(path).expect("the committed H200 trace");
        let mut trace: Trace = serde_json::from_str(&text).expect("a trace");
        let section = trace
            .sections
            .iter_mut()
            .find(|s| s.id == "tensor_operations_flops")
            .expect("the FLOPs section");
        let loop_record = section.values["promised_flop_per_sec"].clone();
        section.values.insert("peak_source".into(), loop_record.clone());
        let count = section.values.len();
        apply(&mut trace);
        let s = trace.section("tensor_operations_flops").expect("the FLOPs section");
        assert_eq!(s.values.len(), count, "no value lost");
        assert!(s.values.contains_key("promised_peak_source") && s.values.contains_key("peak_source"));
        assert_eq!(s.values.get("peak_flop_per_sec"), Some(&loop_record));
    }
}
