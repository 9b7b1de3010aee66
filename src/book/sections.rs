//! A trace's section, checked against the code as it is now. The trace names the file that holds
//! the section's function (`source_file`, relative to the crate root); the book reads that file,
//! finds the function and compares the hash of its tokens with the one the trace recorded. The
//! book never links the lecture's code: editing a section does not rebuild the preprocessor.
//!
//! A trace is input, so the file it names is resolved inside the crate root only: absolute paths,
//! `..` and paths that leave the root through a symbolic link are refused.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::address::{Address, StateChoice};
use super::problem::Cause;
use crate::trace::source::{FunctionSource, function_source};
use crate::trace::{SectionRecord, Trace, ValueRecord, walk};

/// The most a section's source file may hold (ours are under 20 KiB): a trace naming a huge file
/// is refused before the file is read.
pub const MAX_SOURCE_BYTES: u64 = 4 << 20;

/// A section that passed the check.
pub struct Section<'t> {
    pub record: &'t SectionRecord,
    /// The section's function as the file holds it now; `None` only for a section recorded by
    /// older code whose function is no longer where the trace says.
    pub code: Option<Arc<FunctionSource>>,
    /// Set when the code changed since the trace recorded the section and the trace is another
    /// device's (shown with a mark instead of failing the build).
    pub older_code: Option<OlderCode>,
    /// The PyTorch that does the same steps (`src/lecture/pytorch/<id>.py`), where there is one.
    pub pytorch: Option<String>,
}

/// Values recorded by code that has changed since: the commit that recorded them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OlderCode {
    /// The abbreviated commit, or "unknown".
    pub commit: String,
}

impl OlderCode {
    fn of(record: &SectionRecord) -> OlderCode {
        let commit = record.run.git.commit.as_ref();
        OlderCode {
            commit: commit.map_or("unknown".into(), |c| c.chars().take(7).collect()),
        }
    }

    /// The words of the mark (the dagger marks the same section's later values on the page).
    pub fn text(&self) -> String {
        format!("† recorded by older code (commit {})", self.commit)
    }
}

/// A value found in a section.
pub struct Resolved<'t> {
    pub section: &'t SectionRecord,
    pub record: &'t ValueRecord,
    /// The state the address asked for (the final one unless `state=` said otherwise), or the
    /// part of it the address's path points at.
    pub value: &'t Value,
    /// The line that recorded that state.
    pub line: u32,
    pub older_code: Option<OlderCode>,
}

impl<'t> Section<'t> {
    /// The value at `address` (whose section is this one): the state it asks for, walking its path
    /// into objects and lists.
    pub fn resolve(&self, path: &Path, address: &Address) -> Result<Resolved<'t>, Cause> {
        let values = &self.record.values;
        let record = values.get(&address.name).ok_or_else(|| Cause::MissingValue {
            trace: path.to_path_buf(),
            section: address.section.clone(),
            name: address.name.clone(),
            known: values.keys().map(String::as_str).collect::<Vec<_>>().join(", "),
        })?;
        let count = record.num_states();
        let k = address.state.index(count).ok_or_else(|| Cause::MissingState {
            trace: path.to_path_buf(),
            address: Address {
                state: StateChoice::Last,
                ..address.clone()
            }
            .to_string(),
            asked: address.state.to_string(),
            count,
        })?;
        let (state, line) = match record.history.get(k) {
            Some(earlier) => (&earlier.value, earlier.line),
            None => (&record.value, record.line),
        };
        let value = walk(state, &address.path).map_err(|(step, what)| Cause::MissingPath {
            trace: path.to_path_buf(),
            address: address.to_string(),
            step,
            what,
        })?;
        Ok(Resolved {
            section: self.record,
            record,
            value,
            line,
            older_code: self.older_code.clone(),
        })
    }
}

/// Section functions read from the crate's files, each file read and each function lexed once
/// per build.
pub struct Sources {
    root: PathBuf,
    functions: HashMap<(String, String), Result<Arc<FunctionSource>, String>>,
}

impl Sources {
    pub fn new(root: &Path) -> Sources {
        Sources {
            root: root.to_path_buf(),
            functions: HashMap::new(),
        }
    }

    /// Checks section `id` of `trace` (read from `path`). `lenient` (a trace of another device):
    /// changed code marks the values instead of failing.
    pub fn check<'t>(&mut self, path: &Path, trace: &'t Trace, id: &str, lenient: bool) -> Result<Section<'t>, Cause> {
        let record = trace.section(id).ok_or_else(|| Cause::MissingSection {
            trace: path.to_path_buf(),
            section: id.to_string(),
            known: trace
                .sections
                .iter()
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        let file = resolve_source(&self.root, &record.source_file).map_err(|why| Cause::SourcePath {
            trace: path.to_path_buf(),
            section: id.to_string(),
            file: record.source_file.clone(),
            why,
        })?;
        let stale = |msg: Option<String>| {
            if lenient {
                return Ok(Some(OlderCode::of(record)));
            }
            let device = &trace.provenance.device;
            let device = format!("the device that wrote it ({}, `--device {}`)", device.name, device.kind);
            Err(match msg {
                None => Cause::Stale {
                    trace: path.to_path_buf(),
                    section: id.to_string(),
                    device,
                },
                Some(msg) => Cause::Source {
                    trace: path.to_path_buf(),
                    section: id.to_string(),
                    file: record.source_file.clone(),
                    msg,
                    device,
                },
            })
        };
        let (code, older_code) = match self.function(&file, id) {
            Ok(code) if code.hash() == record.source_hash => (Some(code), None),
            Ok(code) => (Some(code), stale(None)?),
            Err(msg) => (None, stale(Some(msg))?),
        };
        Ok(Section {
            record,
            code,
            older_code,
            pytorch: self.pytorch(id),
        })
    }

    /// Section `id`'s PyTorch panel, if the crate has one. The id comes from a trace, so only a
    /// plain identifier names a file.
    fn pytorch(&self, id: &str) -> Option<String> {
        if id.is_empty()
            || !id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return None;
        }
        let file = self.root.join("src/lecture/pytorch").join(format!("{id}.py"));
        crate::trace::io::read_limited(&file, MAX_SOURCE_BYTES, "a PyTorch panel").ok()
    }

    fn function(&mut self, file: &Path, id: &str) -> Result<Arc<FunctionSource>, String> {
        let key = (file.display().to_string(), id.to_string());
        self.functions
            .entry(key)
            .or_insert_with(|| {
                let text = crate::trace::io::read_limited(file, MAX_SOURCE_BYTES, "a section's source file")
                    .map_err(|e| format!("the file cannot be read ({e})"))?;
                function_source(&text, id).map(Arc::new).map_err(|e| e.to_string())
            })
            .clone()
    }
}

/// `named` (a trace's `source_file`) as a file inside `root`, or why it is refused.
pub fn resolve_source(root: &Path, named: &str) -> Result<PathBuf, String> {
    let relative = Path::new(named);
    if named.is_empty() {
        return Err("the path is empty".into());
    }
    for part in relative.components() {
        match part {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return Err("a path with `..` may leave the crate root".into()),
            Component::RootDir | Component::Prefix(_) => {
                return Err("an absolute path; a trace names files relative to the crate root".into());
            }
        }
    }
    let root = root
        .canonicalize()
        .map_err(|e| format!("the crate root {} cannot be read: {e}", root.display()))?;
    let joined = root.join(relative);
    // A file that is not there (the section moved since) is not refused: reading it fails, which
    // the caller reports as code that changed.
    let Ok(file) = joined.canonicalize() else {
        return Ok(joined);
    };
    if !file.starts_with(&root) {
        return Err(format!(
            "it leads to {}, outside the crate root {} (through a symbolic link)",
            file.display(),
            root.display()
        ));
    }
    if !file.is_file() {
        return Err("not a file".into());
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_files_resolve_inside_the_root_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("crate");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::write(root.join("src/a.rs"), "fn a() {}").expect("write");
        std::fs::write(dir.path().join("outside.rs"), "fn a() {}").expect("write");
        let root = root.canonicalize().expect("root");
        let found = resolve_source(&root, "src/a.rs").expect("inside");
        assert_eq!(found, root.join("src/a.rs"));
        assert!(resolve_source(&root, "./src/a.rs").is_ok());

        let refused = |named: &str| resolve_source(&root, named).expect_err(named);
        assert!(refused("../outside.rs").contains("`..`"));
        assert!(refused("src/../../outside.rs").contains("`..`"));
        let absolute = dir.path().join("outside.rs");
        assert!(refused(absolute.to_str().expect("utf-8")).contains("absolute"));
        assert!(refused("").contains("empty"));
        assert_eq!(resolve_source(&root, "src/missing.rs"), Ok(root.join("src/missing.rs")));
        assert!(refused("src").contains("not a file"));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("outside.rs"), root.join("src/link.rs")).expect("symlink");
            assert!(refused("src/link.rs").contains("outside the crate root"));
        }
    }
}
