//! Why a directive could not be rendered, and what to run about it. The book build collects every
//! problem in every chapter and fails with all of them: no value is ever left blank.

use std::fmt;
use std::path::PathBuf;

use super::directive::SYNTAX;

/// The command that (re)records one section.
pub fn rerun(section: &str) -> String {
    format!("cargo run --release --bin lecture -- --section {section}")
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Cause {
    #[error("malformed directive: {0}")]
    Malformed(String),

    #[error("no trace file {}", path.display())]
    MissingTrace { path: PathBuf },

    #[error("trace folder {} holds no trace (`*.json`)", dir.display())]
    NoTraces { dir: PathBuf },

    #[error("cannot read trace: {0}")]
    BadTrace(String),

    #[error("trace {} has no section `{section}`", trace.display())]
    MissingSection { trace: PathBuf, section: String },

    #[error("section `{section}` is not part of this lecture (sections: {known})")]
    UnknownSection { section: String, known: String },

    #[error("trace {} section `{section}` has no value `{name}` (it records: {known})", trace.display())]
    MissingValue { trace: PathBuf, section: String, name: String, known: String },

    #[error("trace {}: `{address}` has nothing at `{step}` ({what})", trace.display())]
    MissingPath { trace: PathBuf, address: String, step: String, what: String },

    #[error(
        "section `{section}` changed since trace {} recorded it (the trace holds the hash of older source)",
        trace.display()
    )]
    Stale { trace: PathBuf, section: String, device: String },

    #[error("`{address}` in trace {}: {msg}", trace.display())]
    BadValue { trace: PathBuf, address: String, msg: String },

    #[error("unknown chart `{id}` (charts: {known})")]
    UnknownChart { id: String, known: String },

    #[error("chart `{id}` could not be drawn: {msg}")]
    Chart { id: String, msg: String },

    #[error("{0}")]
    Structure(String),
}

impl Cause {
    /// What the author or reader should do.
    pub fn fix(&self) -> String {
        match self {
            Cause::Malformed(_) | Cause::Structure(_) => format!(
                "directives look like {SYNTAX}; block directives stand alone on their line; to show `{{{{` literally, put it in backticks or write `\\{{{{`"
            ),
            Cause::MissingTrace { .. } | Cause::NoTraces { .. } => {
                "run `cargo run --release --bin lecture` (on the device the trace is named after) to write it".into()
            }
            Cause::BadTrace(_) => "re-run `cargo run --release --bin lecture` to write a fresh trace".into(),
            Cause::MissingSection { section, .. } => format!("run `{}` to record it", rerun(section)),
            Cause::UnknownSection { .. } => "fix the section id in the directive (`cargo run --release --bin lecture -- --list` lists them)".into(),
            Cause::MissingValue { section, name, .. } => format!(
                "fix the name in the directive, or record `{name}` in section `{section}` and run `{}`",
                rerun(section)
            ),
            Cause::MissingPath { .. } => "fix the path after the value's name".into(),
            Cause::Stale { section, device, .. } => format!("run `{}` on {device} to record it again", rerun(section)),
            Cause::BadValue { .. } => "use a format that fits the value, or address a part of it".into(),
            Cause::UnknownChart { .. } => "fix the chart id (charts are listed in src/book/chart/mod.rs)".into(),
            Cause::Chart { .. } => "check the section's recorded values; re-run the section if they are missing".into(),
        }
    }
}

/// A cause, located: chapter, line and the directive as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The chapter's file, relative to the book's `src` folder.
    pub chapter: PathBuf,
    pub line: usize,
    pub directive: String,
    pub cause: Cause,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: `{}`: {}\n    fix: {}", self.chapter.display(), self.line, self.directive, self.cause, self.cause.fix())
    }
}

/// Writes a list of problems, one paragraph each.
pub fn report(problems: &[Problem]) -> String {
    let mut text = format!("the book has {} problem(s):", problems.len());
    for p in problems {
        text.push_str("\n  ");
        text.push_str(&p.to_string().replace('\n', "\n  "));
    }
    text
}
