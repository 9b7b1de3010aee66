//! What a trace's text says, read as it streams past, before any of it is built into a tree.
//! Building a `serde_json::Value` of a 145 MB file with a history of two million states took
//! 14–30 s (every state an object of its own) before the reader could count them and refuse; read
//! as a stream, the count passes [`MAX_HISTORY`] after a few kilobytes and the file is refused
//! there. The same stream answers "is this a trace at all?" (its `schema_version`) without a tree.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::history::MAX_HISTORY;

/// The first list in `text` longer than any run writes: a value's `history` (at most
/// [`MAX_HISTORY`] − 1 states before its final one), or a section's `steps` (one per state of its
/// values). Everything else, including text that is not JSON, is left to the full reader, which
/// says what is wrong in its own words: `Ok` means "nothing over a limit so far".
pub fn lists_within_limits(text: &str) -> Result<(), String> {
    let found = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    // The walk stops at the first error; only a limit it passed is this check's to report.
    let _ = Doc { found: &found }.deserialize(&mut de);
    found.into_inner().map_or(Ok(()), Err)
}

/// A JSON document's top-level `schema_version`: `None` when the text is not JSON,
/// `Some(None)` when it is JSON without one at its top level (or not an object), else its value.
pub fn schema_version(text: &str) -> Option<Option<Value>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let version = Version.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(version)
}

type Found<'a> = &'a RefCell<Option<String>>;

/// Records why the walk stops, and stops it.
fn refuse<E: serde::de::Error>(found: Found, msg: String) -> E {
    *found.borrow_mut() = Some(msg);
    E::custom("a list is longer than a run writes")
}

/// Declares a visitor that accepts only what the schema puts at its place; anything else ends the
/// walk (the full reader then names it).
macro_rules! visitor_for {
    ($name:ident) => {
        impl<'de> DeserializeSeed<'de> for $name<'_> {
            type Value = usize;

            fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<usize, D::Error> {
                de.deserialize_any(self)
            }
        }
    };
}

struct Doc<'a> {
    found: Found<'a>,
}
visitor_for!(Doc);

impl<'de> Visitor<'de> for Doc<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "sections" {
                map.next_value_seed(Sections { found: self.found })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(0)
    }
}

struct Sections<'a> {
    found: Found<'a>,
}
visitor_for!(Sections);

impl<'de> Visitor<'de> for Sections<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of sections")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut i = 0;
        while seq.next_element_seed(Section { found: self.found, i })?.is_some() {
            i += 1;
        }
        Ok(i)
    }
}

struct Section<'a> {
    found: Found<'a>,
    i: usize,
}
visitor_for!(Section);

impl<'de> Visitor<'de> for Section<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a section")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
        let i = self.i;
        // A run writes `id` first and `values` before `steps`; in another order the limits still
        // hold, checked once the section's end is reached.
        let (mut id, mut states, mut steps, mut values_seen) = (None::<String>, 0usize, 0usize, false);
        let too_many = |id: &Option<String>, steps: String, states: usize| {
            let name = id.as_ref().map_or(format!("sections[{i}]"), |id| format!("`{id}`"));
            format!(
                "section {name} (at `sections[{i}].steps`) lists {steps} record calls, but its values have \
                 {states} states in all, and each state is recorded by one call"
            )
        };
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "id" => id = map.next_value::<Value>()?.as_str().map(str::to_string),
                "values" => {
                    let section = id.clone().unwrap_or_else(|| format!("sections[{i}]"));
                    let more = map.next_value_seed(Values {
                        found: self.found,
                        at: i,
                        section: &section,
                    })?;
                    states = states.saturating_add(more);
                    values_seen = true;
                }
                "steps" => {
                    let limit = values_seen.then_some(states);
                    let over = too_many(&id, format!("more than {states}"), states);
                    let n = map.next_value_seed(Count {
                        found: self.found,
                        limit,
                        over,
                    })?;
                    steps = steps.saturating_add(n);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if steps > states {
            return Err(refuse(self.found, too_many(&id, steps.to_string(), states)));
        }
        Ok(states)
    }
}

/// A section's `values`: returns how many states they hold in all.
struct Values<'a> {
    found: Found<'a>,
    at: usize,
    section: &'a str,
}
visitor_for!(Values);

impl<'de> Visitor<'de> for Values<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of values")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
        let mut states = 0usize;
        while let Some(name) = map.next_key::<String>()? {
            let earlier = map.next_value_seed(Record {
                found: self.found,
                over: format!(
                    "value `{}.{name}` (at `sections[{}].values.{name}.history`) has more than {MAX_HISTORY} states, \
                     but a run keeps at most {MAX_HISTORY} of a value (trace::history::MAX_HISTORY, its history and \
                     its final state)",
                    self.section, self.at
                ),
            })?;
            states = states.saturating_add(earlier).saturating_add(1);
        }
        Ok(states)
    }
}

/// A value's record: how many earlier states its `history` holds.
struct Record<'a> {
    found: Found<'a>,
    /// What to say if the history is longer than a run keeps.
    over: String,
}
visitor_for!(Record);

impl<'de> Visitor<'de> for Record<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a value's record")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
        let mut earlier = 0usize;
        while let Some(key) = map.next_key::<String>()? {
            if key == "history" {
                earlier = map.next_value_seed(Count {
                    found: self.found,
                    limit: Some(MAX_HISTORY - 1),
                    over: self.over.clone(),
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(earlier)
    }
}

/// Counts a list's items without keeping them, and stops the walk at the first one past `limit`
/// (the rest of the list is never read), saying `over`.
struct Count<'a> {
    found: Found<'a>,
    limit: Option<usize>,
    over: String,
}
visitor_for!(Count);

impl<'de> Visitor<'de> for Count<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut n = 0usize;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
            if self.limit.is_some_and(|limit| n > limit) {
                return Err(refuse(self.found, self.over));
            }
        }
        Ok(n)
    }
}

/// The top level's `schema_version`, if the top level is an object; the rest streams past.
struct Version;

impl<'de> DeserializeSeed<'de> for Version {
    type Value = Option<Value>;

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<Option<Value>, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Version {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Value>, A::Error> {
        let mut version = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "schema_version" {
                // A repeated key keeps the last, as a parse into a tree does.
                version = Some(map.next_value::<Value>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(version)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Value>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Option<Value>, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Option<Value>, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Option<Value>, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Option<Value>, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Option<Value>, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Option<Value>, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_version_is_read_without_the_rest() {
        assert_eq!(
            schema_version(r#"{"a": [1, {"b": 2}], "schema_version": 2}"#),
            Some(Some(2.into()))
        );
        assert_eq!(
            schema_version(r#"{"schema_version": 1, "schema_version": "x"}"#),
            Some(Some("x".into()))
        );
        assert_eq!(schema_version(r#"{"name": "package"}"#), Some(None));
        assert_eq!(schema_version("[1, 2]"), Some(None));
        assert_eq!(schema_version("3"), Some(None));
        assert_eq!(schema_version(r#"{"schema_version": 2"#), None);
        assert_eq!(schema_version(r#"{"schema_version": 2} x"#), None);
    }

    #[test]
    fn only_a_list_over_its_limit_is_refused() {
        let history = |n: usize| vec![r#"{"value": 1, "line": 3}"#; n].join(",");
        let doc = |n: usize, steps: usize| {
            let steps = vec![r#"["x", 0]"#; steps].join(",");
            format!(
                r#"{{"sections": [{{"id": "s", "values": {{"x": {{"value": 1, "history": [{}]}}}}, "steps": [{steps}]}}]}}"#,
                history(n)
            )
        };
        assert_eq!(lists_within_limits(&doc(MAX_HISTORY - 1, MAX_HISTORY)), Ok(()));
        let err = lists_within_limits(&doc(MAX_HISTORY, 1)).unwrap_err();
        assert!(
            err.starts_with("value `s.x` (at `sections[0].values.x.history`) has more than 64"),
            "{err}"
        );
        let err = lists_within_limits(&doc(1, 3)).unwrap_err();
        assert!(
            err.starts_with("section `s` (at `sections[0].steps`) lists more than 2 record calls"),
            "{err}"
        );
        // What is not JSON, or not a trace, is the full reader's to name.
        assert_eq!(lists_within_limits("{"), Ok(()));
        assert_eq!(lists_within_limits(r#"{"sections": 3}"#), Ok(()));
    }
}
