//! `check!`: a fact the section's own arithmetic makes true on every device, checked on the line
//! that computes it, as the original lecture writes `assert` beside its arithmetic. A check that
//! holds is recorded in the trace (kind `checked`, its claim as text), so the book can quote it
//! with `{{check SECTION.NAME}}` without deciding it again; one that fails stops the run.

use std::panic::Location;

use super::SectionCtx;
use crate::error::{Error, Result};
use crate::trace::{Kind, Unit};

/// Checks a claim and records it under a name, or stops the section with both sides' values.
///
/// ```text
/// check!(cx, counter_agrees: counted_num_flops == actual_num_flops)?;
/// check!(cx, rounding_is_small: reldiff(by_hand, autograd) < 1e-6)?;
/// check!(cx, transpose_is_a_view: y.same_storage(&x))?;   // a boolean: it must be true
/// ```
///
/// The claim is one comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`) between two expressions, or
/// one boolean expression. Both sides are evaluated once. A side that itself holds a comparison
/// or a turbofish (`parse::<u8>()`) goes in parentheses: the macro splits the claim at the first
/// comparison it sees outside them.
macro_rules! check {
    // `expr ==` may not follow an expression fragment, so the claim is read a token at a time
    // until its comparison.
    (@split $cx:expr, $name:ident, [$($l:tt)+] == $($r:tt)+) => {
        $crate::lecture::recorder::check!(@compare $cx, $name, ==, [$($l)+] [$($r)+])
    };
    (@split $cx:expr, $name:ident, [$($l:tt)+] != $($r:tt)+) => {
        $crate::lecture::recorder::check!(@compare $cx, $name, !=, [$($l)+] [$($r)+])
    };
    (@split $cx:expr, $name:ident, [$($l:tt)+] <= $($r:tt)+) => {
        $crate::lecture::recorder::check!(@compare $cx, $name, <=, [$($l)+] [$($r)+])
    };
    (@split $cx:expr, $name:ident, [$($l:tt)+] >= $($r:tt)+) => {
        $crate::lecture::recorder::check!(@compare $cx, $name, >=, [$($l)+] [$($r)+])
    };
    (@split $cx:expr, $name:ident, [$($l:tt)+] < $($r:tt)+) => {
        $crate::lecture::recorder::check!(@compare $cx, $name, <, [$($l)+] [$($r)+])
    };
    (@split $cx:expr, $name:ident, [$($l:tt)+] > $($r:tt)+) => {
        $crate::lecture::recorder::check!(@compare $cx, $name, >, [$($l)+] [$($r)+])
    };
    (@split $cx:expr, $name:ident, [$($l:tt)*] $next:tt $($rest:tt)*) => {
        $crate::lecture::recorder::check!(@split $cx, $name, [$($l)* $next] $($rest)*)
    };
    // No comparison: the claim is a boolean.
    (@split $cx:expr, $name:ident, [$($l:tt)+]) => {{
        let holds: bool = $($l)+;
        $cx.record_check(stringify!($name), stringify!($($l)+), holds, || "it is false".to_string())
    }};
    (@compare $cx:expr, $name:ident, $op:tt, [$($l:tt)+] [$($r:tt)+]) => {{
        let left = &($($l)+);
        let right = &($($r)+);
        $cx.record_check(
            stringify!($name),
            concat!(stringify!($($l)+), " ", stringify!($op), " ", stringify!($($r)+)),
            *left $op *right,
            || format!("{} is {:?}, {} is {:?}", stringify!($($l)+), left, stringify!($($r)+), right),
        )
    }};
    ($cx:expr, $name:ident : $($claim:tt)+) => {
        $crate::lecture::recorder::check!(@split $cx, $name, [] $($claim)+)
    };
}
pub(crate) use check;

impl SectionCtx {
    /// Records a claim that held, or fails the section: `check!` is the way to call it. `values`
    /// says what each side was; it is only formatted when the claim fails.
    #[track_caller]
    pub fn record_check(
        &mut self,
        name: &str,
        claim: &str,
        holds: bool,
        values: impl FnOnce() -> String,
    ) -> Result<()> {
        if !holds {
            let at = Location::caller();
            return Err(Error::CheckFailed {
                name: name.to_string(),
                claim: claim.to_string(),
                file: at.file().replace('\\', "/"),
                line: at.line(),
                values: values(),
            });
        }
        self.record_value(name, claim.to_string(), Some(Unit::None), Kind::Checked, false)
    }
}

#[cfg(test)]
mod tests {
    use crate::error::{Error, Result};
    use crate::lecture::SectionCtx;
    use crate::lecture::recorder::tests::ctx_in;

    fn ctx() -> Result<SectionCtx> {
        ctx_in(file!())
    }
    use crate::trace::{Kind, Unit};

    #[test]
    fn a_check_that_holds_is_recorded_as_its_claim_at_its_line() -> Result<()> {
        let mut cx = ctx()?;
        let (m, n, k) = (3usize, 4usize, 5usize);
        let counted_flops = 120u64;
        let line = line!() + 1;
        check!(cx, counter_agrees: counted_flops == (2 * m * n * k) as u64)?;
        let ratio = 0.25;
        check!(cx, small: ratio * 2.0 < 1.0)?;
        check!(cx, at_most: ratio <= 0.25)?;
        check!(cx, differs: m != n)?;
        check!(cx, at_least: k >= n)?;
        check!(cx, above: k > n)?;
        let ones = [1.0, 1.0];
        // A comparison inside a closure is inside its parentheses: the claim is one boolean.
        check!(cx, all_ones: ones.iter().all(|&x| x == 1.0))?;
        let (values, steps) = cx.into_parts();
        let v = &values["counter_agrees"];
        assert_eq!(
            (&v.value, v.unit, v.line, v.kind()),
            (
                &serde_json::json!("counted_flops == (2 * m * n * k) as u64"),
                Unit::None,
                line,
                Some(Kind::Checked)
            )
        );
        assert_eq!(values["small"].value, serde_json::json!("ratio * 2.0 < 1.0"));
        assert_eq!(
            values["all_ones"].value,
            serde_json::json!("ones.iter().all(|&x| x == 1.0)")
        );
        let names: Vec<&str> = steps.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "counter_agrees",
                "small",
                "at_most",
                "differs",
                "at_least",
                "above",
                "all_ones"
            ]
        );
        Ok(())
    }

    #[test]
    fn a_check_that_fails_stops_with_its_claim_line_and_both_values() -> Result<()> {
        let mut cx = ctx()?;
        let (counted, formula) = (33_554_432u64, 33_554_430u64);
        let line = line!() + 1;
        let err = check!(cx, counter_agrees: counted == formula).expect_err("it does not hold");
        let Error::CheckFailed {
            name,
            claim,
            file,
            line: at,
            values,
        } = &err
        else {
            panic!("{err}")
        };
        assert_eq!(
            (name.as_str(), claim.as_str(), *at),
            ("counter_agrees", "counted == formula", line)
        );
        assert!(file.ends_with("src/lecture/recorder/check.rs"), "{file}");
        assert_eq!(values, "counted is 33554432, formula is 33554430");
        let shown = err.to_string();
        assert!(shown.contains("check.rs:") && shown.contains("33554430"), "{shown}");
        // Each side is evaluated once, and a boolean that is false says so.
        let mut calls = 0;
        let mut next = || {
            calls += 1;
            calls
        };
        assert!(check!(cx, once: next() > 1).is_err());
        assert_eq!(calls, 1);
        let empty: Vec<u8> = Vec::new();
        let err = check!(cx, has_data: !empty.is_empty()).expect_err("false");
        assert!(
            err.to_string()
                .contains("`!empty.is_empty()` does not hold (it is false)"),
            "{err}"
        );
        // Nothing that failed was recorded.
        let (values, _) = cx.into_parts();
        assert!(values.is_empty(), "{:?}", values.keys().collect::<Vec<_>>());
        Ok(())
    }
}
