//! Claims: comparisons over trace values that the build decides. A chapter states what happened
//! on this device with `{{if CLAIM}} … {{else if CLAIM}} … {{else}} … {{end}}`, and with
//! `{{assert CLAIM}}` what must hold of measured values (a fact of the code alone is checked in
//! the section, `check!`, and quoted with `{{check}}`), so that no sentence comparing two
//! measured quantities can say the opposite of the trace it is built from.
//!
//! ```text
//! claim  := or
//! or     := and ("or" and)*
//! and    := unary ("and" unary)*
//! unary  := "not" unary | "(" claim ")" | "has" KEY | "finite" KEY | cmp
//! cmp    := expr (("<" | "<=" | ">" | ">=" | "==" | "!=") expr | "in" "[" expr "," expr "]")?
//!           (without a comparison, `expr` must be a KEY holding true or false)
//! expr   := term (("+" | "-") term)*
//! term   := factor (("*" | "/") factor)*
//! factor := NUMBER | KEY | "-" factor | "(" expr ")" | FUNC "(" expr ("," expr)* ")"
//! FUNC   := ratio(a, b) = a / b | reldiff(a, b) = |a - b| / max(|a|, |b|) | abs | min | max
//! KEY    := SECTION.NAME[.PATH][@STATE]      (STATE: first, last or an index)
//! ```

mod eval;
mod parse;

pub use eval::{Failure, Lookup, Outcome, evaluate};
pub use parse::parse_claim;

use std::fmt;

use super::Address;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// An arithmetic operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

/// A function of numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Ratio,
    RelDiff,
    Abs,
    Min,
    Max,
}

/// A number-valued expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Num(f64),
    Key(Address),
    Neg(Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
}

/// A true-or-false statement about trace values.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// A recorded boolean.
    Bool(Address),
    /// Whether the trace records the value at all.
    Has(Address),
    /// Whether the recorded value is a finite number: not NaN, infinite or `null` (serde writes
    /// a NaN inside a list or object as `null`). A training run that diverged records such
    /// values, and a what-if's learning rate can make it diverge.
    Finite(Address),
    Not(Box<Claim>),
    And(Box<Claim>, Box<Claim>),
    Or(Box<Claim>, Box<Claim>),
    Compare(Expr, Cmp, Expr),
    /// `expr in [low, high]`, both ends included.
    Within(Expr, Expr, Expr),
}

impl Func {
    pub fn name(self) -> &'static str {
        match self {
            Func::Ratio => "ratio",
            Func::RelDiff => "reldiff",
            Func::Abs => "abs",
            Func::Min => "min",
            Func::Max => "max",
        }
    }

    /// How many arguments it takes.
    pub fn arity(self) -> usize {
        match self {
            Func::Abs => 1,
            _ => 2,
        }
    }

    pub fn from_name(word: &str) -> Option<Func> {
        [Func::Ratio, Func::RelDiff, Func::Abs, Func::Min, Func::Max]
            .into_iter()
            .find(|f| f.name() == word)
    }
}

impl Cmp {
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
        }
    }
}

/// A key as a claim writes it: `SECTION.NAME.PATH`, with `@STATE` unless it is the final state.
pub fn key_text(address: &Address) -> String {
    let mut text = format!("{}.{}", address.section, address.name);
    for step in &address.path {
        text.push('.');
        text.push_str(step);
    }
    if address.state != super::StateChoice::Last {
        text.push_str(&format!("@{}", address.state));
    }
    text
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Num(x) => write!(f, "{x}"),
            Expr::Key(a) => f.write_str(&key_text(a)),
            Expr::Neg(e) => write!(f, "-{e}"),
            Expr::Bin(op, a, b) => {
                let sym = match op {
                    Op::Add => "+",
                    Op::Sub => "-",
                    Op::Mul => "*",
                    Op::Div => "/",
                };
                write!(f, "({a} {sym} {b})")
            }
            Expr::Call(func, args) => {
                let args: Vec<String> = args.iter().map(ToString::to_string).collect();
                write!(f, "{}({})", func.name(), args.join(", "))
            }
        }
    }
}

impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Claim::Bool(a) => f.write_str(&key_text(a)),
            Claim::Has(a) => write!(f, "has {}", key_text(a)),
            Claim::Finite(a) => write!(f, "finite {}", key_text(a)),
            Claim::Not(c) => write!(f, "not {c}"),
            Claim::And(a, b) => write!(f, "({a} and {b})"),
            Claim::Or(a, b) => write!(f, "({a} or {b})"),
            Claim::Compare(a, cmp, b) => write!(f, "{a} {} {b}", cmp.symbol()),
            Claim::Within(x, lo, hi) => write!(f, "{x} in [{lo}, {hi}]"),
        }
    }
}
