//! The notations a number can be written in: plain, grouped by thousands, scientific,
//! engineering, SI and IEC prefixes, percentages; each with the unit's word or symbol.

use crate::trace::Unit;

/// Significant digits when a form is given without a precision (trailing zeros are then dropped).
pub(super) const DEFAULT_DIGITS: usize = 4;

/// The unit's word after a number, for forms without prefixes.
pub(super) fn with_word(text: String, unit: Unit) -> String {
    let word = match unit {
        Unit::Bytes if text == "1" => "byte",
        Unit::Bytes => "bytes",
        Unit::BytesPerSec => "bytes/s",
        Unit::FlopPerByte => "FLOP/byte",
        Unit::Flop => "FLOP",
        Unit::FlopPerSec => "FLOP/s",
        Unit::Seconds => "s",
        Unit::Ratio | Unit::Count | Unit::None => return text,
    };
    format!("{text} {word}")
}

/// The unit's symbol after a prefix (`G` + `B`, `T` + `FLOP/s`).
pub(super) fn symbol(unit: Unit) -> &'static str {
    match unit {
        Unit::Bytes => "B",
        Unit::BytesPerSec => "B/s",
        Unit::FlopPerByte => "FLOP/byte",
        Unit::Flop => "FLOP",
        Unit::FlopPerSec => "FLOP/s",
        Unit::Seconds => "s",
        Unit::Ratio | Unit::Count | Unit::None => "",
    }
}

/// Shortest decimal that reads back as `x`; integers without a fraction, very large or small
/// numbers in exponent form.
pub fn plain(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{}", x as i64)
    } else if (1e-4..1e16).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// An integer with commas between groups of three digits.
pub(super) fn grouped(x: f64) -> String {
    if x.abs() >= 1e18 {
        return sci(x, None);
    }
    let digits = format!("{}", x.abs() as u64);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if x < 0.0 { format!("-{out}") } else { out }
}

/// Outside this range of magnitudes, positional notation is long (a float can be 1e308 or
/// 5e-324): such numbers are written in scientific notation instead.
const POSITIONAL: std::ops::Range<f64> = 1e-4..1e15;

/// `x` rounded to `n` significant digits; without an explicit precision, trailing zeros go.
/// Very large and very small magnitudes are written in scientific notation.
pub(super) fn sig(x: f64, n: usize, trim: bool) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !POSITIONAL.contains(&x.abs()) {
        return sci_digits(x, n, trim);
    }
    // Round first, so that 9.9996 at 4 digits becomes 10.00 and not 9.9996's decimals.
    let rounded: f64 = format!("{x:.*e}", n - 1).parse().unwrap_or(x);
    let magnitude = rounded.abs().log10().floor() as i64;
    let decimals = (n as i64 - 1 - magnitude).max(0) as usize;
    let text = format!("{rounded:.decimals$}");
    if trim { trim_zeros(&text) } else { text }
}

pub(super) fn trim_zeros(text: &str) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text.to_string()
    }
}

pub(super) fn digits(n: Option<usize>) -> (usize, bool) {
    match n {
        Some(n) => (n, false),
        None => (DEFAULT_DIGITS, true),
    }
}

/// Scientific notation: `6.3e24`, `1.192e-7`.
pub(super) fn sci(x: f64, n: Option<usize>) -> String {
    let (n, trim) = digits(n);
    sci_digits(x, n, trim)
}

fn sci_digits(x: f64, n: usize, trim: bool) -> String {
    let text = format!("{x:.*e}", n - 1);
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let mantissa = if trim {
        trim_zeros(mantissa)
    } else {
        mantissa.to_string()
    };
    format!("{mantissa}e{exponent}")
}

/// `x` as `m · 10^e` with `e` a multiple of three and 1 ≤ |m| < 1000, `m` rounded to `n`
/// significant digits. Read from the digits of `x`'s scientific form, so that neither the
/// largest floats (whose rounding overflows) nor the smallest (whose power of ten underflows)
/// lose their value on the way.
pub(super) fn split_thousands(x: f64, n: usize) -> (f64, i32) {
    let text = format!("{x:.*e}", n - 1);
    let Some((mantissa, exponent)) = text.split_once('e') else {
        return (x, 0);
    };
    let (Ok(mantissa), Ok(exponent)) = (mantissa.parse::<f64>(), exponent.parse::<i32>()) else {
        return (x, 0);
    };
    if mantissa == 0.0 {
        return (0.0, 0);
    }
    let thousands = exponent.div_euclid(3) * 3;
    (mantissa * 10f64.powi(exponent - thousands), thousands)
}

/// Engineering notation: `314e21`, `54.1e12`.
pub(super) fn eng(x: f64, n: Option<usize>) -> String {
    let (n, trim) = digits(n);
    let (mantissa, exponent) = split_thousands(x, n);
    let mantissa = sig(mantissa, n, trim);
    if exponent == 0 {
        mantissa
    } else {
        format!("{mantissa}e{exponent}")
    }
}

const SI_PREFIXES: [(i32, &str); 13] = [
    (-12, "p"),
    (-9, "n"),
    (-6, "µ"),
    (-3, "m"),
    (0, ""),
    (3, "k"),
    (6, "M"),
    (9, "G"),
    (12, "T"),
    (15, "P"),
    (18, "E"),
    (21, "Z"),
    (24, "Y"),
];

/// Decimal prefixes: `80 GB`, `989.5 TFLOP/s`, `1.2 ms`. Outside the prefixes' range, scientific.
pub(super) fn si(x: f64, n: Option<usize>, unit: Unit) -> String {
    let (digits, trim) = digits(n);
    let (mantissa, exponent) = split_thousands(x, digits);
    match SI_PREFIXES.iter().find(|(e, _)| *e == exponent) {
        Some((_, prefix)) => {
            let text = sig(mantissa, digits, trim);
            let unit_symbol = symbol(unit);
            if prefix.is_empty() && unit_symbol.is_empty() {
                text
            } else {
                format!("{text} {prefix}{unit_symbol}")
            }
        }
        None => with_word(sci(x, n), unit),
    }
}

/// Binary prefixes for bytes: `2.25 GiB`; below 1024, bytes.
pub(super) fn iec(x: f64, n: Option<usize>, unit: Unit) -> Result<String, String> {
    if !matches!(unit, Unit::Bytes | Unit::BytesPerSec) {
        return Err(format!("format `iec` is for bytes, but this value's unit is {unit:?}"));
    }
    const PREFIXES: [&str; 9] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"];
    let (digits, trim) = digits(n);
    let mut scaled = x;
    let mut i = 0;
    while scaled.abs() >= 1024.0 && i + 1 < PREFIXES.len() {
        scaled /= 1024.0;
        i += 1;
    }
    // Beyond the largest prefix (or where rounding reaches 1024 of it): scientific.
    if sig(scaled, digits, true)
        .parse::<f64>()
        .map_or(true, |s| s.abs() >= 1024.0)
    {
        return Ok(with_word(sci(x, n), unit));
    }
    if i == 0 {
        return Ok(with_word(sig(x, digits, trim), unit));
    }
    Ok(format!("{} {}{}", sig(scaled, digits, trim), PREFIXES[i], symbol(unit)))
}

/// A ratio as a percentage: `50%`, `1.23%`.
pub(super) fn percent(x: f64, n: Option<usize>) -> String {
    let (n, trim) = match n {
        Some(n) => (n, false),
        None => (3, true),
    };
    let hundredfold = x * 100.0;
    if hundredfold == 0.0 || POSITIONAL.contains(&hundredfold.abs()) {
        return format!("{}%", sig(hundredfold, n, trim));
    }
    // Times 100 in the exponent: the largest ratios would overflow, the smallest lose digits.
    let text = sci_digits(x, n, trim);
    match text
        .split_once('e')
        .and_then(|(m, e)| Some((m, e.parse::<i32>().ok()?)))
    {
        Some((mantissa, exponent)) => format!("{mantissa}e{}%", exponent + 2),
        None => format!("{text}%"),
    }
}
