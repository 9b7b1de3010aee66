//! Two traces of the lecture compared value by value: `lecture compare A B`, and the test that
//! holds a committed trace to a fresh run. Everything a section records is compared: its place in
//! the lecture, code hash, seed, the order of its record calls, and each value's unit, kind,
//! dtype, shape, line, token and every state of its history, down to each element of a list or
//! field of an object. What may differ is read from the values' kinds ([`by_kind`]): nothing
//! given or computed may, what a clock or the device decided may, and what a kernel's rounding
//! decided may when the two runs used different bf16 kernels. A caller with other needs says
//! node by node ([`Treatment`]).

use std::fmt;

use serde_json::Value;

use crate::schema::{Kind, SectionRecord, Trace, ValueRecord};

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
    /// Not compared here, and said so: the caller explains why.
    Skip,
}

/// What a comparison found.
#[derive(Debug, Default)]
pub struct Report {
    /// What the two traces are called in the differences ("committed" and "fresh").
    pub names: [String; 2],
    /// Each difference, naming its location and both sides.
    pub differences: Vec<String>,
    /// Locations not compared by [`Treatment::Skip`].
    pub skipped: Vec<Loc>,
    /// Locations not compared by [`Treatment::Ignore`].
    pub ignored: Vec<Loc>,
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
            Treatment::Ignore => self.ignored.push(loc.clone()),
            Treatment::Skip => self.skipped.push(loc.clone()),
            Treatment::Exact => match (a, b) {
                (Value::Object(x), Value::Object(y)) => {
                    let (kx, ky): (Vec<&String>, Vec<&String>) = (x.keys().collect(), y.keys().collect());
                    if kx != ky {
                        self.differ(format!(
                            "{loc}: fields differ: {} {kx:?}, {} {ky:?}",
                            self.names[0], self.names[1]
                        ));
                        return;
                    }
                    for (k, v) in x {
                        self.walk(&loc.at(Seg::Key(k.clone())), v, &y[k], treat);
                    }
                }
                (Value::Array(x), Value::Array(y)) => {
                    if x.len() != y.len() {
                        self.differ(format!(
                            "{loc}: length differs: {} {}, {} {}",
                            self.names[0],
                            x.len(),
                            self.names[1],
                            y.len()
                        ));
                        return;
                    }
                    for (i, (p, q)) in x.iter().zip(y).enumerate() {
                        self.walk(&loc.at(Seg::Index(i)), p, q, treat);
                    }
                }
                _ if a == b => {}
                _ => self.differ(self.both(loc, a, b)),
            },
        }
    }

    fn both(&self, loc: &Loc, a: &Value, b: &Value) -> String {
        format!("{loc}: {} {}, {} {}", self.names[0], short(a), self.names[1], short(b))
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
            ("kind", a.kind() == b.kind()),
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
                "{label}: {} {} state(s), {} {}",
                self.names[0],
                a.num_states(),
                self.names[1],
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
                "{id}: recorded with seed {} ({}) and {} ({})",
                a.run.seed, self.names[0], b.run.seed, self.names[1]
            ));
        }
        let (na, nb): (Vec<&String>, Vec<&String>) = (a.values.keys().collect(), b.values.keys().collect());
        if na != nb {
            let only = |x: &[&String], y: &[&String]| -> Vec<String> {
                x.iter().filter(|n| !y.contains(n)).map(|n| n.to_string()).collect()
            };
            self.differ(format!(
                "{id}: records other values: only {} {:?}, only {} {:?}{}",
                self.names[0],
                only(&na, &nb),
                self.names[1],
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

/// Compares every section of `a` with the same section of `b`, calling them `names` in what it
/// reports.
pub fn compare_sections(a: &Trace, b: &Trace, names: [&str; 2], treat: &dyn Fn(&Loc) -> Treatment) -> Report {
    let mut report = Report {
        names: names.map(String::from),
        ..Report::default()
    };
    let ids = |t: &Trace| t.sections.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    if ids(a) != ids(b) {
        report.differ(format!(
            "the sections differ: {} {:?}, {} {:?}",
            names[0],
            ids(a),
            names[1],
            ids(b)
        ));
    }
    for x in &a.sections {
        if let Some(y) = b.section(&x.id) {
            report.section(x, y, treat);
        }
    }
    report
}

/// The kind that decides how a value is compared: `a`'s, else (a trace older code recorded,
/// without kinds) `b`'s.
fn kind_of(a: &Trace, b: &Trace, section: &str, name: &str) -> Option<Kind> {
    let of = |t: &Trace| t.value(section, name).and_then(ValueRecord::kind);
    of(a).or_else(|| of(b))
}

/// How a value of `kind` is compared between two runs of the same code on the same CPU, which
/// ran the same bf16 kernel or not. A value without a kind (older code) is compared exactly.
fn treatment(kind: Option<Kind>, same_kernel: bool) -> Treatment {
    match kind {
        Some(Kind::Clock | Kind::Device) => Treatment::Ignore,
        Some(Kind::Rounding) if !same_kernel => Treatment::Skip,
        _ => Treatment::Exact,
    }
}

/// Compares two traces of one CPU as their values' kinds say (see [`treatment`]).
pub fn by_kind(a: &Trace, b: &Trace, names: [&str; 2], same_kernel: bool) -> Report {
    compare_sections(a, b, names, &|loc| {
        treatment(kind_of(a, b, &loc.section, &loc.value), same_kernel)
    })
}

/// What `lecture compare A B` prints, and whether the traces differ where their kinds say a
/// rerun must agree.
pub struct Summary {
    pub lines: Vec<String>,
    pub differ: bool,
}

/// Two trace files compared as their kinds say, for a reader: who recorded each, how many values
/// of each kind were compared or left out, every difference, and each clock's seconds side by
/// side (B over A: run twice before trusting a ratio).
pub fn summarize(names: [&str; 2], a: &Trace, b: &Trace) -> Summary {
    let kernel = |t: &Trace| t.provenance.device.details.get("bf16_matmul_isa").cloned();
    let same_kernel = kernel(a) == kernel(b);
    let report = by_kind(a, b, ["A", "B"], same_kernel);
    let mut lines = Vec::new();
    for (label, name, t) in [("A", names[0], a), ("B", names[1], b)] {
        lines.push(format!(
            "{label}: {name}: {} ({}), {} section(s), newest recorded {}",
            t.provenance.device.name,
            t.provenance.device.slug,
            t.sections.len(),
            t.created_at().unwrap_or("never")
        ));
    }
    if a.provenance.device.slug != b.provenance.device.slug {
        lines.push(
            "note: two devices: computed values may differ in their last digits where the devices' float arithmetic \
             differs (another matmul kernel sums in another order)"
                .into(),
        );
    }
    let mut counts: Vec<(String, usize)> = Vec::new();
    for s in &a.sections {
        for name in s.values.keys() {
            if b.value(&s.id, name).is_none() {
                continue;
            }
            let kind = kind_of(a, b, &s.id, name);
            let word = kind.map_or("no kind (older code)", Kind::word).to_string();
            match counts.iter_mut().find(|(w, _)| *w == word) {
                Some((_, n)) => *n += 1,
                None => counts.push((word, 1)),
            }
        }
    }
    let listed: Vec<String> = counts.iter().map(|(w, n)| format!("{n} {w}")).collect();
    lines.push(format!("values in both: {}", listed.join(", ")));
    lines.push(format!(
        "compared: given and computed values{}; left out: what a clock or the device decided ({} place(s))",
        if same_kernel {
            ", and a kernel's rounding (the same bf16 kernel)"
        } else {
            ""
        },
        report.ignored.len()
    ));
    if !report.skipped.is_empty() {
        let mut values: Vec<String> = report
            .skipped
            .iter()
            .map(|l| format!("{}.{}", l.section, l.value))
            .collect();
        values.dedup();
        lines.push(format!(
            "left out, another bf16 kernel's rounding ({:?} and {:?}): {}",
            kernel(a).unwrap_or_default(),
            kernel(b).unwrap_or_default(),
            values.join(", ")
        ));
    }
    lines.push("seconds a clock measured (B over A):".into());
    for s in &a.sections {
        for (name, x) in &s.values {
            let Some(y) = b.value(&s.id, name) else { continue };
            if x.kind() != Some(Kind::Clock) {
                continue;
            }
            for (label, p, q) in seconds(name, x, y) {
                lines.push(format!("  {}.{label}: {p:.4e} s, {q:.4e} s: {:.3}×", s.id, q / p));
            }
        }
    }
    if report.differences.is_empty() {
        lines.push("no differences where the kinds say two runs must agree".into());
    } else {
        lines.push(format!("{} difference(s):", report.differences.len()));
        lines.extend(report.differences.iter().map(|d| format!("  {d}")));
    }
    Summary {
        differ: !report.differences.is_empty(),
        lines,
    }
}

/// The seconds a clock value holds in both traces: the value itself in seconds, or each point of
/// a list of timings (`median_s`), labelled by its words and its size `n` (a sweep's points).
fn seconds(name: &str, x: &ValueRecord, y: &ValueRecord) -> Vec<(String, f64, f64)> {
    if x.unit == crate::schema::Unit::Seconds {
        return match (x.value.as_f64(), y.value.as_f64()) {
            (Some(p), Some(q)) => vec![(name.to_string(), p, q)],
            _ => Vec::new(),
        };
    }
    let (Some(xs), Some(ys)) = (x.value.as_array(), y.value.as_array()) else {
        return Vec::new();
    };
    let median = |v: &Value| v.get("median_s").and_then(Value::as_f64);
    xs.iter()
        .zip(ys)
        .filter_map(|(p, q)| {
            let tags: Vec<String> = p
                .as_object()?
                .iter()
                .filter(|(k, v)| v.is_string() || *k == "n")
                .map(|(k, v)| v.as_str().map_or_else(|| format!("{k}={v}"), String::from))
                .collect();
            Some((format!("{name} {}", tags.join(" ")), median(p)?, median(q)?))
        })
        .collect()
}
