//! Turning a recorded value into the text a reader sees. The unit decides the default form (bytes
//! in IEC units, FLOP and FLOP/s in scientific form, seconds scaled to s/ms/µs, ratios as
//! percentages); a directive can ask for another form with `format=…`. The output is plain text:
//! escaping for HTML is the caller's job.

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::trace::{Unit, number_from_json};

mod notation;

pub use notation::plain;
use notation::{DEFAULT_DIGITS, eng, grouped, iec, percent, sci, si, sig, with_word};

/// How to write a value. Digits after a form's name set its precision: significant digits for
/// `sci`, `eng`, `si`, `iec` and `percent`, decimals for `fixed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// By unit (see the module docs).
    Auto,
    /// Shortest text that reads back as the same float: exactly what was recorded.
    Plain,
    /// Integer with thousands separators: `2,415,919,104 bytes`.
    Int,
    /// Scientific: `6.3e24 FLOP`.
    Sci(Option<usize>),
    /// Engineering: exponent a multiple of three, `314e21 FLOP`.
    Eng(Option<usize>),
    /// Decimal prefixes: `80 GB`, `989.5 TFLOP/s`, `12 ms`.
    Si(Option<usize>),
    /// Binary prefixes: `2.25 GiB`.
    Iec(Option<usize>),
    /// A fixed number of decimals: `143.93`.
    Fixed(usize),
    /// Times 100 with a percent sign: `50%`.
    Percent(Option<usize>),
    /// The recorded JSON, compact.
    Json,
}

/// Every form's name, for messages.
pub const FORMAT_NAMES: &str = "auto, plain, int, sci[N], eng[N], si[N], iec[N], fixed[N], percent[N], json";

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        let split = s.find(|c: char| c.is_ascii_digit()).unwrap_or(s.len());
        let (name, digits) = s.split_at(split);
        let n = if digits.is_empty() {
            None
        } else {
            match digits.parse::<usize>() {
                Ok(n) if (1..=17).contains(&n) || (name == "fixed" && n <= 17) => Some(n),
                _ => return Err(format!("`{s}`: precision must be a number from 1 to 17")),
            }
        };
        let no_digits = |f: Format| {
            if n.is_some() {
                Err(format!("`{s}`: `{name}` takes no precision"))
            } else {
                Ok(f)
            }
        };
        match name {
            "auto" => no_digits(Format::Auto),
            "plain" => no_digits(Format::Plain),
            "int" => no_digits(Format::Int),
            "json" => no_digits(Format::Json),
            "sci" => Ok(Format::Sci(n)),
            "eng" => Ok(Format::Eng(n)),
            "si" => Ok(Format::Si(n)),
            "iec" => Ok(Format::Iec(n)),
            "fixed" => Ok(Format::Fixed(n.unwrap_or(2))),
            "percent" => Ok(Format::Percent(n)),
            _ => Err(format!("unknown format `{s}` (formats: {FORMAT_NAMES})")),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let with = |f: &mut fmt::Formatter<'_>, name: &str, n: &Option<usize>| match n {
            Some(n) => write!(f, "{name}{n}"),
            None => write!(f, "{name}"),
        };
        match self {
            Format::Auto => write!(f, "auto"),
            Format::Plain => write!(f, "plain"),
            Format::Int => write!(f, "int"),
            Format::Json => write!(f, "json"),
            Format::Sci(n) => with(f, "sci", n),
            Format::Eng(n) => with(f, "eng", n),
            Format::Si(n) => with(f, "si", n),
            Format::Iec(n) => with(f, "iec", n),
            Format::Fixed(n) => write!(f, "fixed{n}"),
            Format::Percent(n) => with(f, "percent", n),
        }
    }
}

/// Writes `value` recorded with `unit` in form `format`.
pub fn format_value(value: &Value, unit: Unit, format: Format) -> Result<String, String> {
    if format == Format::Json {
        return Ok(value.to_string());
    }
    let number = match value {
        Value::Number(_) => number_from_json(value),
        // Non-finite floats are recorded as strings ("NaN", "inf"); a numeric unit or a number
        // form says they are numbers (as in a list with an explicit form).
        Value::String(_) if unit != Unit::None || !matches!(format, Format::Auto | Format::Plain) => {
            number_from_json(value)
        }
        _ => None,
    };
    match (number, format) {
        (Some(x), _) => format_number(x, unit, format),
        (None, Format::Auto | Format::Plain) => Ok(format_other(value)),
        // A list or object with an explicit form: every number in it takes that form.
        (None, _) if value.is_array() || value.is_object() => {
            format_number(1.0, unit, format)?;
            Ok(compact_with(value, &|v| {
                number_from_json(v)
                    .and_then(|x| format_number(x, unit, format).ok())
                    .unwrap_or_else(|| v.to_string())
            }))
        }
        (None, _) => Err(format!(
            "format `{format}` needs a number, but the value is {}",
            describe(value)
        )),
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::String(s) => format!("the string {s:?}"),
        other => format!("`{other}`"),
    }
}

/// Strings as they are; a tensor kept as a summary by its statistics; lists and objects as
/// compact JSON with numbers written plainly.
fn format_other(value: &Value) -> String {
    if let Some(stats) = crate::trace::summary::statistics_of(value) {
        let number = |x: f64| auto(x, Unit::None);
        let elements = stats
            .get("elements")
            .and_then(number_from_json)
            .map_or("?".into(), number);
        let words = crate::trace::summary::statistics_words(stats, &number);
        return format!("a tensor of {elements} elements ({words})");
    }
    match value {
        Value::String(s) => s.clone(),
        _ => compact(value),
    }
}

/// Compact JSON-like text for lists and objects: `[[1, 4, 2], [5, 3, 6]]`, `{"max": 448}`. Whole
/// numbers are written whole; the others with four significant figures, as a number in a sentence
/// is (a gradient's seventeen digits say nothing a reader can use).
pub fn compact(value: &Value) -> String {
    compact_with(value, &|v| {
        number_from_json(v).map_or_else(|| v.to_string(), |x| auto(x, Unit::None))
    })
}

/// Like `compact`, writing each number with `number`.
pub fn compact_with(value: &Value, number: &dyn Fn(&Value) -> String) -> String {
    match value {
        Value::Number(_) => number(value),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(|v| compact_with(v, number))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(map) => {
            let fields: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::from(k.as_str()), compact_with(v, number)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        other => other.to_string(),
    }
}

fn format_number(x: f64, unit: Unit, format: Format) -> Result<String, String> {
    if !x.is_finite() {
        let text = if x.is_nan() {
            "NaN"
        } else if x > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        return Ok(with_word(text.to_string(), unit));
    }
    Ok(match format {
        Format::Auto => auto(x, unit),
        Format::Plain => with_word(plain(x), unit),
        Format::Int => with_word(grouped(x.round()), unit),
        Format::Sci(n) => with_word(sci(x, n), unit),
        Format::Eng(n) => with_word(eng(x, n), unit),
        Format::Si(n) => si(x, n, unit),
        Format::Iec(n) => iec(x, n, unit)?,
        // Fifteen digits before the point are already more than a float holds.
        Format::Fixed(_) if x.abs() >= 1e15 => with_word(sci(x, None), unit),
        Format::Fixed(d) => with_word(format!("{x:.d$}"), unit),
        Format::Percent(n) => percent(x, n),
        Format::Json => plain(x),
    })
}

/// The book's units rule ("How this book is made"): the lecture's decimal units (GB, TFLOP/s),
/// with the binary figure beside bytes, where the two always differ; small counts of bytes and
/// FLOPs as integers; FLOP totals in scientific notation, as the lecture writes them.
fn auto(x: f64, unit: Unit) -> String {
    match unit {
        Unit::Bytes | Unit::Flop if x.abs() < SMALL && x.fract() == 0.0 => with_word(grouped(x), unit),
        Unit::Bytes if x.abs() < SMALL => with_word(plain(x), unit),
        Unit::Bytes => decimal_and_binary(x, unit),
        Unit::BytesPerSec | Unit::FlopPerSec => si(x, None, unit),
        Unit::Flop => with_word(sci(x, None), unit),
        Unit::Seconds if x.abs() >= 1.0 || x == 0.0 => with_word(sig(x, DEFAULT_DIGITS, true), unit),
        Unit::Seconds => si(x, None, unit),
        Unit::Ratio => percent(x, None),
        // Intensities span 1/4 to hundreds: four significant digits, never a prefix.
        Unit::FlopPerByte => with_word(sig(x, DEFAULT_DIGITS, true), unit),
        Unit::Count => count(x),
        Unit::None if x.fract() == 0.0 && x.abs() < 1e15 => plain(x),
        Unit::None if (1e-3..1e6).contains(&x.abs()) => sig(x, DEFAULT_DIGITS, true),
        Unit::None => sci(x, None),
    }
}

/// `2.42 GB (2.25 GiB)`. Past the largest prefixes, where both would be the same scientific
/// number, that number once.
fn decimal_and_binary(x: f64, unit: Unit) -> String {
    let decimal = si(x, Some(3), unit);
    if decimal.contains('e') {
        return si(x, None, unit);
    }
    match iec(x, Some(3), unit) {
        Ok(binary) if !binary.contains('e') => format!("{} ({})", trimmed(decimal), trimmed(binary)),
        _ => trimmed(decimal),
    }
}

/// `80.0 GB` as `80 GB`: the number before the unit without trailing zeros.
fn trimmed(text: String) -> String {
    match text.split_once(' ') {
        Some((number, rest)) => format!("{} {rest}", notation::trim_zeros(number)),
        None => notation::trim_zeros(&text),
    }
}

/// Below this, bytes and FLOPs read best as integers: `8,192 bytes`, `368 FLOP`.
const SMALL: f64 = 1e5;

/// Counts read as words once they are large: `40 billion`.
fn count(x: f64) -> String {
    const WORDS: [(f64, &str); 3] = [(1e12, "trillion"), (1e9, "billion"), (1e6, "million")];
    if x.abs() >= 1e15 {
        return sci(x, None);
    }
    for (scale, word) in WORDS {
        if x.abs() >= scale {
            return format!("{} {word}", sig(x / scale, DEFAULT_DIGITS, true));
        }
    }
    if x.fract() == 0.0 {
        grouped(x)
    } else {
        sig(x, DEFAULT_DIGITS, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn auto(v: Value, unit: Unit) -> String {
        format_value(&v, unit, Format::Auto).expect("formats")
    }

    fn with(v: Value, unit: Unit, f: &str) -> String {
        format_value(&v, unit, f.parse().expect("format parses")).expect("formats")
    }

    #[test]
    fn a_tensor_kept_as_a_summary_reads_as_its_statistics() {
        let flat: Vec<f64> = (0..5000).map(f64::from).collect();
        let kept = crate::trace::summary::summarise(&[5000], &flat, &crate::trace::json_number);
        assert_eq!(
            auto(kept, Unit::None),
            "a tensor of 5000 elements (min 0, max 4999, mean 2500, std 1443)"
        );
    }

    #[test]
    fn sig_rounds_before_choosing_decimals() {
        assert_eq!(sig(9.9996, 4, false), "10.00");
        assert_eq!(sig(143.92659381842682, 4, true), "143.9");
        assert_eq!(sig(604800.0, 4, true), "604800");
        assert_eq!(sig(-0.012345, 3, false), "-0.0123");
    }

    #[test]
    fn engineering_mantissa_stays_below_a_thousand() {
        assert_eq!(eng(3.14e23, None), "314e21");
        assert_eq!(eng(999.96e12, None), "1e15");
        assert_eq!(eng(0.5, None), "500e-3");
        assert_eq!(eng(42.0, None), "42");
    }

    #[test]
    fn bytes_are_decimal_with_binary_beside_by_default() {
        assert_eq!(auto(json!(128), Unit::Bytes), "128 bytes");
        assert_eq!(auto(json!(1), Unit::Bytes), "1 byte");
        assert_eq!(auto(json!(8192), Unit::Bytes), "8,192 bytes");
        assert_eq!(auto(json!(99999), Unit::Bytes), "99,999 bytes");
        assert_eq!(auto(json!(100000), Unit::Bytes), "100 kB (97.7 KiB)");
        assert_eq!(auto(json!(2415919104u64), Unit::Bytes), "2.42 GB (2.25 GiB)");
        assert_eq!(auto(json!(80e9), Unit::Bytes), "80 GB (74.5 GiB)");
        assert_eq!(with(json!(80e9), Unit::Bytes, "si"), "80 GB");
        assert_eq!(with(json!(2415919104u64), Unit::Bytes, "int"), "2,415,919,104 bytes");
        assert_eq!(with(json!(2415919104u64), Unit::Bytes, "iec2"), "2.2 GiB");
        assert_eq!(with(json!(1536), Unit::Bytes, "iec"), "1.5 KiB");
    }

    #[test]
    fn flops_are_scientific_by_default() {
        assert_eq!(auto(json!(6.3e24), Unit::Flop), "6.3e24 FLOP");
        assert_eq!(auto(json!(4.7875968e21), Unit::Flop), "4.788e21 FLOP");
        assert_eq!(auto(json!(989.5e12), Unit::FlopPerSec), "989.5 TFLOP/s");
        assert_eq!(auto(json!(2), Unit::Flop), "2 FLOP");
        assert_eq!(auto(json!(16384), Unit::Flop), "16,384 FLOP");
        assert_eq!(auto(json!(1e5), Unit::Flop), "1e5 FLOP");
        assert_eq!(with(json!(989.5e12), Unit::FlopPerSec, "si"), "989.5 TFLOP/s");
        assert_eq!(with(json!(5.4e13), Unit::FlopPerSec, "eng"), "54e12 FLOP/s");
        assert_eq!(with(json!(6.3e24), Unit::Flop, "sci3"), "6.30e24 FLOP");
    }

    #[test]
    fn seconds_scale_to_ms_and_us() {
        assert_eq!(auto(json!(0.16), Unit::Seconds), "160 ms");
        assert_eq!(auto(json!(4.5e-5), Unit::Seconds), "45 µs");
        assert_eq!(auto(json!(1.23456e-8), Unit::Seconds), "12.35 ns");
        assert_eq!(auto(json!(604800.0), Unit::Seconds), "604800 s");
        assert_eq!(auto(json!(2.5), Unit::Seconds), "2.5 s");
    }

    #[test]
    fn ratios_are_percentages() {
        assert_eq!(auto(json!(0.5), Unit::Ratio), "50%");
        assert_eq!(auto(json!(0.012345), Unit::Ratio), "1.23%");
        assert_eq!(with(json!(0.876), Unit::Ratio, "percent1"), "90%");
        assert_eq!(with(json!(0.5), Unit::None, "percent"), "50%");
    }

    #[test]
    fn counts_and_plain_numbers() {
        assert_eq!(auto(json!(8256), Unit::Count), "8,256");
        assert_eq!(auto(json!(40e9), Unit::Count), "40 billion");
        assert_eq!(auto(json!(1579753728.0), Unit::Count), "1.58 billion");
        assert_eq!(auto(json!(143.92659381842682), Unit::None), "143.9");
        assert_eq!(auto(json!(448.0), Unit::None), "448");
        assert_eq!(auto(json!(1.1920928955078125e-7), Unit::None), "1.192e-7");
        assert_eq!(
            with(json!(1.0011717677116394e-8), Unit::None, "plain"),
            "1.0011717677116394e-8"
        );
        assert_eq!(with(json!(143.92659381842682), Unit::None, "fixed1"), "143.9");
        assert_eq!(with(json!(143.92659381842682), Unit::None, "fixed0"), "144");
    }

    #[test]
    fn non_numbers_and_non_finite() {
        assert_eq!(auto(json!("float32"), Unit::None), "float32");
        assert_eq!(auto(json!(true), Unit::None), "true");
        assert_eq!(
            auto(json!([[1.0, 4.0, 2.0], [5.0, 3.0, 6.0]]), Unit::None),
            "[[1, 4, 2], [5, 3, 6]]"
        );
        assert_eq!(
            auto(json!({"max": 448.0, "name": "e4m3"}), Unit::None),
            r#"{"max": 448, "name": "e4m3"}"#
        );
        assert_eq!(auto(json!("NaN"), Unit::Seconds), "NaN s");
        assert_eq!(auto(json!("-inf"), Unit::Flop), "-inf FLOP");
        // A string that merely says "inf" stays a string when the value has no unit.
        assert_eq!(auto(json!("inf"), Unit::None), "inf");
        assert_eq!(with(json!({"a": 1}), Unit::None, "json"), r#"{"a":1}"#);
        // An explicit form applies to every number of a list or object.
        assert_eq!(
            with(json!([1147.9453125, 769.311767578125, "x"]), Unit::None, "fixed1"),
            r#"[1147.9, 769.3, "x"]"#
        );
        assert_eq!(
            with(json!({"fp32": 2.1e-7, "bf16": 0.00107}), Unit::None, "sci2"),
            r#"{"fp32": 2.1e-7, "bf16": 1.1e-3}"#
        );
        assert_eq!(with(json!([1024, 2048]), Unit::Bytes, "iec"), "[1 KiB, 2 KiB]");
    }

    #[test]
    fn bad_formats_are_refused() {
        assert!("sci0".parse::<Format>().is_err());
        assert!("plain3".parse::<Format>().is_err());
        assert!("kilo".parse::<Format>().unwrap_err().contains("unknown format"));
        let err = format_value(&json!("x"), Unit::None, Format::Sci(None)).unwrap_err();
        assert!(err.contains("needs a number"), "{err}");
        let err = format_value(&json!(3), Unit::Count, Format::Iec(None)).unwrap_err();
        assert!(err.contains("for bytes"), "{err}");
        let err = format_value(&json!([3]), Unit::Count, Format::Iec(None)).unwrap_err();
        assert!(err.contains("for bytes"), "{err}");
        for f in [
            "auto", "plain", "int", "sci", "sci3", "eng2", "si", "iec3", "fixed1", "percent", "json",
        ] {
            assert_eq!(f.parse::<Format>().expect("parses").to_string(), f);
        }
    }
}
