//! Reading a trace's JSON into its schema with nothing let through that the schema does not say.
//! serde's derived structs also accept their fields as a list in declaration order
//! (`"run": [0, "2026-12-01…", …]`), which no trace writer produces and no reader would guess the
//! meaning of; [`Strict`] refuses it. Everything else is read as `serde_json::Value`'s own
//! deserializer reads it. [`plain`] then puts serde's words for a mismatch (`expected struct
//! RunInfo`, `expected u64`) in the words of the JSON file a person is looking at.

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Unexpected, Visitor};
use serde_json::Value;

/// A JSON value to deserialize from, whose structs must be JSON objects.
pub struct Strict<'a>(pub &'a Value);

fn unexpected(value: &Value) -> Unexpected<'_> {
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(_) => Unexpected::Other("a number"),
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

impl<'de> Deserializer<'de> for Strict<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Array(items) => visitor.visit_seq(Items(items.iter())),
            Value::Object(map) => visitor.visit_map(Fields {
                iter: map.iter(),
                value: None,
            }),
            scalar => scalar.deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Object(_) => self.deserialize_any(visitor),
            other => Err(de::Error::invalid_type(unexpected(other), &"an object of named fields")),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        // The schema's enums (units) are plain strings: nothing inside them to be strict about.
        self.0.deserialize_enum(name, variants, visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

struct Items<'a>(std::slice::Iter<'a, Value>);

impl<'de> SeqAccess<'de> for Items<'de> {
    type Error = serde_json::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Self::Error> {
        self.0.next().map(|v| seed.deserialize(Strict(v))).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Fields<'a> {
    iter: serde_json::map::Iter<'a>,
    value: Option<&'a Value>,
}

impl<'de> MapAccess<'de> for Fields<'de> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        let Some((key, value)) = self.iter.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        seed.deserialize(BorrowedStrDeserializer::new(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Self::Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(Strict(value)),
            None => Err(de::Error::custom("a value was asked for before its key")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// serde's message about a mismatch, in JSON's words: no Rust type names (`struct RunInfo`,
/// `u64`, `a sequence`), since the reader of the message is looking at a JSON file.
pub fn plain(message: &str) -> String {
    const WORDS: &[(&str, &str)] = &[
        ("expected u64", "expected a whole number, zero or more"),
        ("expected u32", "expected a whole number from 0 to 4294967295"),
        ("expected usize", "expected a whole number, zero or more"),
        ("expected i64", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected a list"),
        ("expected a map", "expected an object"),
        ("expected a boolean", "expected true or false"),
        ("invalid type: sequence", "invalid type: a list"),
        ("invalid type: map", "invalid type: an object"),
        ("invalid type: unit value", "invalid type: null"),
        ("invalid type: floating point", "invalid type: the number"),
        ("invalid type: integer", "invalid type: the number"),
        ("invalid type: string", "invalid type: the string"),
        ("invalid type: boolean", "invalid type: the value"),
        ("invalid value: integer", "invalid value: the number"),
        ("invalid value: floating point", "invalid value: the number"),
    ];
    let mut text = message.to_string();
    for (rust, json) in WORDS {
        text = text.replace(rust, json);
    }
    // `expected struct RunInfo`, `expected enum Unit`: the type's name says nothing in a JSON file.
    for (kind, instead) in [("struct ", "an object"), ("enum ", "one of the names the schema lists")] {
        let marker = format!("expected {kind}");
        while let Some(at) = text.find(&marker) {
            let name_start = at + marker.len();
            let name_end = text[name_start..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(text.len(), |n| name_start + n);
            text.replace_range(at..name_end, &format!("expected {instead}"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Point {
        x: u64,
        #[serde(default)]
        label: Option<String>,
        tags: Vec<String>,
    }

    fn read(value: Value) -> Result<Point, String> {
        Point::deserialize(Strict(&value)).map_err(|e| plain(&e.to_string()))
    }

    #[test]
    fn objects_read_as_serde_json_reads_them() {
        let p = read(json!({"x": 3, "label": null, "tags": ["a", "b"]})).expect("reads");
        assert_eq!(
            p,
            Point {
                x: 3,
                label: None,
                tags: vec!["a".into(), "b".into()]
            }
        );
        assert_eq!(read(json!({"x": 1, "tags": []})).expect("reads").label, None);
        // Plain `serde_json` takes the struct as a list of its fields; the strict reader does not.
        assert!(serde_json::from_value::<Point>(json!([3, null, []])).is_ok());
        let err = read(json!([3, null, []])).unwrap_err();
        assert_eq!(err, "invalid type: a list, expected an object of named fields");
    }

    #[test]
    fn messages_name_json_not_rust() {
        let err = read(json!({"x": "three", "tags": []})).unwrap_err();
        assert_eq!(
            err,
            "invalid type: the string \"three\", expected a whole number, zero or more"
        );
        let err = read(json!({"x": -1, "tags": []})).unwrap_err();
        assert!(err.contains("expected a whole number, zero or more"), "{err}");
        let err = read(json!({"x": 1, "tags": {"a": 1}})).unwrap_err();
        assert_eq!(err, "invalid type: an object, expected a list");
        assert_eq!(
            plain("invalid type: string \"a\", expected struct RunInfo"),
            "invalid type: the string \"a\", expected an object"
        );
        assert_eq!(
            plain("expected enum Unit"),
            "expected one of the names the schema lists"
        );
        let err = read(json!({"x": 1, "tags": [], "y": 2})).unwrap_err();
        assert!(err.starts_with("unknown field `y`"), "{err}");
    }
}
