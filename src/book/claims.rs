//! What the claim directives do in a chapter: `if`/`else if`/`else`/`end` choose which text stays,
//! and `assert` fails the build when a fact does not hold. Claims read the trace through [`Traces::resolve`], so a value a claim reads counts as
//! quoted by the chapter: its section must be fresh, and it appears in the provenance box.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::directive::claim::{Claim, Failure, Lookup, Outcome, evaluate, key_text};
use super::directive::{Address, Directive, Found};
use super::problem::Cause;
use super::render::Located;
use super::traces::Traces;
use super::unrecorded::unrecorded;
use crate::trace::Trace;

/// An open `if`.
struct Open {
    line: usize,
    text: String,
    /// Whether the branch being read now is kept (its parents' too).
    keep: bool,
    /// Whether the text around the `if` is kept.
    parent: bool,
    /// Whether some branch was taken already.
    taken: bool,
    in_else: bool,
}

/// The open `if`s of a chapter, innermost last.
#[derive(Default)]
pub struct Branches {
    open: Vec<Open>,
    /// What to show where the last step's claim could not be decided for a value the trace's
    /// older run never recorded.
    note: Option<String>,
}

impl Branches {
    /// Whether text here is kept.
    pub fn active(&self) -> bool {
        // An `if`'s `keep` already holds its parents' (a branch is kept only inside kept text),
        // so the innermost says it: asking every open `if` made 100,000 nested ones quadratic.
        self.open.last().is_none_or(|o| o.keep)
    }

    /// The note the last step left (see `note`).
    pub fn take_note(&mut self) -> Option<String> {
        self.note.take()
    }

    /// Takes one `if`/`else if`/`else`/`end`/`assert`. The structure is kept even when a claim
    /// cannot be decided, so one build reports every problem. A claim that needs a value the
    /// trace's older run never recorded takes no branch of its `if` (not even `else`) and leaves a
    /// note saying so; such an `assert` is not checked, and the page lists the value.
    pub fn step(&mut self, directive: &Directive, found: &Found, traces: &mut Traces) -> Result<(), Cause> {
        let active = self.active();
        let mut undecided = None;
        let mut decide_or_note = |decided: Result<bool, Cause>, traces: &mut Traces| match decided {
            Err(cause) => match unrecorded(traces, &cause) {
                Some(missing) => {
                    undecided = Some(missing.undecided());
                    traces.note_unrecorded(missing);
                    Ok(None)
                }
                None => Err(cause),
            },
            Ok(holds) => Ok(Some(holds)),
        };
        match directive {
            Directive::If { claim, trace } => {
                let decided = if active {
                    decide_or_note(holds(claim, trace.as_deref(), traces), traces)
                } else {
                    Ok(Some(false))
                };
                let keep = matches!(decided, Ok(Some(true)));
                self.open.push(Open {
                    line: found.line,
                    text: found.text.clone(),
                    keep,
                    parent: active,
                    // Undecided (or failed): no later branch is taken either.
                    taken: !matches!(decided, Ok(Some(false))),
                    in_else: false,
                });
                self.note = undecided;
                decided.map(|_| ())
            }
            Directive::ElseIf { claim, trace } => {
                let Some(o) = self.open.last_mut().filter(|o| !o.in_else) else {
                    return Err(stray("else if"));
                };
                let decided = if o.parent && !o.taken {
                    decide_or_note(holds(claim, trace.as_deref(), traces), traces)
                } else {
                    Ok(Some(false))
                };
                o.keep = matches!(decided, Ok(Some(true)));
                o.taken |= !matches!(decided, Ok(Some(false)));
                self.note = undecided;
                decided.map(|_| ())
            }
            Directive::Else => {
                let Some(o) = self.open.last_mut().filter(|o| !o.in_else) else {
                    return Err(stray("else"));
                };
                o.in_else = true;
                o.keep = o.parent && !o.taken;
                o.taken = true;
                Ok(())
            }
            Directive::End => match self.open.pop() {
                Some(_) => Ok(()),
                None => Err(stray("end")),
            },
            Directive::Assert { claim, trace } if active => {
                let outcome = match decide(claim, trace.as_deref(), traces) {
                    Err(cause) => match unrecorded(traces, &cause) {
                        Some(missing) => {
                            traces.note_unrecorded(missing);
                            return Ok(());
                        }
                        None => return Err(cause),
                    },
                    Ok(outcome) => outcome,
                };
                if outcome.holds {
                    Ok(())
                } else {
                    Err(Cause::AssertFailed {
                        claim: claim.to_string(),
                        values: outcome.values(),
                    })
                }
            }
            _ => Ok(()),
        }
    }

    /// A malformed `{{if …}}` (already reported) opens a branch that is dropped, so that the
    /// structure around it stays readable and its `{{end}}` is not reported as well.
    pub fn open_unparsed(&mut self, found: &Found) {
        let inner = found.text.trim_start_matches('{').trim_start();
        if inner.split_whitespace().next() == Some("if") {
            self.open.push(Open {
                line: found.line,
                text: found.text.clone(),
                keep: false,
                parent: self.active(),
                taken: true,
                in_else: false,
            });
        }
    }

    /// An `if` never closed, for each one still open at the end of the chapter.
    pub fn unclosed(self) -> Vec<Located> {
        self.open
            .into_iter()
            .map(|o| {
                let cause = Cause::Structure("this `{{if}}` is never closed by `{{end}}`".into());
                (o.line, o.text, cause)
            })
            .collect()
    }
}

fn stray(what: &str) -> Cause {
    Cause::Structure(format!("`{{{{{what}}}}}` without an open `{{{{if}}}}`"))
}

fn holds(claim: &Claim, slug: Option<&str>, traces: &mut Traces) -> Result<bool, Cause> {
    decide(claim, slug, traces).map(|o| o.holds)
}

/// Decides `claim` against the trace `slug` names (the page's by default).
pub fn decide(claim: &Claim, slug: Option<&str>, traces: &mut Traces) -> Result<Outcome, Cause> {
    let path = match traces.path(slug) {
        Ok(path) => path,
        // `trace=gpu` without a GPU trace: `has` is false there, anything else fails as missing.
        Err(cause @ Cause::NoGpuTrace { .. }) => return outcome(claim, &mut NoTrace(cause)),
        Err(other) => return Err(other),
    };
    let trace = traces.load(&path)?;
    let mut lookup = TraceLookup {
        traces,
        path,
        trace,
        missing: None,
    };
    outcome(claim, &mut lookup)
}

fn outcome(claim: &Claim, lookup: &mut impl Lookup<Error = Cause>) -> Result<Outcome, Cause> {
    evaluate(claim, lookup).map_err(|f| match f {
        Failure::Lookup(cause) => cause,
        Failure::Claim(msg) => Cause::Claim {
            claim: claim.to_string(),
            msg,
        },
    })
}

/// The trace `trace=gpu` names when the folder has none: it records nothing.
struct NoTrace(Cause);

impl Lookup for NoTrace {
    type Error = Cause;

    fn lookup(&mut self, _: &Address) -> Result<Option<Value>, Cause> {
        Ok(None)
    }

    fn missing(&mut self, _: &Address) -> Cause {
        self.0.clone()
    }
}

struct TraceLookup<'t> {
    traces: &'t mut Traces,
    path: PathBuf,
    trace: Arc<Trace>,
    /// Why the last value not found was not found (what `{{value}}` would have said).
    missing: Option<Cause>,
}

impl Lookup for TraceLookup<'_> {
    type Error = Cause;

    fn lookup(&mut self, address: &Address) -> Result<Option<Value>, Cause> {
        match self.traces.resolve(&self.path, &self.trace, address) {
            Ok(found) => Ok(Some(found.value.clone())),
            Err(cause @ (Cause::MissingValue { .. } | Cause::MissingPath { .. } | Cause::MissingState { .. })) => {
                self.missing = Some(cause);
                Ok(None)
            }
            Err(other) => Err(other),
        }
    }

    fn missing(&mut self, address: &Address) -> Cause {
        self.missing.take().unwrap_or_else(|| Cause::BadValue {
            trace: self.path.clone(),
            address: key_text(address),
            msg: "not recorded".into(),
        })
    }
}
