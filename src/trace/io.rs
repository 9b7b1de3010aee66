//! Reading and writing trace files. Writes go to a temporary file in the same folder which is then
//! renamed over the target, so a crash or Ctrl-C mid-write leaves the previous trace intact.
//! Reads check the schema version first and name the exact field when something is wrong.

use std::io::Write;
use std::path::Path;

use super::schema::{SCHEMA_VERSION, Trace};
use crate::error::{Error, Result};

fn trace_err(path: &Path, msg: impl Into<String>) -> Error {
    Error::Trace {
        path: path.to_path_buf(),
        msg: msg.into(),
    }
}

pub fn load(path: &Path) -> Result<Trace> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse(path, &text)
}

/// Parses trace JSON; `path` is only used in messages.
pub fn parse(path: &Path, text: &str) -> Result<Trace> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| trace_err(path, format!("not valid JSON: {e}")))?;
    match value.get("schema_version") {
        None => {
            return Err(trace_err(
                path,
                "missing field `schema_version`: this is not a lecture trace",
            ));
        }
        Some(v) if v.as_u64() != Some(SCHEMA_VERSION as u64) => {
            return Err(trace_err(
                path,
                format!(
                    "schema version {v} is not supported (this build reads version {SCHEMA_VERSION}); regenerate it with `cargo run --release --bin lecture`"
                ),
            ));
        }
        Some(_) => {}
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let at = e.path().to_string();
        trace_err(path, format!("at `{at}`: {}", e.into_inner()))
    })
}

/// Writes `value` as pretty JSON to `path` atomically (temporary file, fsync, rename).
pub fn write_json_atomic<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text =
        serde_json::to_string_pretty(value).map_err(|e| trace_err(path, format!("cannot serialise: {e}")))?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// Writes bytes to `path` atomically, creating the parent folder if needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(".partial")
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    tmp.write_all(bytes).map_err(|e| Error::io(tmp.path(), e))?;
    tmp.as_file().sync_all().map_err(|e| Error::io(tmp.path(), e))?;
    // If we die before this line the temporary file is removed (or left as `.tmp-*.partial`),
    // and `path` is untouched.
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

pub fn save(path: &Path, trace: &Trace) -> Result<()> {
    write_json_atomic(path, trace)
}
