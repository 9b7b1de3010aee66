//! Reading and writing trace files. Writes are atomic (`crate::atomic_file`): a crash or Ctrl-C
//! mid-write leaves the previous trace intact.
//! Reads check the schema version first (an older trace is refused with the command that writes
//! it again) and name the exact field when something is wrong.

use std::path::Path;

use super::schema::{SCHEMA_VERSION, Trace};
use crate::atomic_file;
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
fn parse(path: &Path, text: &str) -> Result<Trace> {
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
            let age = match v.as_u64() {
                Some(old) if old < SCHEMA_VERSION as u64 => "an older format",
                _ => "not a format this build knows",
            };
            return Err(trace_err(
                path,
                format!(
                    "schema version {v} is {age} (this build reads version {SCHEMA_VERSION}); {}",
                    regenerate(&value)
                ),
            ));
        }
        Some(_) => {}
    }
    let trace: Trace = serde_path_to_error::deserialize(value).map_err(|e| {
        let at = e.path().to_string();
        trace_err(path, format!("at `{at}`: {}", e.into_inner()))
    })?;
    for (i, section) in trace.sections.iter().enumerate() {
        section.check_steps().map_err(|msg| {
            trace_err(
                path,
                format!("at `sections[{i}].steps` (section `{}`): {msg}", section.id),
            )
        })?;
    }
    Ok(trace)
}

/// How to write the trace again: a CPU trace on any machine, a GPU trace only on its GPU.
fn regenerate(value: &serde_json::Value) -> String {
    let device = &value["provenance"]["device"];
    match (device["kind"].as_str(), device["name"].as_str()) {
        (Some("cuda"), name) => format!(
            "it is a GPU trace{}: regenerate it on a machine with that GPU with \
             `cargo run --release --bin lecture -- --device cuda`",
            name.map_or(String::new(), |n| format!(" ({n})"))
        ),
        _ => "regenerate it with `cargo run --release --bin lecture` (a GPU trace only on a machine with \
              its GPU, adding `-- --device cuda`)"
            .into(),
    }
}

/// Writes the trace as pretty JSON, atomically: an interrupted write leaves the previous file.
pub fn save(path: &Path, trace: &Trace) -> Result<()> {
    let mut text =
        serde_json::to_string_pretty(trace).map_err(|e| trace_err(path, format!("cannot serialise: {e}")))?;
    text.push('\n');
    atomic_file::write(path, text.as_bytes())
}
