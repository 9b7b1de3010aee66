//! Why a directive could not be rendered, and what to run about it. The book build collects every
//! problem in every chapter and fails with all of them: no value is ever left blank.

use std::fmt;
use std::path::PathBuf;

use super::directive::SYNTAX;
use crate::console::shorten;

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

    #[error("trace folder {} holds no GPU trace besides the page's own (`trace=gpu`)", dir.display())]
    NoGpuTrace { dir: PathBuf },

    #[error("cannot read trace: {0}")]
    BadTrace(String),

    #[error("trace {} has no section `{section}` (it has: {known})", trace.display())]
    MissingSection {
        trace: PathBuf,
        section: String,
        known: String,
    },

    #[error("trace {} names `{file}` as the source of section `{section}`, which is refused: {why}", trace.display())]
    SourcePath {
        trace: PathBuf,
        section: String,
        file: String,
        why: String,
    },

    #[error("trace {} says section `{section}` is in `{file}`, but {msg}", trace.display())]
    Source {
        trace: PathBuf,
        section: String,
        file: String,
        msg: String,
        device: String,
    },

    #[error("trace {} section `{section}` has no value `{name}` (it records: {known})", trace.display())]
    MissingValue {
        trace: PathBuf,
        section: String,
        name: String,
        known: String,
    },

    #[error("trace {}: `{address}` has nothing at `{step}` ({what})", trace.display())]
    MissingPath {
        trace: PathBuf,
        address: String,
        step: String,
        what: String,
    },

    #[error(
        "trace {}: `{address}` has no state {asked}: the value has {count} state(s), 0 to {}",
        trace.display(),
        count.saturating_sub(1)
    )]
    MissingState {
        trace: PathBuf,
        address: String,
        asked: String,
        count: usize,
    },

    #[error(
        "section `{section}` changed since trace {} recorded it (the trace holds the hash of older source)",
        trace.display()
    )]
    Stale {
        trace: PathBuf,
        section: String,
        device: String,
    },

    #[error("`{address}` in trace {}: {msg}", trace.display())]
    BadValue {
        trace: PathBuf,
        address: String,
        msg: String,
    },

    #[error("unknown chart `{id}` (charts: {known})")]
    UnknownChart { id: String, known: String },

    #[error("chart `{id}` could not be drawn: {msg}")]
    Chart { id: String, msg: String },

    #[error("{0}")]
    Structure(String),

    #[error("no entry `{key}` in the bibliography {} (keys: {known})", bibliography.display())]
    UnknownReference {
        key: String,
        bibliography: PathBuf,
        known: String,
    },

    #[error("`cite` and `references` need the bibliography {}, which does not exist", path.display())]
    NoBibliography { path: PathBuf },

    #[error("claim `{claim}` cannot be decided: {msg}")]
    Claim { claim: String, msg: String },

    #[error("assertion `{claim}` does not hold: {values}")]
    AssertFailed { claim: String, values: String },
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
            Cause::NoGpuTrace { .. } => {
                "guard GPU passages with `{{if has SECTION.NAME trace=gpu}}` (false without a GPU \
                 trace), or record one on a GPU machine (`.ci/gpu-prepare`, then `.ci/gpu-check`)"
                    .into()
            }
            Cause::BadTrace(_) => "re-run `cargo run --release --bin lecture` to write a fresh trace".into(),
            Cause::MissingSection { section, .. } => format!(
                "fix the section id in the directive (`cargo run --release --bin lecture -- --list` lists the \
                 lecture's sections), or run `{}` to record it",
                rerun(section)
            ),
            Cause::SourcePath { .. } => {
                "a trace names source files relative to the crate root (`source-root` under [preprocessor.lecture]); \
                 record the trace again with `cargo run --release --bin lecture`"
                    .into()
            }
            Cause::Source { section, device, .. } => format!(
                "the section's file changed since the trace recorded it (the section moved or was renamed, or the file \
                 no longer reads as Rust source): restore the file, or run `{}` on {device} to record it again",
                rerun(section)
            ),
            Cause::MissingValue { section, name, .. } => format!(
                "fix the name in the directive, or record `{name}` in section `{section}` and run `{}`",
                rerun(section)
            ),
            Cause::MissingPath { .. } => "fix the path after the value's name".into(),
            Cause::MissingState { .. } => {
                "`state=` takes `first`, `last` (the final state, the default) or an index from 0 \
                 over the value's history and final state; `lecture get SECTION.NAME --record` shows them"
                    .into()
            }
            Cause::Stale { section, device, .. } => format!("run `{}` on {device} to record it again", rerun(section)),
            Cause::BadValue { .. } => "use a format that fits the value, or address a part of it".into(),
            Cause::UnknownChart { .. } => "fix the chart id (charts are listed in src/book/chart/mod.rs)".into(),
            Cause::Chart { .. } => "check the section's recorded values; re-run the section if they are missing".into(),
            Cause::UnknownReference { bibliography, .. } => format!(
                "fix the key, or add the source to {} (title, authors, year, url, kind)",
                bibliography.display()
            ),
            Cause::NoBibliography { .. } => {
                "write the bibliography (`references.toml` beside `book.toml`, or the file `bibliography` under \
                 [preprocessor.lecture] names)"
                    .into()
            }
            Cause::Claim { .. } => {
                "fix the claim: its keys must hold numbers (or true/false for a bare key); guard values a device may \
                 not record with `has KEY and …`"
                    .into()
            }
            Cause::AssertFailed { .. } => {
                "an assertion states a fact that must hold on every device: the code of the sections it reads no \
                 longer computes it; fix the code (and run its section again), not the claim"
                    .into()
            }
        }
    }
}

/// Why the book did not build.
#[derive(Debug, thiserror::Error)]
pub enum BookError {
    /// Directives that could not be rendered, every one in the book.
    #[error("{}", report(.0))]
    Problems(Vec<Problem>),

    #[error("building the book at {}: {msg}", root.display())]
    Build { root: PathBuf, msg: String },

    /// The output folder is one the build must not replace; nothing was touched.
    #[error(transparent)]
    OutFolder(#[from] super::out_folder::Refused),
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
        write!(
            f,
            "{}:{}: `{}`: {}\n    fix: {}",
            self.chapter.display(),
            self.line,
            shorten(&self.directive, DIRECTIVE_SHOWN),
            shorten(&self.cause.to_string(), CAUSE_SHOWN),
            self.cause.fix()
        )
    }
}

/// Characters of a directive a message quotes (a directive can be a megabyte long).
const DIRECTIVE_SHOWN: usize = 200;

/// Characters of a cause a message shows (it may quote the claim or a list of keys).
const CAUSE_SHOWN: usize = 2000;

/// How many places a repeated cause lists before "and N more".
const PLACES_SHOWN: usize = 4;

/// Writes a list of problems. Problems with the same cause (a missing trace fails every directive
/// that reads it) are written once, with the places they occur.
pub fn report(problems: &[Problem]) -> String {
    let mut groups: Vec<(String, Vec<&Problem>)> = Vec::new();
    for p in problems {
        let cause = shorten(&p.cause.to_string(), CAUSE_SHOWN);
        match groups.iter_mut().find(|(c, _)| *c == cause) {
            Some((_, members)) => members.push(p),
            None => groups.push((cause, vec![p])),
        }
    }
    let mut text = format!("the book has {} problem(s):", problems.len());
    for (cause, members) in groups {
        text.push_str("\n  ");
        if let [only] = members.as_slice() {
            text.push_str(&only.to_string().replace('\n', "\n  "));
            continue;
        }
        text.push_str(&format!("{cause}\n    in {} directives: ", members.len()));
        let places: Vec<String> = members
            .iter()
            .take(PLACES_SHOWN)
            .map(|p| {
                let directive = shorten(&p.directive, DIRECTIVE_SHOWN);
                format!("{}:{} `{directive}`", p.chapter.display(), p.line)
            })
            .collect();
        text.push_str(&places.join(", "));
        if members.len() > PLACES_SHOWN {
            text.push_str(&format!(" and {} more", members.len() - PLACES_SHOWN));
        }
        text.push_str(&format!("\n    fix: {}", members[0].cause.fix()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(line: usize, cause: Cause) -> Problem {
        Problem {
            chapter: PathBuf::from("src/a.md"),
            line,
            directive: format!("{{{{value x.y{line}}}}}"),
            cause,
        }
    }

    #[test]
    fn repeated_causes_are_reported_once_with_their_places() {
        let missing = Cause::MissingTrace {
            path: PathBuf::from("trace/lecture_02/gpu.json"),
        };
        let mut problems: Vec<Problem> = (1..=6).map(|l| problem(l, missing.clone())).collect();
        problems.push(problem(9, Cause::Malformed("unknown directive `x`".into())));
        let text = report(&problems);
        assert_eq!(
            text.matches("no trace file trace/lecture_02/gpu.json").count(),
            1,
            "{text}"
        );
        assert!(
            text.contains("in 6 directives: src/a.md:1 `{{value x.y1}}`, src/a.md:2"),
            "{text}"
        );
        assert!(text.contains("and 2 more"), "{text}");
        assert!(
            text.contains("src/a.md:9: `{{value x.y9}}`: malformed directive: unknown directive `x`"),
            "{text}"
        );
        assert_eq!(text.matches("fix: ").count(), 2);
        assert!(text.starts_with("the book has 7 problem(s):"));
    }

    /// A megabyte-long directive is quoted by its start, with its length.
    #[test]
    fn long_directives_and_causes_are_cut_in_messages() {
        let directive = format!("{{{{assert {} == 1}}}}", "1 + ".repeat(250_000));
        let claim = directive.clone();
        let problem = Problem {
            chapter: PathBuf::from("src/a.md"),
            line: 3,
            directive,
            cause: Cause::Claim {
                claim,
                msg: "too many tokens".into(),
            },
        };
        let text = report(&[problem.clone(), problem]);
        assert!(text.len() < 6_000, "{} characters", text.len());
        assert!(text.contains("characters in all)"), "{}", &text[..500]);
        assert!(text.contains("src/a.md:3 `{{assert 1 + 1 + "), "{}", &text[..500]);
    }
}
