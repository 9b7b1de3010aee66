//! Two traces of the lecture compared value by value (`tests/trace/committed_trace/` holds a committed trace
//! against a fresh run). Everything a section records is compared: its place in the lecture, code
//! hash, seed, the order of its record calls, and each value's unit, dtype, shape, timing mark,
//! line, token and every state of its history, down to each element of a list or field of an
//! object. What may differ is the caller's to say, node by node ([`Treatment`]).

use std::fmt;

use cs336::trace::{SectionRecord, Trace, ValueRecord};
use serde_json::Value;

/// One step into a JSON value.
#[derive(Debug, Clone)]
pub enum Seg {
    Key(String),
    Index(usize),
}

impl fmt::Display for Seg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Seg::Key(k) => write!(f, "{k}"),
            Seg::Index(i) => write!(f, "{i}"),
        }
    }
}

/// Where a compared item lies: a section's value (at a state of its history, or its last) and a
/// path inside it.
#[derive(Debug, Clone)]
pub struct Loc {
    pub section: String,
    pub value: String,
    /// `Some(k)`: the k-th earlier state of a value recorded as a history.
    pub state: Option<usize>,
    pub path: Vec<Seg>,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.section, self.value)?;
        for seg in &self.path {
            write!(f, ".{seg}")?;
        }
        if let Some(k) = self.state {
            write!(f, " (state {k})")?;
        }
        Ok(())
    }
}

impl Loc {
    fn at(&self, seg: Seg) -> Loc {
        let mut next = self.clone();
        next.path.push(seg);
        next
    }
}

/// How to compare the item at a location (and everything inside it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Treatment {
    /// Bit for bit; an object or list is compared item by item, each asked again.
    Exact,
    /// Not compared: the machine decides it.
    Ignore,
    /// Same structure, numbers within this relative difference.
    Within(f64),
    /// Not compared here, and said so: the caller explains why.
    Skip,
}

/// What a comparison found.
#[derive(Debug, Default)]
pub struct Report {
    /// Each difference, naming its location and both sides.
    pub differences: Vec<String>,
    /// Locations not compared by [`Treatment::Skip`].
    pub skipped: Vec<Loc>,
    /// Locations compared by [`Treatment::Within`] (and found within).
    pub within: Vec<Loc>,
}

/// At most this many differences are listed per value (a changed list would list every element).
const PER_VALUE: usize = 4;

fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(120) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

impl Report {
    fn differ(&mut self, what: String) {
        self.differences.push(what);
    }

    fn walk(&mut self, loc: &Loc, a: &Value, b: &Value, treat: &dyn Fn(&Loc) -> Treatment) {
        match treat(loc) {
            Treatment::Ignore => {}
            Treatment::Skip => self.skipped.push(loc.clone()),
            Treatment::Within(rel) => {
                let before = self.differences.len();
                self.within_walk(loc, a, b, rel);
                if self.differences.len() == before {
                    self.within.push(loc.clone());
                }
            }
            Treatment::Exact => match (a, b) {
                (Value::Object(x), Value::Object(y)) => {
                    let (kx, ky): (Vec<&String>, Vec<&String>) = (x.keys().collect(), y.keys().collect());
                    if kx != ky {
                        self.differ(format!("{loc}: fields differ: committed {kx:?}, fresh {ky:?}"));
                        return;
                    }
                    for (k, v) in x {
                        self.walk(&loc.at(Seg::Key(k.clone())), v, &y[k], treat);
                    }
                }
                (Value::Array(x), Value::Array(y)) => {
                    if x.len() != y.len() {
                        self.differ(format!(
                            "{loc}: length differs: committed {}, fresh {}",
                            x.len(),
                            y.len()
                        ));
                        return;
                    }
                    for (i, (p, q)) in x.iter().zip(y).enumerate() {
                        self.walk(&loc.at(Seg::Index(i)), p, q, treat);
                    }
                }
                _ if a == b => {}
                _ => self.differ(format!("{loc}: committed {}, fresh {}", short(a), short(b))),
            },
        }
    }

    fn within_walk(&mut self, loc: &Loc, a: &Value, b: &Value, rel: f64) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) if x.keys().eq(y.keys()) => {
                for (k, v) in x {
                    self.within_walk(&loc.at(Seg::Key(k.clone())), v, &y[k], rel);
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    self.within_walk(&loc.at(Seg::Index(i)), p, q, rel);
                }
            }
            (Value::Number(x), Value::Number(y)) => {
                let (x, y) = (x.as_f64().unwrap_or(f64::NAN), y.as_f64().unwrap_or(f64::NAN));
                // A NaN (a number JSON cannot hold exactly) is never within.
                let within = (x - y).abs() <= rel * x.abs().max(y.abs());
                if !within {
                    self.differ(format!(
                        "{loc}: committed {x}, fresh {y}: more than {rel:e} apart (relative)"
                    ));
                }
            }
            _ if a == b => {}
            _ => self.differ(format!("{loc}: committed {}, fresh {}", short(a), short(b))),
        }
    }

    /// One value: its fields, each earlier state, then its last state.
    fn value(
        &mut self,
        section: &str,
        name: &str,
        a: &ValueRecord,
        b: &ValueRecord,
        treat: &dyn Fn(&Loc) -> Treatment,
    ) {
        let label = format!("{section}.{name}");
        let fields = [
            ("unit", a.unit == b.unit),
            ("dtype", a.dtype == b.dtype),
            ("shape", a.shape == b.shape),
            ("timed", a.timed == b.timed),
            ("line", a.line == b.line),
            ("token", a.token == b.token),
        ];
        for (field, same) in fields {
            if !same {
                self.differ(format!("{label}: its {field} differs"));
            }
        }
        if a.history.len() != b.history.len() {
            self.differ(format!(
                "{label}: committed {} state(s), fresh {}",
                a.num_states(),
                b.num_states()
            ));
            return;
        }
        let root = |state| Loc {
            section: section.to_string(),
            value: name.to_string(),
            state,
            path: Vec::new(),
        };
        for (k, (x, y)) in a.history.iter().zip(&b.history).enumerate() {
            if (x.line, x.token) != (y.line, y.token) {
                self.differ(format!("{label} (state {k}): recorded on another line"));
            }
            if (&x.dtype, &x.shape) != (&y.dtype, &y.shape) {
                self.differ(format!("{label} (state {k}): its dtype or shape differs"));
            }
            self.walk(&root(Some(k)), &x.value, &y.value, treat);
        }
        self.walk(&root(None), &a.value, &b.value, treat);
    }

    fn section(&mut self, a: &SectionRecord, b: &SectionRecord, treat: &dyn Fn(&Loc) -> Treatment) {
        let id = &a.id;
        if a.source_hash != b.source_hash {
            self.differ(format!(
                "{id}: its code changed since the trace was recorded (run `cargo run --release --bin lecture` \
                 and commit the trace)"
            ));
            return;
        }
        for (what, same) in [
            ("title", a.title == b.title),
            ("source_file", a.source_file == b.source_file),
            ("source_line", a.source_line == b.source_line),
        ] {
            if !same {
                self.differ(format!("{id}: its {what} differs"));
            }
        }
        if a.run.seed != b.run.seed {
            self.differ(format!(
                "{id}: recorded with seed {}, the fresh run used {}",
                a.run.seed, b.run.seed
            ));
        }
        let (na, nb): (Vec<&String>, Vec<&String>) = (a.values.keys().collect(), b.values.keys().collect());
        if na != nb {
            let only = |x: &[&String], y: &[&String]| -> Vec<String> {
                x.iter().filter(|n| !y.contains(n)).map(|n| n.to_string()).collect()
            };
            self.differ(format!(
                "{id}: records other values: only committed {:?}, only fresh {:?}{}",
                only(&na, &nb),
                only(&nb, &na),
                if only(&na, &nb).is_empty() && only(&nb, &na).is_empty() {
                    " (another order)"
                } else {
                    ""
                }
            ));
        }
        for (name, x) in &a.values {
            if let Some(y) = b.values.get(name) {
                let before = self.differences.len();
                self.value(id, name, x, y, treat);
                let extra = self.differences.len() - before;
                if extra > PER_VALUE {
                    self.differences.truncate(before + PER_VALUE);
                    self.differ(format!("{id}.{name}: and {} more difference(s)", extra - PER_VALUE));
                }
            }
        }
        if na == nb && a.steps != b.steps {
            self.differ(format!("{id}: its record calls ran in another order (steps)"));
        }
    }
}

/// Compares every section of `committed` with the same section of `fresh`.
pub fn compare_sections(committed: &Trace, fresh: &Trace, treat: &dyn Fn(&Loc) -> Treatment) -> Report {
    let mut report = Report::default();
    let ids = |t: &Trace| t.sections.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    if ids(committed) != ids(fresh) {
        report.differ(format!(
            "the sections differ: committed {:?}, fresh {:?}",
            ids(committed),
            ids(fresh)
        ));
    }
    for a in &committed.sections {
        if let Some(b) = fresh.section(&a.id) {
            report.section(a, b, treat);
        }
    }
    report
}
