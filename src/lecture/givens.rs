//! Givens: the values the lecture chooses (a model's size, the MFU it assumes, a matrix's rows, a
//! learning rate), each declared where its section uses it with `given!`. A declaration names the
//! given, its range (as a type: [`Count`], [`Positive`], [`Fraction`]), its default, its unit and
//! one line of help. The declarations are collected at link time ([`GIVENS`]), so `lecture givens`
//! lists them and `lecture --set SECTION.NAME=VALUE` checks a value before anything runs; a run
//! records each given with its default and range, so a what-if trace says what it changed.

use linkme::distributed_slice;
use serde_json::Value;

use super::recorder::Recordable;
use super::{SECTIONS, SectionDef};
use crate::device::Device;
use crate::trace::Unit;

/// What a given may be, as a type: how a typed value is read, and how it is kept in the trace.
pub trait Range {
    type Value: Recordable + Clone;
    /// The range in words, for messages and `lecture givens`.
    const WORDS: &'static str;
    /// Reads a value as a person types it: `4096`, `1e9`, `1_000_000_000`, `0.05`.
    fn parse(text: &str) -> Result<Self::Value, String>;
    fn to_json(value: &Self::Value) -> Value;
    fn from_json(value: &Value) -> Option<Self::Value>;
}

/// A size or a number of things: a whole number from 1 to 2⁵³ (beyond which a float, and so the
/// trace, cannot hold every whole number).
pub struct Count;
/// A number above zero, at most 2⁵³: a parameter count, a learning rate, bytes of memory. The
/// bound keeps what a section makes of a few of them finite (6·N·D of two counts, five times a
/// learning rate); every quantity the lecture chooses is far below it.
pub struct Positive;
/// A share of a peak, from 0.1 % to all of it (an MFU). Not from zero: the FLOPs a day that
/// `motivating_questions` makes of it (the peak × MFU × GPUs × 86,400 s) are a FLOP count, whole
/// in the trace, and a float is whole for certain only from 2⁵³ up. At 0.1 % of an H100's peak on
/// one GPU they are 8.5e16, past it; near 1e-4 they fall below it, and `mfu=1e-20` made 0.87 FLOP.
pub struct Fraction;

/// The smallest share a [`Fraction`] takes.
pub const MIN_FRACTION: f64 = 0.001;

/// A number as typed, `_` between digits allowed.
fn number(text: &str) -> Result<f64, String> {
    let cleaned: String = text.trim().chars().filter(|&c| c != '_').collect();
    cleaned
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| format!("`{text}` is not a number"))
}

/// 2⁵³: the largest whole number up to which a float holds every whole number.
pub const MAX_COUNT: f64 = 9_007_199_254_740_992.0;

/// Whether the number typed as `text` is above 2⁵³, decided on its decimal digits: read as a
/// float, 2⁵³ + 1 is 2⁵³, and would run as that without a word.
fn above_max_count(text: &str) -> bool {
    const MAX_DIGITS: &str = "9007199254740992";
    let cleaned: String = text.trim().chars().filter(|&c| c != '_').collect();
    let (mantissa, exponent) = match cleaned.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().ok()),
        None => (cleaned.as_str(), Some(0)),
    };
    let Some(exponent) = exponent else { return false };
    let mantissa = mantissa.strip_prefix('+').unwrap_or(mantissa);
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if !whole.chars().chain(fraction.chars()).all(|c| c.is_ascii_digit()) {
        return false;
    }
    // The value is `digits` × 10^(exponent − fraction's length).
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return false;
    }
    let whole_len = (digits.len() as i64).saturating_add(exponent.saturating_sub(fraction.len() as i64));
    if whole_len != MAX_DIGITS.len() as i64 {
        return whole_len > MAX_DIGITS.len() as i64;
    }
    let width = MAX_DIGITS.len().max(digits.len());
    let padded = format!("{digits:0<width$}");
    let (head, tail) = padded.split_at(MAX_DIGITS.len());
    head > MAX_DIGITS || (head == MAX_DIGITS && tail.chars().any(|c| c != '0'))
}

/// What a given of a counted unit (a count, bytes, FLOP) may be, whatever its range type: a
/// trace's reader takes only whole numbers for such a value (`trace::validate`), and a float holds
/// every whole number only up to 2⁵³ (as for [`Count`]).
const COUNTED_WORDS: &str = "a whole number from 1 to 2⁵³ (about 9.0e15)";

impl Range for Count {
    type Value = usize;
    const WORDS: &'static str = "a whole number ≥ 1";
    fn parse(text: &str) -> Result<usize, String> {
        let x = number(text)?;
        // Past 2⁵³ every float is whole: such a value is not "not whole", it is too large.
        if x > MAX_COUNT || above_max_count(text) {
            return Err(format!(
                "`{text}` is too large: the largest count accepted is {} (2⁵³)",
                MAX_COUNT as u64
            ));
        }
        if x.fract() != 0.0 || !(1.0..=MAX_COUNT).contains(&x) {
            return Err(format!("`{text}` is not {}", Self::WORDS));
        }
        Ok(x as usize)
    }
    fn to_json(value: &usize) -> Value {
        Value::from(*value)
    }
    fn from_json(value: &Value) -> Option<usize> {
        value.as_u64().and_then(|v| usize::try_from(v).ok()).filter(|&v| v >= 1)
    }
}

/// A range of real numbers: its words and which numbers it holds.
macro_rules! real_range {
    ($range:ident, $words:literal, |$x:ident| $holds:expr) => {
        impl Range for $range {
            type Value = f64;
            const WORDS: &'static str = $words;
            fn parse(text: &str) -> Result<f64, String> {
                let $x = number(text)?;
                if $holds && !above_max_count(text) {
                    Ok($x)
                } else if $x > MAX_COUNT || above_max_count(text) {
                    // A number past the top is not "not a number > 0": it is too large.
                    Err(format!("`{text}` is too large"))
                } else {
                    Err(format!("`{text}` is not {}", Self::WORDS))
                }
            }
            fn to_json(value: &f64) -> Value {
                crate::trace::json_number(*value)
            }
            fn from_json(value: &Value) -> Option<f64> {
                value.as_f64().filter(|&$x| $x.is_finite() && $holds)
            }
        }
    };
}

real_range!(Positive, "a number > 0, at most 2⁵³ (about 9.0e15)", |x| x > 0.0
    && x <= MAX_COUNT);
real_range!(Fraction, "a fraction from 0.001 to 1", |x| (MIN_FRACTION..=1.0)
    .contains(&x));

/// `parse`, into the trace's form: what `GivenDef::parse` holds.
pub fn parse_json<R: Range>(text: &str) -> Result<Value, String> {
    R::parse(text).map(|v| R::to_json(&v))
}

/// One `given!` declaration.
pub struct GivenDef {
    pub name: &'static str,
    /// Where it is declared: the file and line decide its section.
    pub file: &'static str,
    pub line: u32,
    /// The unit the declaration names (else the value's type decides, as for `record!`).
    pub unit: Option<Unit>,
    pub range: &'static str,
    pub help: &'static str,
    pub parse: fn(&str) -> Result<Value, String>,
    /// The lecture's value on a device (the matmul's sizes are larger on a GPU).
    pub default: fn(&Device) -> Value,
}

/// A given whose section asks more of it than its range type and unit say: its range, in words
/// and as a test. A section's registry entry lists its own (`narrowers`), kept in its file beside
/// its function rather than in its `given!`: the trace's hash covers the function's code, and a
/// change of words there would make every recorded run of the section stale, the GPU's too.
pub struct Narrower {
    pub name: &'static str,
    pub words: &'static str,
    pub holds: fn(f64) -> bool,
}

impl GivenDef {
    /// Whether its unit counts things (a count, bytes, FLOP) while its type admits fractions:
    /// then only the whole numbers of its type's range are its range.
    fn narrowed(&self) -> bool {
        matches!(self.unit, Some(Unit::Count | Unit::Bytes | Unit::Flop)) && self.range != Count::WORDS
    }

    /// What its section asks of it beyond its type and unit, if anything.
    fn narrower(&self) -> Option<&'static Narrower> {
        section_of(self)?.narrowers.iter().find(|n| n.name == self.name)
    }

    /// Its range in words (`lecture givens`, messages, and what the trace records).
    pub fn range_words(&self) -> &'static str {
        match self.narrower() {
            Some(n) => n.words,
            None if self.narrowed() => COUNTED_WORDS,
            None => self.range,
        }
    }

    /// Reads a value as a person types it, into the trace's form: within its type's range, whole
    /// when its unit counts things, and within what its section asks of it ([`Narrower`]): a
    /// value the section cannot record (the trace's reader would refuse it) is refused here, before
    /// anything runs.
    pub fn read(&self, text: &str) -> Result<Value, String> {
        let value = (self.parse)(text)?;
        let x = value.as_f64();
        if let Some(n) = self.narrower() {
            if !x.is_some_and(n.holds) {
                return Err(format!("`{text}` is not {}", n.words));
            }
            return Ok(value);
        }
        let whole = x.is_some_and(|x| x.fract() == 0.0 && (1.0..=MAX_COUNT).contains(&x));
        if self.narrowed() && !whole {
            return Err(format!("`{text}` is not {COUNTED_WORDS}"));
        }
        Ok(value)
    }
}

/// Every `given!` in the lecture.
#[distributed_slice]
pub static GIVENS: [GivenDef];

/// A value the lecture chooses, that a reader may change with `lecture --set SECTION.NAME=VALUE`:
///
/// ```text
/// let b = given!(cx, B: Count = device => linear_model_sizes(device).0, count, "rows of x")?;
/// let mfu = given!(cx, mfu: Fraction = 0.5, ratio, "share of the peak a run is assumed to get")?;
/// ```
///
/// `device =>` binds the run's device for a default that depends on it. The value is recorded as a
/// `given`, with its default, range and help.
macro_rules! given {
    ($cx:expr, $name:ident: $range:ident = $device:ident => $default:expr, $unit:ident, $help:literal) => {{
        fn default_on($device: &$crate::device::Device) -> serde_json::Value {
            <$crate::lecture::givens::$range as $crate::lecture::givens::Range>::to_json(&$default)
        }
        #[linkme::distributed_slice($crate::lecture::givens::GIVENS)]
        static GIVEN: $crate::lecture::givens::GivenDef = $crate::lecture::givens::GivenDef {
            name: stringify!($name),
            file: file!(),
            line: line!(),
            unit: $crate::lecture::recorder::unit!($unit),
            range: <$crate::lecture::givens::$range as $crate::lecture::givens::Range>::WORDS,
            help: $help,
            parse: $crate::lecture::givens::parse_json::<$crate::lecture::givens::$range>,
            default: default_on,
        };
        $cx.given::<$crate::lecture::givens::$range>(&GIVEN)
    }};
    ($cx:expr, $name:ident: $range:ident = $default:expr, $unit:ident, $help:literal) => {
        $crate::lecture::givens::given!($cx, $name: $range = _device => $default, $unit, $help)
    };
}
pub(crate) use given;

/// The section a declaration belongs to: the one whose file holds it (each section has a file of
/// its own, `sections/<id>.rs`).
pub fn section_of(given: &GivenDef) -> Option<&'static SectionDef> {
    let file = given.file.replace('\\', "/");
    SECTIONS.iter().find(|s| file.ends_with(s.file))
}

/// Every given with its section, in lecture order and, within a section, in the order declared.
pub fn all() -> Vec<(&'static SectionDef, &'static GivenDef)> {
    let mut out: Vec<_> = GIVENS.iter().filter_map(|g| section_of(g).map(|s| (s, g))).collect();
    let order = |s: &SectionDef| SECTIONS.iter().position(|d| d.id == s.id).unwrap_or(usize::MAX);
    out.sort_by_key(|(s, g)| (order(s), g.line));
    out
}

/// The given `SECTION.NAME`.
pub fn find(section: &str, name: &str) -> Option<(&'static SectionDef, &'static GivenDef)> {
    all().into_iter().find(|(s, g)| s.id == section && g.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_past_two_to_the_53_is_refused_not_rounded() {
        // 2⁵³ + 1 reads as 2⁵³ in a float; its digits say it is larger.
        for text in [
            "9007199254740993",
            "9_007_199_254_740_993",
            "9.007199254740993e15",
            "1e16",
            "90071992547409930e-1",
        ] {
            let err = Count::parse(text).map(|_| ()).unwrap_err();
            assert!(err.contains("too large") && err.contains(text), "{text}: {err}");
            let err = Positive::parse(text).map(|_| ()).unwrap_err();
            assert!(err.contains("too large"), "{text}: {err}");
        }
        for (text, n) in [
            ("9007199254740992", 9_007_199_254_740_992),
            ("9.007199254740992e15", 9_007_199_254_740_992),
            ("4096", 4096),
            ("1e3", 1000),
            ("0.5e1", 5),
        ] {
            assert_eq!(Count::parse(text), Ok(n), "{text}");
        }
        assert_eq!(Positive::parse("9007199254740992.0"), Ok(MAX_COUNT));
        assert_eq!(Positive::parse("0.05"), Ok(0.05));
        // Not numbers stay not numbers.
        assert!(!above_max_count("abc") && !above_max_count("-1e99") && !above_max_count("0e999"));
        assert!(above_max_count("9007199254740992.5"));
    }
}
