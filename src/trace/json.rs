//! Floats as JSON. JSON has no NaN or infinity, but a diverged loss is a result worth keeping, so
//! non-finite values become the strings "NaN", "inf" and "-inf" and are read back as numbers.

use serde_json::Value;

/// A JSON number for a float; non-finite values become "NaN", "inf" or "-inf".
pub fn json_number(x: f64) -> Value {
    match serde_json::Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None if x.is_nan() => Value::from("NaN"),
        None if x > 0.0 => Value::from("inf"),
        None => Value::from("-inf"),
    }
}

/// Reads a number written by `json_number` back.
pub fn number_from_json(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}
