//! Which trace a directive reads, loading it once per build, and the checks that keep the book
//! honest: the section must be in the trace, and its code must not have changed since it ran
//! (`sections`). The default trace is held to that strictly; a trace of another device (read
//! through `trace=SLUG` or `compare`) that ran older code is shown with a mark instead, since only
//! that device could record it again.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::directive::Address;
use super::problem::Cause;
use super::sections::{Resolved, Section, Sources};
use crate::trace::{self, Trace};

/// The trace a page uses when its directives do not name one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceChoice {
    /// The trace in the folder with the latest `created_at`: after `lecture` runs, its own.
    Newest,
    /// `<dir>/<slug>.json`.
    Slug(String),
    /// A file anywhere (what `lecture` passes for the trace it has just written).
    File(PathBuf),
}

impl TraceChoice {
    /// `newest`, a slug, or (with a `/` or a `.json` ending) a file path.
    pub fn parse(text: &str) -> TraceChoice {
        if text == "newest" {
            TraceChoice::Newest
        } else if text.contains('/') || text.ends_with(".json") {
            TraceChoice::File(PathBuf::from(text))
        } else {
            TraceChoice::Slug(text.to_string())
        }
    }
}

/// The traces one book build reads.
pub struct Traces {
    dir: PathBuf,
    default: TraceChoice,
    loaded: HashMap<PathBuf, Result<Arc<Trace>, Cause>>,
    default_path: Option<Result<PathBuf, Cause>>,
    sources: Sources,
}

impl Traces {
    /// Traces in `dir`, `default` for pages, section code read from files under `source_root`.
    pub fn new(dir: &Path, default: TraceChoice, source_root: &Path) -> Traces {
        Traces {
            dir: clean(dir),
            default,
            loaded: HashMap::new(),
            default_path: None,
            sources: Sources::new(source_root),
        }
    }

    /// The file a directive reads: the named trace, or the page default.
    pub fn path(&mut self, slug: Option<&str>) -> Result<PathBuf, Cause> {
        if let Some(slug) = slug {
            return Ok(self.dir.join(format!("{slug}.json")));
        }
        if let Some(found) = &self.default_path {
            return found.clone();
        }
        let found = self.find_default();
        self.default_path = Some(found.clone());
        found
    }

    fn find_default(&mut self) -> Result<PathBuf, Cause> {
        match self.default.clone() {
            TraceChoice::Slug(slug) => Ok(self.dir.join(format!("{slug}.json"))),
            TraceChoice::File(path) => Ok(clean(&path)),
            TraceChoice::Newest => {
                let all = self.all()?;
                let newest = all
                    .iter()
                    .max_by(|a, b| a.1.provenance.created_at.cmp(&b.1.provenance.created_at));
                newest
                    .map(|(p, _)| p.clone())
                    .ok_or_else(|| Cause::NoTraces { dir: self.dir.clone() })
            }
        }
    }

    /// Loads (once) and returns a trace.
    pub fn load(&mut self, path: &Path) -> Result<Arc<Trace>, Cause> {
        if let Some(done) = self.loaded.get(path) {
            return done.clone();
        }
        let result = if path.is_file() {
            trace::load(path)
                .map(Arc::new)
                .map_err(|e| Cause::BadTrace(e.to_string()))
        } else {
            Err(Cause::MissingTrace {
                path: path.to_path_buf(),
            })
        };
        self.loaded.insert(path.to_path_buf(), result.clone());
        result
    }

    /// Every trace in the folder: the CPU's first, then by file name.
    pub fn all(&mut self) -> Result<Vec<(PathBuf, Arc<Trace>)>, Cause> {
        let entries = std::fs::read_dir(&self.dir).map_err(|_| Cause::NoTraces { dir: self.dir.clone() })?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
            .collect();
        if paths.is_empty() {
            return Err(Cause::NoTraces { dir: self.dir.clone() });
        }
        paths.sort_by_key(|p| (p.file_stem().is_none_or(|s| s != "cpu"), p.clone()));
        paths.into_iter().map(|p| self.load(&p).map(|t| (p, t))).collect()
    }

    /// The section, after checking that the code for it is the code that ran.
    pub fn section<'t>(&mut self, path: &Path, trace: &'t Trace, id: &str) -> Result<Section<'t>, Cause> {
        let lenient = self.is_other_device(trace);
        self.sources.check(path, trace, id, lenient)
    }

    /// The value at `address`, walking its path into objects and lists.
    pub fn resolve<'t>(&mut self, path: &Path, trace: &'t Trace, address: &Address) -> Result<Resolved<'t>, Cause> {
        self.section(path, trace, &address.section)?.resolve(path, address)
    }

    /// Whether `trace` was recorded on another device than the page default's. When the default
    /// cannot be read, no trace counts as another device's (the build fails on the default anyway).
    fn is_other_device(&mut self, trace: &Trace) -> bool {
        let default = self.path(None).and_then(|p| self.load(&p));
        default.is_ok_and(|d| d.provenance.device.slug != trace.provenance.device.slug)
    }
}

/// Removes `.` and `..` components lexically, so messages show `…/trace/lecture_02/cpu.json`
/// rather than `…/book/../trace/…`.
pub fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}
