//! Deciding a claim against a trace. Every key a claim reads is looked up through [`Lookup`]
//! (the book's lookup notes it as quoted, so provenance and staleness cover it as they cover
//! `{{value}}`), and its value is kept, so that a claim that fails can say what it read.

use serde_json::Value;

use super::{Claim, Cmp, Expr, Func, Op, key_text};
use crate::directive::Address;
use crate::trace::number_from_json;

/// Where a claim's keys come from.
pub trait Lookup {
    type Error;
    /// The value at `address`; `Ok(None)` when the trace does not record it (for `has`), `Err`
    /// for anything else (an unknown section, a stale one, an unreadable trace).
    fn lookup(&mut self, address: &Address) -> Result<Option<Value>, Self::Error>;
    /// The error for reading a value the trace does not record outside `has` (the same as a
    /// `{{value}}` of it would give).
    fn missing(&mut self, address: &Address) -> Self::Error;
}

/// Why a claim could not be decided: its lookup failed, or the claim does not fit the values.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure<E> {
    Lookup(E),
    Claim(String),
}

impl<E> From<String> for Failure<E> {
    fn from(msg: String) -> Self {
        Failure::Claim(msg)
    }
}

/// Whether a claim held, and the values it read (`key = value`, in order, each once).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub holds: bool,
    pub read: Vec<(String, String)>,
}

impl Outcome {
    /// `a.b = 1.5, c.d = 2`.
    pub fn values(&self) -> String {
        if self.read.is_empty() {
            return "it reads no value".into();
        }
        self.read
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Decides `claim`. `and` and `or` stop as soon as the answer is known, so
/// `has a.b and a.b > 1` reads `a.b` only where it is recorded.
pub fn evaluate<L: Lookup>(claim: &Claim, lookup: &mut L) -> Result<Outcome, Failure<L::Error>> {
    let mut eval = Eval {
        lookup,
        read: Vec::new(),
    };
    let holds = eval.claim(claim)?;
    Ok(Outcome { holds, read: eval.read })
}

struct Eval<'l, L: Lookup> {
    lookup: &'l mut L,
    read: Vec<(String, String)>,
}

type Res<T, E> = Result<T, Failure<E>>;

impl<L: Lookup> Eval<'_, L> {
    fn get(&mut self, address: &Address) -> Res<Value, L::Error> {
        let value = match self.lookup.lookup(address).map_err(Failure::Lookup)? {
            Some(value) => value,
            None => return Err(Failure::Lookup(self.lookup.missing(address))),
        };
        let key = key_text(address);
        if !self.read.iter().any(|(k, _)| *k == key) {
            self.read.push((key, value.to_string()));
        }
        Ok(value)
    }

    fn claim(&mut self, claim: &Claim) -> Res<bool, L::Error> {
        Ok(match claim {
            Claim::Bool(address) => {
                let value = self.get(address)?;
                value.as_bool().ok_or_else(|| {
                    format!(
                        "a bare key needs true or false, but `{}` is `{value}`: compare it with something",
                        key_text(address)
                    )
                })?
            }
            Claim::Has(address) => {
                let found = self.lookup.lookup(address).map_err(Failure::Lookup)?;
                self.read
                    .push((format!("has {}", key_text(address)), found.is_some().to_string()));
                found.is_some()
            }
            Claim::Finite(address) => number_from_json(&self.get(address)?).is_some_and(f64::is_finite),
            Claim::Not(c) => !self.claim(c)?,
            Claim::And(a, b) => self.claim(a)? && self.claim(b)?,
            Claim::Or(a, b) => self.claim(a)? || self.claim(b)?,
            Claim::Compare(a, cmp, b) => {
                let (x, y) = (self.expr(a)?, self.expr(b)?);
                match cmp {
                    Cmp::Lt => x < y,
                    Cmp::Le => x <= y,
                    Cmp::Gt => x > y,
                    Cmp::Ge => x >= y,
                    Cmp::Eq => x == y,
                    Cmp::Ne => x != y,
                }
            }
            Claim::Within(x, low, high) => {
                let (x, low, high) = (self.expr(x)?, self.expr(low)?, self.expr(high)?);
                if low > high {
                    return Err(format!("the range [{low}, {high}] is empty").into());
                }
                low <= x && x <= high
            }
        })
    }

    fn expr(&mut self, expr: &Expr) -> Res<f64, L::Error> {
        let x = match expr {
            Expr::Num(x) => *x,
            Expr::Key(address) => {
                let value = self.get(address)?;
                number_from_json(&value).ok_or_else(|| format!("`{}` is `{value}`, not a number", key_text(address)))?
            }
            Expr::Neg(e) => -self.expr(e)?,
            Expr::Bin(op, a, b) => {
                let (a, b) = (self.expr(a)?, self.expr(b)?);
                match op {
                    Op::Add => a + b,
                    Op::Sub => a - b,
                    Op::Mul => a * b,
                    Op::Div => divide(a, b, expr)?,
                }
            }
            Expr::Call(func, args) => {
                let args = args.iter().map(|a| self.expr(a)).collect::<Res<Vec<f64>, _>>()?;
                match (func, args.as_slice()) {
                    (Func::Ratio, [a, b]) => divide(*a, *b, expr)?,
                    (Func::RelDiff, [a, b]) => {
                        let scale = a.abs().max(b.abs());
                        if scale == 0.0 { 0.0 } else { (a - b).abs() / scale }
                    }
                    (Func::Abs, [a]) => a.abs(),
                    (Func::Min, [a, b]) => a.min(*b),
                    (Func::Max, [a, b]) => a.max(*b),
                    _ => return Err(format!("`{expr}`: wrong number of arguments").into()),
                }
            }
        };
        if x.is_nan() {
            return Err(format!("`{expr}` is not a number (NaN)").into());
        }
        Ok(x)
    }
}

fn divide(a: f64, b: f64, expr: &Expr) -> Result<f64, String> {
    if b == 0.0 {
        Err(format!("`{expr}` divides by zero"))
    } else {
        Ok(a / b)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::directive::StateChoice;
    use crate::directive::claim::parse_claim;

    struct Map(HashMap<String, Value>);

    impl Lookup for Map {
        type Error = String;
        fn lookup(&mut self, address: &Address) -> Result<Option<Value>, String> {
            if address.section != "a" {
                return Err(format!("no section `{}`", address.section));
            }
            Ok(self.0.get(&key_text(address)).cloned())
        }
        fn missing(&mut self, address: &Address) -> String {
            format!("does not record `{}`", key_text(address))
        }
    }

    fn decide(claim: &str, values: &[(&str, Value)]) -> Result<Outcome, String> {
        let mut map = Map(values.iter().map(|(k, v)| (k.to_string(), v.clone())).collect());
        evaluate(&parse_claim(claim, StateChoice::Last)?, &mut map).map_err(|f| match f {
            Failure::Lookup(e) | Failure::Claim(e) => e,
        })
    }

    #[test]
    fn a_claim_follows_its_values() {
        let vals = |x: f64, y: f64| [("a.x", Value::from(x)), ("a.y", Value::from(y))];
        let holds = |c: &str, x: f64, y: f64| decide(c, &vals(x, y)).map(|o| o.holds);
        assert_eq!(holds("a.x > a.y", 2.0, 1.0), Ok(true));
        assert_eq!(holds("a.x > a.y", 1.0, 2.0), Ok(false));
        assert_eq!(holds("a.x < 2 * a.y", 3.0, 2.0), Ok(true));
        assert_eq!(holds("a.x < 2 * a.y", 5.0, 2.0), Ok(false));
        assert_eq!(holds("ratio(a.x, a.y) in [0.8, 1.25]", 1.1, 1.0), Ok(true));
        assert_eq!(holds("ratio(a.x, a.y) in [0.8, 1.25]", 1.3, 1.0), Ok(false));
        assert_eq!(holds("reldiff(a.x, a.y) < 0.05", 100.0, 97.0), Ok(true));
        assert_eq!(holds("reldiff(a.x, a.y) < 0.05", 100.0, 94.0), Ok(false));
        assert_eq!(holds("not a.x > a.y or a.x == 2", 2.0, 1.0), Ok(true));
        let out = decide("a.x > a.y", &vals(1.0, 2.0)).unwrap();
        assert_eq!(out.values(), "a.x = 1.0, a.y = 2.0");
    }

    #[test]
    fn has_guards_and_bad_values_are_errors() {
        let vals = [("a.flag", Value::from(true)), ("a.s", Value::from("x"))];
        assert_eq!(
            decide("has a.missing and a.missing > 1", &vals).map(|o| o.holds),
            Ok(false)
        );
        assert_eq!(decide("a.flag", &vals).map(|o| o.holds), Ok(true));
        assert!(
            decide("a.missing > 1", &vals)
                .unwrap_err()
                .contains("does not record `a.missing`")
        );
        assert!(decide("a.s > 1", &vals).unwrap_err().contains("not a number"));
        assert!(decide("a.flag > 1", &vals).unwrap_err().contains("not a number"));
        assert!(decide("b.x > 1", &vals).unwrap_err().contains("no section `b`"));
        assert!(
            decide("ratio(1, 0) > 1", &vals)
                .unwrap_err()
                .contains("divides by zero")
        );
        assert!(decide("1 in [2, 1]", &vals).unwrap_err().contains("empty"));
    }

    #[test]
    fn finite_tells_a_diverged_value_from_a_number() {
        let vals = [
            ("a.x", Value::from(1.5)),
            ("a.nan", Value::from("NaN")),
            ("a.inf", Value::from("inf")),
            ("a.null", Value::Null),
        ];
        let holds = |c: &str| decide(c, &vals).map(|o| o.holds);
        assert_eq!(holds("finite a.x"), Ok(true));
        for key in ["a.nan", "a.inf", "a.null"] {
            assert_eq!(holds(&format!("finite {key}")), Ok(false), "{key}");
        }
        // A guard lets the comparison be read only where it can be decided.
        assert_eq!(holds("finite a.nan and a.nan > 1"), Ok(false));
        assert!(holds("finite a.missing").unwrap_err().contains("does not record"));
        assert!(decide("finite", &vals).is_err());
    }
}
