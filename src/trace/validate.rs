//! Checks a trace file passes beyond its schema, each naming the place that is wrong: no JSON
//! object repeats a key (a parse into a map would silently keep the last), no section id appears
//! twice, a value recorded with a unit holds numbers, and a checked fact holds its claim.
//! Optional fields (such as `memory_bytes`) may still be null: the schema says which are.

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::history::MAX_HISTORY;
use super::schema::{Kind, Trace, Unit};
use crate::json::number_from_json;

/// The first key that an object of `text` (valid JSON) repeats, with its place.
pub fn duplicate_keys(text: &str) -> Result<(), String> {
    let mut de = serde_json::Deserializer::from_str(text);
    Unique { at: "" }.deserialize(&mut de).map_err(|e| e.to_string())
}

/// The first whole number in `text` (valid JSON) that a 64-bit integer cannot hold. serde_json
/// reads such a number as the nearest float (`123456789012345678901234567890` becomes
/// `1.2345678901234568e29`), and a merge would write the rounded number back over the file's.
pub fn exact_integers(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let (mut i, mut line, mut in_string) = (0, 1usize, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'\n' => line += 1,
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len() && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                let token = &text[start..i];
                let whole = !token.contains(['.', 'e', 'E']);
                if whole && token.parse::<i64>().is_err() && token.parse::<u64>().is_err() {
                    let read_as = token.parse::<f64>().map_or_else(|_| "?".into(), |x| format!("{x:e}"));
                    return Err(format!(
                        "line {line}: the whole number {} is larger than a trace keeps exactly (64 bits): it would \
                         be read as {read_as}, and written back rounded",
                        shorten(token)
                    ));
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// Section ids held once; values with a unit hold numbers.
pub fn contents(trace: &Trace) -> Result<(), String> {
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (i, section) in trace.sections.iter().enumerate() {
        if let Some(j) = first.insert(&section.id, i) {
            return Err(format!(
                "duplicate section `{}` (sections[{j}] and sections[{i}]); a trace holds each section once",
                section.id
            ));
        }
        if let Some(d) = &section.disturbed {
            disturbance(d)
                .map_err(|what| format!("section `{}` (at `sections[{i}].disturbed`): {what}", section.id))?;
        }
        // A run keeps at most `MAX_HISTORY` states of a value (evenly spaced beyond it), so a
        // longer history, or more record calls than states, was not written by a run: refused here,
        // before the book lays out every state (two million of them took minutes).
        let mut states_in_all = 0;
        for (name, record) in &section.values {
            if record.num_states() > MAX_HISTORY {
                return Err(format!(
                    "value `{}.{name}` (at `sections[{i}].values.{name}.history`) has {} states, but a run keeps at \
                     most {MAX_HISTORY} of a value (trace::history::MAX_HISTORY, its history and its final state)",
                    section.id,
                    record.num_states()
                ));
            }
            states_in_all += record.num_states();
        }
        if section.steps.len() > states_in_all {
            return Err(format!(
                "section `{}` (at `sections[{i}].steps`) lists {} record calls, but its values have {states_in_all} \
                 states in all, and each state is recorded by one call",
                section.id,
                section.steps.len()
            ));
        }
        for (name, record) in &section.values {
            // A check is recorded once, and only when it held: its value is the claim.
            let claim_only = record.value.is_string() && record.history.is_empty() && record.unit == Unit::None;
            if record.kind() == Some(Kind::Checked) && !claim_only {
                return Err(format!(
                    "value `{}.{name}` (at `sections[{i}].values.{name}`) is of kind checked, but is not what a run \
                     records for a check: its claim as text, once, without a unit",
                    section.id
                ));
            }
            // The final value and every earlier state: a merge writes them all back.
            let states = std::iter::once(("value".to_string(), &record.value)).chain(
                record
                    .history
                    .iter()
                    .enumerate()
                    .map(|(k, h)| (format!("history[{k}].value"), &h.value)),
            );
            for (at, value) in states {
                let Some(bad) = misfit(value, record.unit) else {
                    continue;
                };
                let unit = serde_json::to_value(record.unit).unwrap_or_default();
                let unit = unit.as_str().unwrap_or("?");
                return Err(format!(
                    "value `{}.{name}` (at `sections[{i}].values.{name}.{at}`) has unit {unit} but holds `{}`: \
                     a value with a unit is a number, or a list or object of numbers{}",
                    section.id,
                    shorten(&bad.to_string()),
                    if finite_only(record.unit) {
                        "; bytes, FLOP and counts are whole numbers, zero or more"
                    } else {
                        " (\"NaN\", \"inf\" and \"-inf\" stand for the non-finite ones)"
                    }
                ));
            }
        }
    }
    Ok(())
}

/// A disturbance's shares lie in [0, 1] and its spread (a ratio of quartiles) is at least 1.
fn disturbance(d: &super::schema::Disturbance) -> Result<(), String> {
    for (name, share) in [("others", d.others), ("steal", d.steal)] {
        if let Some(x) = share.filter(|x| !(0.0..=1.0).contains(x)) {
            return Err(format!("`{name}` is {x}, but a share of the CPU time lies from 0 to 1"));
        }
    }
    if let Some(x) = d.spread.filter(|x| x.is_nan() || *x < 1.0) {
        return Err(format!(
            "`spread` is {x}, but a third quartile over a first is at least 1"
        ));
    }
    if let Some(x) = d.load.filter(|x| x.is_nan() || *x < 0.0) {
        return Err(format!("`load` is {x}, but a load average is zero or more"));
    }
    Ok(())
}

/// At most a few hundred characters of a value, for a message.
fn shorten(text: &str) -> String {
    crate::console::shorten(text, 200)
}

/// Bytes, FLOP and counts are finite quantities; times, rates and ratios may be measured as
/// infinite or NaN (a rate over no time, a diverged loss ratio).
fn finite_only(unit: Unit) -> bool {
    matches!(unit, Unit::Bytes | Unit::Flop | Unit::Count)
}

/// The first part of `value` that a value of `unit` cannot hold.
fn misfit(value: &Value, unit: Unit) -> Option<&Value> {
    match value {
        _ if unit == Unit::None => None,
        Value::Number(_) if finite_only(unit) => {
            let whole = number_from_json(value).is_some_and(|x| x >= 0.0 && x.fract() == 0.0);
            (!whole).then_some(value)
        }
        Value::Number(_) => None,
        Value::String(_) if !finite_only(unit) && number_from_json(value).is_some() => None,
        Value::Array(items) => items.iter().find_map(|v| misfit(v, unit)),
        Value::Object(map) => map.values().find_map(|v| misfit(v, unit)),
        other => Some(other),
    }
}

/// Walks a JSON document, refusing an object that repeats a key. `at` is the place in the
/// document, written as in the schema's own messages (`sections[2].values.bytes`).
struct Unique<'a> {
    at: &'a str,
}

impl Unique<'_> {
    fn child(&self, step: &str) -> String {
        if self.at.is_empty() {
            step.to_string()
        } else if step.starts_with('[') {
            format!("{}{step}", self.at)
        } else {
            format!("{}.{step}", self.at)
        }
    }
}

impl<'de> DeserializeSeed<'de> for Unique<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Unique<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while seq
            .next_element_seed(Unique {
                at: &self.child(&format!("[{i}]")),
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                let place = if self.at.is_empty() {
                    "the top level".to_string()
                } else {
                    format!("`{}`", self.at)
                };
                return Err(A::Error::custom(format!("duplicate key `{key}` in {place}")));
            }
            map.next_value_seed(Unique { at: &self.child(&key) })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_are_named_with_their_place() {
        assert_eq!(duplicate_keys(r#"{"a": [1, {"b": 2}], "c": {"d": null}}"#), Ok(()));
        let err = duplicate_keys(r#"{"a": [1, {"b": 2, "b": 3}]}"#).unwrap_err();
        assert!(err.starts_with("duplicate key `b` in `a[1]`"), "{err}");
        let err = duplicate_keys(r#"{"x": 1, "x": 1}"#).unwrap_err();
        assert!(err.starts_with("duplicate key `x` in the top level"), "{err}");
        // Deep nesting meets serde_json's recursion limit, not the stack's.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(duplicate_keys(&deep).unwrap_err().contains("recursion limit"));
    }

    #[test]
    fn whole_numbers_beyond_64_bits_are_refused_with_their_line() {
        assert_eq!(
            exact_integers(r#"{"a": [1, -9223372036854775808, 18446744073709551615]}"#),
            Ok(())
        );
        // Floats are floats: their digits past a double's are expected to round.
        assert_eq!(exact_integers(r#"{"a": 1.23456789012345678901234567890e29}"#), Ok(()));
        // Digits inside strings are text.
        assert_eq!(
            exact_integers(r#"{"a": "123456789012345678901234567890 \" 1"}"#),
            Ok(())
        );
        let err = exact_integers("{\n\"a\": 1,\n\"b\": 123456789012345678901234567890}").unwrap_err();
        assert!(
            err.starts_with("line 3: the whole number 123456789012345678901234567890"),
            "{err}"
        );
        assert!(err.contains("1.2345678901234568e29"), "{err}");
        assert!(exact_integers("[18446744073709551616]").is_err());
        assert!(exact_integers("[-9223372036854775809]").is_err());
    }

    #[test]
    fn values_with_units_hold_numbers() {
        use serde_json::json;
        assert_eq!(misfit(&json!(3), Unit::Bytes), None);
        assert_eq!(misfit(&json!([1, [2, 3]]), Unit::Count), None);
        // Bytes, FLOP and counts are whole and not negative; times and rates need not be.
        assert_eq!(misfit(&json!([1, [2.5, 3]]), Unit::Count), Some(&json!(2.5)));
        assert_eq!(misfit(&json!(-1), Unit::Bytes), Some(&json!(-1)));
        assert_eq!(misfit(&json!(-1.5), Unit::Seconds), None);
        assert_eq!(misfit(&json!("inf"), Unit::FlopPerSec), None);
        assert_eq!(misfit(&json!("inf"), Unit::Flop), Some(&json!("inf")));
        assert_eq!(misfit(&json!({"a": true}), Unit::Seconds), Some(&json!(true)));
        assert_eq!(misfit(&json!(null), Unit::Ratio), Some(&Value::Null));
        assert_eq!(misfit(&json!("nan"), Unit::Seconds), Some(&json!("nan")));
        assert_eq!(misfit(&json!(["x", null]), Unit::None), None);
    }
}
