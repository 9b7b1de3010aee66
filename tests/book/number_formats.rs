//! Every number format handles the whole f64 range: the largest and smallest (subnormal) numbers,
//! NaN and the infinities. The text is short, says NaN or inf only for those, and reads back as
//! the number it stands for, to the precision asked.

use cs336::book::format::{Format, format_value};
use cs336::trace::{Unit, json_number};
use proptest::prelude::*;

const UNITS: [Unit; 9] = [
    Unit::Bytes,
    Unit::Flop,
    Unit::FlopPerSec,
    Unit::Seconds,
    Unit::Ratio,
    Unit::Count,
    Unit::BytesPerSec,
    Unit::FlopPerByte,
    Unit::None,
];

/// Every form, with and without a precision.
fn formats() -> Vec<Format> {
    let mut all = vec![Format::Auto, Format::Plain, Format::Int, Format::Json];
    for n in [None, Some(1), Some(3), Some(17)] {
        all.extend([
            Format::Sci(n),
            Format::Eng(n),
            Format::Si(n),
            Format::Iec(n),
            Format::Percent(n),
        ]);
    }
    all.extend([Format::Fixed(0), Format::Fixed(2), Format::Fixed(17)]);
    all
}

/// Longest text a number may become, unit included.
const MAX_CHARS: usize = 48;

const SI: [(&str, i32); 12] = [
    ("p", -12),
    ("n", -9),
    ("µ", -6),
    ("m", -3),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
    ("Z", 21),
    ("Y", 24),
];
const IEC: [&str; 8] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"];
const WORDS: [(&str, i32); 3] = [("million", 6), ("billion", 9), ("trillion", 12)];

/// Reads a formatted number back, as `(m, e)` standing for m · 10^e (so that the largest and
/// smallest floats do not overflow on the way): digits (with thousands commas), an exponent, a
/// percent sign, a prefix before the unit's symbol, or a count's word.
fn read_back(text: &str, unit: Unit) -> Option<(f64, i32)> {
    // Bytes read `2.42 GB (2.25 GiB)`: the decimal figure, with the binary one beside it.
    let text = match text.split_once(" (") {
        Some((decimal, binary)) if binary.ends_with(')') => decimal,
        _ => text,
    };
    let (number, rest) = text.split_once(' ').unwrap_or((text, ""));
    let (number, percent) = match number.strip_suffix('%') {
        Some(n) => (n, true),
        None => (number, false),
    };
    let digits = number.replace(',', "");
    let (m, e) = digits.split_once('e').unwrap_or((&digits, "0"));
    let (m, mut e): (f64, i32) = (m.parse().ok()?, e.parse().ok()?);
    if percent {
        e -= 2;
    }
    let symbol = match unit {
        Unit::Bytes => "B",
        Unit::BytesPerSec => "B/s",
        Unit::Flop => "FLOP",
        Unit::FlopPerSec => "FLOP/s",
        Unit::FlopPerByte => "FLOP/byte",
        Unit::Seconds => "s",
        _ => "",
    };
    let words = ["byte", "bytes", "bytes/s", "FLOP", "FLOP/s", "FLOP/byte", "s", ""];
    if words.contains(&rest) {
        return Some((m, e));
    }
    if let Some((_, scale)) = WORDS.iter().find(|(w, _)| *w == rest) {
        return Some((m, e + *scale));
    }
    let prefix = rest.strip_suffix(symbol)?;
    if prefix.is_empty() {
        return Some((m, e));
    }
    if let Some(i) = IEC.iter().position(|p| *p == prefix) {
        return Some((m * 1024f64.powi(i as i32 + 1), e));
    }
    let (_, p) = SI.iter().find(|(p, _)| *p == prefix)?;
    Some((m, e + p))
}

/// `x` · 10^(-s), in two steps so that neither factor overflows.
fn scaled(x: f64, s: i32) -> f64 {
    x * 10f64.powi(-s / 2) * 10f64.powi(-(s - s / 2))
}

/// How far the text may be from the number: half a unit in the last place asked for.
fn tolerance(x: f64, format: Format, unit: Unit) -> f64 {
    let rel = |digits: usize| 0.5001 * 10f64.powi(1 - digits as i32) * x.abs();
    match format {
        Format::Plain | Format::Json => 0.0,
        Format::Int => 0.5f64.max(rel(4)),
        Format::Fixed(d) => (0.5001 * 10f64.powi(-(d as i32))).max(rel(4)),
        Format::Sci(n) | Format::Eng(n) | Format::Si(n) | Format::Iec(n) => rel(n.unwrap_or(4)),
        Format::Percent(n) => rel(n.unwrap_or(3)),
        Format::Auto if unit == Unit::Ratio || unit == Unit::Bytes => rel(3),
        Format::Auto => rel(4),
    }
}

fn check(x: f64) -> Result<(), TestCaseError> {
    for unit in UNITS {
        for format in formats() {
            let Ok(text) = format_value(&json_number(x), unit, format) else {
                // Only one refusal is expected: binary prefixes for something that is not bytes.
                prop_assert!(matches!(format, Format::Iec(_)) && !matches!(unit, Unit::Bytes | Unit::BytesPerSec));
                continue;
            };
            let what = format!("{x:e} as {unit:?} in {format}: {text:?}");
            prop_assert!(text.chars().count() <= MAX_CHARS, "too long: {}", what);
            if !x.is_finite() {
                let word = if x.is_nan() {
                    "NaN"
                } else if x > 0.0 {
                    "inf"
                } else {
                    "-inf"
                };
                prop_assert!(text.starts_with(word) || text == format!("\"{word}\""), "{}", what);
                continue;
            }
            prop_assert!(!text.contains("NaN") && !text.contains("inf"), "{}", what);
            let back = read_back(&text, unit);
            prop_assert!(back.is_some(), "does not read back: {}", what);
            let (m, e) = back.unwrap_or_default();
            // Exactly the float (as `plain` writes even a subnormal, in its few significant digits).
            if format!("{m}e{e}").parse::<f64>() == Ok(x) {
                continue;
            }
            // Compare near 1 when the exponent is extreme: m · 10^e itself may not be a float.
            let s = if e.abs() > 200 { e } else { 0 };
            let (x, back) = (scaled(x, s), scaled(m, s - e));
            // Plus a few units in the last place of an f64: 17 digits are at the edge of its precision.
            let tol = tolerance(x, format, unit) + 16.0 * f64::EPSILON * x.abs();
            let off = (x - back).abs();
            prop_assert!(
                off <= tol,
                "reads back as {back:e}, off by {off:e} (allowed {tol:e}): {}",
                what
            );
        }
    }
    Ok(())
}

#[test]
fn the_ends_of_the_range() {
    for x in [
        f64::MAX,
        -f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        1.79e308,
        9.9999e307,
        0.0,
        -0.0,
        1.0,
        999.95,
        1023.9999,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e15,
        1e16,
        1e18,
        1e21,
        1.1805916207174113e21,
    ] {
        check(x).unwrap_or_else(|e| panic!("{e}"));
    }
    let show = |x: f64, format: &str| {
        format_value(&json_number(x), Unit::Bytes, format.parse().expect("format")).expect("formats")
    };
    assert_eq!(show(f64::MAX, "eng"), "179.8e306 bytes");
    assert_eq!(show(5e-324, "eng"), "4.941e-324 bytes");
    assert_eq!(show(1.79e308, "iec"), "1.79e308 bytes");
    assert_eq!(show(f64::MAX, "auto"), "1.798e308 bytes");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any bit pattern: most are very large or very small numbers.
    #[test]
    fn every_float_formats_sanely(bits in any::<u64>()) {
        check(f64::from_bits(bits))?;
    }

    /// Numbers of everyday size, where the forms differ most.
    #[test]
    fn everyday_numbers_format_sanely(m in -1000.0f64..1000.0, e in -30i32..30) {
        check(m * 10f64.powi(e))?;
    }
}
