//! `{{times A B [trace=SLUG]}}`: how many times value `A` is value `B`, in words sized to the gap
//! ("about 95 times", "about 1.4 times"). A sentence that compares two measurements quotes the
//! factor itself, so its words can never say "more than twice" of a gap of ninety-five.

use std::path::Path;

use super::directive::Address;
use super::html::{escape, escape_inline};
use super::kinds;
use super::problem::Cause;
use super::traces::Traces;
use crate::trace::{Kind, Trace, number_from_json};

/// The factor in words: two significant figures (a factor is read as a size, not a reading).
pub fn words(factor: f64) -> String {
    if !factor.is_finite() {
        return "an unbounded number of times".into();
    }
    let shown = if factor >= 10.0 {
        let scale = 10f64.powi(factor.log10().floor() as i32 - 1);
        format!("{}", (factor / scale).round() * scale)
    } else {
        format!("{:.1}", factor)
    };
    match shown.as_str() {
        "1.0" => "about as much as".into(),
        "2.0" => "about twice".into(),
        _ => format!("about {} times", shown.trim_end_matches(".0")),
    }
}

/// The factor as a marked value: measured when either value was, with both names on hover.
pub fn render(
    traces: &mut Traces,
    path: &Path,
    trace: &Trace,
    top: &Address,
    bottom: &Address,
) -> Result<String, Cause> {
    let read = |traces: &mut Traces, address: &Address| -> Result<(f64, Option<Kind>, String), Cause> {
        let found = traces.resolve(path, trace, address)?;
        let number = number_from_json(found.value).ok_or_else(|| Cause::BadValue {
            trace: path.to_path_buf(),
            address: address.to_string(),
            msg: format!("`times` divides numbers; found `{}`", found.value),
        })?;
        let mark = match &found.older_code {
            Some(older) => traces.older_mark(path, &address.section, older),
            None => String::new(),
        };
        Ok((number, found.record.kind(), mark))
    };
    let (a, a_kind, a_mark) = read(traces, top)?;
    let (b, b_kind, b_mark) = read(traces, bottom)?;
    let kind = match (a_kind, b_kind) {
        (Some(Kind::Given | Kind::Computed), Some(Kind::Given | Kind::Computed)) => Some(Kind::Computed),
        (Some(k), Some(Kind::Given | Kind::Computed)) | (_, Some(k)) => Some(k),
        _ => None,
    };
    let class = match kind {
        Some(Kind::Computed) => "lecture-computed",
        Some(Kind::Given) => "lecture-given",
        _ => "lecture-measured",
    };
    let title = format!(
        "{} · {top} / {bottom} · {} trace",
        kind.map_or(
            "recorded by older code, which did not say what decided it",
            kinds::kind_words
        ),
        trace.provenance.device.slug
    );
    // One mark is enough: both values come from the same trace.
    let mark = if a_mark.is_empty() { b_mark } else { a_mark };
    Ok(format!(
        "<span class=\"lecture-value {class}\" title=\"{}\">{}</span>{mark}",
        escape_inline(&title),
        escape(&words(a / b))
    ))
}

#[cfg(test)]
mod tests {
    use super::words;

    #[test]
    fn the_words_follow_the_factor() {
        assert_eq!(words(94.6), "about 95 times");
        assert_eq!(words(12.82), "about 13 times");
        assert_eq!(words(1234.0), "about 1200 times");
        assert_eq!(words(1.36), "about 1.4 times");
        assert_eq!(words(2.02), "about twice");
        assert_eq!(words(1.01), "about as much as");
        assert_eq!(words(0.5), "about 0.5 times");
    }
}
