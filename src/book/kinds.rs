//! How the book shows what decided a value (its kind, read from the trace): a measured number is
//! underlined, a computed one faintly, a given one not at all, so a reader sees at a glance which
//! numbers this machine produced and which the lecture chose. Hovering says which, in words.

use crate::trace::{Kind, ValueRecord};

/// The CSS class of a value's kind (`book/theme/lecture.css`). A value an older run recorded
/// without a kind is shown as measured: the cautious reading.
pub fn class(record: &ValueRecord) -> &'static str {
    match record.kind() {
        Some(Kind::Given) => "lecture-given",
        Some(Kind::Computed) => "lecture-computed",
        Some(Kind::Checked) => "lecture-checked",
        _ => "lecture-measured",
    }
}

/// The kind in words, for a hover.
pub fn words(record: &ValueRecord) -> &'static str {
    record
        .kind()
        .map_or("recorded by older code, which did not say what decided it", kind_words)
}

/// A known kind in words.
pub fn kind_words(kind: Kind) -> &'static str {
    match kind {
        Kind::Given => "given: the lecture chose it",
        Kind::Computed => "computed from the lecture's choices: the same on every machine",
        Kind::Clock => "measured: a clock decided it",
        Kind::Device => "measured: this machine decided it",
        Kind::Rounding => "measured: the rounding of the kernel that ran decided it",
        Kind::Checked => "checked by the run where it computed it: a check that fails stops the run",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_class_and_words_and_a_value_without_one_reads_as_measured() {
        let mut v: ValueRecord =
            serde_json::from_value(serde_json::json!({"value": 1, "unit": "count", "line": 3})).expect("a value");
        assert_eq!((class(&v), words(&v)), ("lecture-measured", words(&v)));
        assert!(words(&v).contains("older code"));
        let mut seen = Vec::new();
        for kind in Kind::ALL {
            v.kind = Some(kind);
            seen.push((class(&v), words(&v)));
        }
        assert_eq!(
            seen.iter().map(|s| s.0).collect::<Vec<_>>(),
            [
                "lecture-given",
                "lecture-computed",
                "lecture-measured",
                "lecture-measured",
                "lecture-measured",
                "lecture-checked"
            ]
        );
        let mut words: Vec<&str> = seen.iter().map(|s| s.1).collect();
        words.dedup();
        assert_eq!(words.len(), Kind::ALL.len(), "each kind its own words");
    }
}
