//! Which trace a directive reads, loading it once per build, and the checks that keep the book
//! honest: the section must be in the trace, and its code must not have changed since it ran
//! (`sections`). One trace is held to that strictly: the one `lecture` has just written, else the
//! folder's most complete and newest trace, a CPU's before a GPU's (what `mdbook serve` shows). Every other trace (another
//! CPU, a GPU, read as the page default by `lecture book --trace FILE`, or through `trace=SLUG`,
//! `compare` and the Devices chapter) renders as it is: a section that older code recorded is shown
//! with a mark, and a value that older run never recorded with a placeholder, since only that
//! device could record it again. While a chapter renders, the sections its directives quote are
//! noted, so that its provenance box can say where exactly its numbers came from.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::directive::Address;
use super::problem::Cause;
use super::sections::{OlderCode, Resolved, Section, Sources};
use super::unrecorded::Unrecorded;
use crate::trace::{self, Trace};

/// The trace a page uses when its directives do not name one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceChoice {
    /// Of the traces in the folder holding the most sections, a CPU's before a GPU's, the one whose
    /// newest section is the newest (`Trace::created_at`): after a full `lecture` run, its own.
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

/// The `trace=` word for the newest GPU trace other than the page default's.
pub const GPU: &str = "gpu";

/// The traces one book build reads.
pub struct Traces {
    dir: PathBuf,
    default: TraceChoice,
    /// The trace held to the code when not the folder's newest (what `lecture` has just written).
    strict: Option<PathBuf>,
    strict_path: Option<Option<PathBuf>>,
    loaded: HashMap<PathBuf, Result<Arc<Trace>, Cause>>,
    default_path: Option<Result<PathBuf, Cause>>,
    sources: Sources,
    quoted: Vec<Quote>,
    unrecorded: Vec<Unrecorded>,
    /// The (trace, section) pairs whose older-code mark this chapter showed in full already.
    marked: Vec<(PathBuf, String)>,
    /// Whether this chapter has shown a check's tick yet (the first one says what it means).
    ticked: bool,
    /// In a what-if book, the device's own trace (`BuildOptions::baseline`).
    baseline: Option<PathBuf>,
}

/// A section a directive quoted, and whether what it showed depends on a clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quote {
    pub trace: PathBuf,
    pub section: String,
    pub timed: bool,
}

impl Traces {
    /// Traces in `dir`, `default` for pages, section code read from files under `source_root`.
    pub fn new(dir: &Path, default: TraceChoice, source_root: &Path) -> Traces {
        Traces {
            dir: clean(dir),
            default,
            strict: None,
            strict_path: None,
            loaded: HashMap::new(),
            default_path: None,
            sources: Sources::new(source_root),
            quoted: Vec::new(),
            unrecorded: Vec::new(),
            marked: Vec::new(),
            ticked: false,
            baseline: None,
        }
    }

    /// Holds `path` to the code instead of the folder's newest trace (`lecture` passes the trace
    /// it has just written).
    /// A what-if book: values the what-if moved are shown beside the value in `path`.
    pub fn with_baseline(mut self, path: Option<PathBuf>) -> Traces {
        self.baseline = path.map(|p| clean(&p));
        self
    }

    /// The folder of traces.
    pub fn dir(&self) -> PathBuf {
        self.dir.clone()
    }

    /// The device's own trace, in a what-if book.
    pub fn baseline(&self) -> Option<PathBuf> {
        self.baseline.clone()
    }

    pub fn with_strict(mut self, path: Option<PathBuf>) -> Traces {
        self.strict = path.map(|p| clean(&p));
        self
    }

    /// The trace given to be held to the code: the one `lecture` has just written on this
    /// machine (none when the book is built from the folder alone).
    pub fn given_strict(&self) -> Option<PathBuf> {
        self.strict.clone()
    }

    /// The trace held to the code: the one given, else the folder's most complete, newest trace.
    pub fn strict_path(&mut self) -> Option<PathBuf> {
        if let Some(found) = &self.strict_path {
            return found.clone();
        }
        let found = match &self.strict {
            Some(path) => Some(path.clone()),
            None => self.newest().ok(),
        };
        self.strict_path = Some(found.clone());
        found
    }

    /// Whether the trace at `path` renders as it is (older code marked, unrecorded values shown
    /// as such) rather than failing the build.
    pub fn is_lenient(&mut self, path: &Path) -> bool {
        self.strict_path().is_some_and(|strict| strict != path)
    }

    /// The file a directive reads: the named trace, or the page default. `gpu` names the newest
    /// GPU trace in the folder other than the page default (the pages about the GPU show it beside
    /// whatever device the default trace is from).
    pub fn path(&mut self, slug: Option<&str>) -> Result<PathBuf, Cause> {
        if slug == Some(GPU) {
            return self.gpu();
        }
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
            TraceChoice::Newest => self.newest(),
        }
    }

    /// The newest GPU trace that is not the page default (`trace=gpu`).
    fn gpu(&mut self) -> Result<PathBuf, Cause> {
        let default = self.path(None).ok();
        let all = self.all()?;
        all.iter()
            .filter(|(p, t)| t.provenance.device.kind == "cuda" && Some(p) != default.as_ref())
            .max_by_key(|(_, t)| created(t))
            .map(|(p, _)| p.clone())
            .ok_or_else(|| Cause::NoGpuTrace { dir: self.dir.clone() })
    }

    /// Of the traces in the folder holding the most sections, a CPU's before a GPU's, the one
    /// whose newest section is the newest.
    fn newest(&mut self) -> Result<PathBuf, Cause> {
        let all = self.all()?;
        // The most complete trace first: `lecture --section ID` on a machine with no trace yet
        // writes one holding that section alone, which would otherwise hide every full trace and
        // fail the build on the first other section. Then a CPU's before a GPU's: this trace is
        // held to the code, and only a CPU's can be recorded again on any machine (CI has no GPU;
        // a GPU run, however recent, is shown beside it through `trace=gpu`). Then the newest.
        let is_cpu = |t: &Trace| t.provenance.device.kind == "cpu";
        let newest = all
            .iter()
            .max_by_key(|(_, t)| (t.sections.len(), is_cpu(t), created(t)));
        newest
            .map(|(p, _)| p.clone())
            .ok_or_else(|| Cause::NoTraces { dir: self.dir.clone() })
    }

    /// Loads (once) and returns a trace.
    pub fn load(&mut self, path: &Path) -> Result<Arc<Trace>, Cause> {
        if let Some(done) = self.loaded.get(path) {
            return done.clone();
        }
        let result = if path.is_file() {
            trace::load_named(path)
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

    /// Every trace in the folder: CPU traces first, then by file name.
    pub fn all(&mut self) -> Result<Vec<(PathBuf, Arc<Trace>)>, Cause> {
        let entries = std::fs::read_dir(&self.dir).map_err(|_| Cause::NoTraces { dir: self.dir.clone() })?;
        let paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
            // Other JSON beside the traces (a `package.json`, a benchmark's results) is not ours.
            .filter(|p| !trace::io::is_foreign_json(p))
            .collect();
        if paths.is_empty() {
            return Err(Cause::NoTraces { dir: self.dir.clone() });
        }
        let mut all = paths
            .into_iter()
            .map(|p| self.load(&p).map(|t| (p, t)))
            .collect::<Result<Vec<_>, _>>()?;
        all.sort_by_key(|(p, t)| (t.provenance.device.kind != "cpu", p.clone()));
        Ok(all)
    }

    /// The section, after checking that the code for it is the code that ran; noted as quoted.
    pub fn section<'t>(&mut self, path: &Path, trace: &'t Trace, id: &str) -> Result<Section<'t>, Cause> {
        let lenient = self.is_lenient(path);
        let section = self.sources.check(path, trace, id, lenient)?;
        self.quote(path, id, false);
        Ok(section)
    }

    /// The value at `address`, walking its path into objects and lists; noted as quoted.
    pub fn resolve<'t>(&mut self, path: &Path, trace: &'t Trace, address: &Address) -> Result<Resolved<'t>, Cause> {
        let found = self.section(path, trace, &address.section)?.resolve(path, address)?;
        self.quote(path, &address.section, found.record.timed());
        Ok(found)
    }

    /// Notes that the chapter being rendered shows values of section `id` of the trace at `path`
    /// (`timed`: values a clock decided).
    pub fn quote(&mut self, path: &Path, id: &str, timed: bool) {
        let quote = Quote {
            trace: path.to_path_buf(),
            section: id.to_string(),
            timed,
        };
        if !self.quoted.contains(&quote) {
            self.quoted.push(quote);
        }
    }

    /// Notes a value the chapter being rendered shows as not recorded (once each).
    pub fn note_unrecorded(&mut self, missing: Unrecorded) {
        if !self.unrecorded.contains(&missing) {
            self.unrecorded.push(missing);
        }
    }

    /// The values shown as not recorded since the last call (one chapter's worth).
    pub fn take_unrecorded(&mut self) -> Vec<Unrecorded> {
        std::mem::take(&mut self.unrecorded)
    }

    /// The older-code mark beside a value of `section` of the trace at `path`: in full the first
    /// time a chapter shows one, after that a dagger (the same words on hover), so a passage quoting
    /// another device's older run reads as prose.
    pub fn older_mark(&mut self, path: &Path, section: &str, older: &OlderCode) -> String {
        let key = (path.to_path_buf(), section.to_string());
        if self.marked.contains(&key) {
            return super::render::older_code_dagger(older);
        }
        self.marked.push(key);
        super::render::older_code_mark(older)
    }

    /// Whether this is the chapter's first check tick: that one is explained in words.
    pub fn first_tick(&mut self) -> bool {
        !std::mem::replace(&mut self.ticked, true)
    }

    /// What was quoted since the last call (one chapter's worth), in the order first quoted.
    pub fn take_quotes(&mut self) -> Vec<Quote> {
        self.marked.clear();
        self.ticked = false;
        std::mem::take(&mut self.quoted)
    }
}

/// When the trace's newest section was recorded, as a time that orders correctly.
fn created(t: &Trace) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    t.created_at()
        .and_then(|c| chrono::DateTime::parse_from_rfc3339(c).ok())
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
