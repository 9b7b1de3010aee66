//! Which trace a directive reads, loading it once per build, and the checks that keep the book
//! honest: the section must be in the trace, and its code must not have changed since it ran.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::directive::Address;
use super::problem::Cause;
use crate::lecture::{self, SECTIONS};
use crate::trace::{self, SectionRecord, Trace, ValueRecord, source::function_source};

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

/// A value found in a trace.
pub struct Resolved<'t> {
    pub section: &'t SectionRecord,
    pub record: &'t ValueRecord,
    /// The record's value, or the part of it the address's path points at.
    pub value: &'t Value,
}

/// The traces one book build reads.
pub struct Traces {
    dir: PathBuf,
    default: TraceChoice,
    loaded: HashMap<PathBuf, Result<Arc<Trace>, Cause>>,
    default_path: Option<Result<PathBuf, Cause>>,
}

impl Traces {
    pub fn new(dir: &Path, default: TraceChoice) -> Traces {
        Traces {
            dir: clean(dir),
            default,
            loaded: HashMap::new(),
            default_path: None,
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

    /// The section's record, after checking that this build's code for it is the code that ran.
    pub fn section<'t>(path: &Path, trace: &'t Trace, id: &str) -> Result<&'t SectionRecord, Cause> {
        let Some(def) = lecture::find(id) else {
            let known: Vec<&str> = SECTIONS.iter().map(|s| s.id).collect();
            return Err(Cause::UnknownSection {
                section: id.to_string(),
                known: known.join(", "),
            });
        };
        let record = trace.section(id).ok_or_else(|| Cause::MissingSection {
            trace: path.to_path_buf(),
            section: id.to_string(),
        })?;
        let current = function_source(def.source, def.id).map_err(|e| Cause::BadTrace(format!("{}: {e}", def.file)))?;
        if current.hash() != record.source_hash {
            let device = &trace.provenance.device;
            return Err(Cause::Stale {
                trace: path.to_path_buf(),
                section: id.to_string(),
                device: format!("the device that wrote it ({}, `--device {}`)", device.name, device.kind),
            });
        }
        Ok(record)
    }

    /// The value at `address`, walking its path into objects and lists.
    pub fn resolve<'t>(path: &Path, trace: &'t Trace, address: &Address) -> Result<Resolved<'t>, Cause> {
        let section = Traces::section(path, trace, &address.section)?;
        let record = section.values.get(&address.name).ok_or_else(|| Cause::MissingValue {
            trace: path.to_path_buf(),
            section: address.section.clone(),
            name: address.name.clone(),
            known: section.values.keys().map(String::as_str).collect::<Vec<_>>().join(", "),
        })?;
        let value = walk(&record.value, &address.path).map_err(|(step, what)| Cause::MissingPath {
            trace: path.to_path_buf(),
            address: address.to_string(),
            step,
            what,
        })?;
        Ok(Resolved { section, record, value })
    }
}

/// Follows `path` into `value`: object keys by name, list items by index. A key that itself
/// contains dots (a parameter name such as `layers.0.weight`) is matched by joining steps; when
/// several joins name keys, the first (shortest) that leads somewhere wins.
pub fn walk<'v>(value: &'v Value, path: &[String]) -> Result<&'v Value, (String, String)> {
    let Some(step) = path.first() else { return Ok(value) };
    match value {
        Value::Object(map) => {
            let mut first_error = None;
            for end in 1..=path.len() {
                if let Some(next) = map.get(&path[..end].join(".")) {
                    match walk(next, &path[end..]) {
                        Ok(found) => return Ok(found),
                        Err(e) => first_error = first_error.or(Some(e)),
                    }
                }
            }
            Err(first_error.unwrap_or_else(|| {
                (
                    step.clone(),
                    format!(
                        "keys: {}",
                        map.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
                    ),
                )
            }))
        }
        Value::Array(items) => {
            let item = step.parse::<usize>().ok().and_then(|i| items.get(i));
            let item = item.ok_or_else(|| {
                (
                    step.clone(),
                    format!("a list of {} item(s), indexed from 0", items.len()),
                )
            })?;
            walk(item, &path[1..])
        }
        other => Err((step.clone(), format!("`{other}` has no parts"))),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(path: &str) -> Vec<String> {
        path.split('.').map(String::from).collect()
    }

    #[test]
    fn walks_objects_lists_and_dotted_keys() {
        let v =
            serde_json::json!({"max": 448, "rows": [[1, 2], [3, 4]], "layers.0.weight": [[5, 6]], "layers": {"n": 7}});
        assert_eq!(walk(&v, &steps("max")), Ok(&serde_json::json!(448)));
        assert_eq!(walk(&v, &steps("rows.1.0")), Ok(&serde_json::json!(3)));
        assert_eq!(walk(&v, &steps("layers.0.weight.0.1")), Ok(&serde_json::json!(6)));
        assert_eq!(walk(&v, &steps("layers.n")), Ok(&serde_json::json!(7)));
        let (step, what) = walk(&v, &steps("rows.2")).unwrap_err();
        assert_eq!(
            (step.as_str(), what.as_str()),
            ("2", "a list of 2 item(s), indexed from 0")
        );
        assert_eq!(walk(&v, &steps("nope")).unwrap_err().0, "nope");
        assert!(walk(&v, &steps("max.x")).unwrap_err().1.contains("has no parts"));
    }
}
