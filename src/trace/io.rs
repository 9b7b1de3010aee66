//! Reading and writing trace files. Writes are atomic (`crate::atomic_file`): a crash or Ctrl-C
//! mid-write leaves the previous trace intact.
//! Reads refuse what is not a regular file or is larger than [`MAX_TRACE_BYTES`] before reading
//! a byte, check the schema version first (an older trace is refused with the command that writes
//! it again), name the exact field when something is wrong, and then check what the schema cannot
//! say (`validate`, and each section's record order).

use std::io::Read;
use std::path::Path;

use super::schema::{SCHEMA_VERSION, Trace};
use super::validate;
use crate::atomic_file;
use crate::error::{Error, Result};

/// The largest trace file read (a full trace is about 150 KB).
pub const MAX_TRACE_BYTES: u64 = 256 << 20;

fn trace_err(path: &Path, msg: impl Into<String>) -> Error {
    Error::Trace {
        path: path.to_path_buf(),
        msg: msg.into(),
    }
}

pub fn load(path: &Path) -> Result<Trace> {
    let text = read_bounded(path)?;
    parse(path, &text)
}

/// Like [`load`], for a trace in a trace folder, whose file name says which device recorded it:
/// refused when its provenance names another device (`trace::name::check`).
pub fn load_named(path: &Path) -> Result<Trace> {
    let trace = load(path)?;
    let stem = path.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default();
    super::name::check(&trace.provenance, &stem).map_err(|e| trace_err(path, e))?;
    // A trace folder is named after its lecture (`trace/lecture_02/`).
    let folder = path.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy());
    if let Some(folder) = folder.filter(|f| f.starts_with("lecture_"))
        && folder != trace.lecture
    {
        return Err(trace_err(
            path,
            format!(
                "it says it is a trace of `{}`, but it is in the folder of `{folder}`",
                trace.lecture
            ),
        ));
    }
    Ok(trace)
}

/// Whether a full run may replace the trace at `path` (it replaces one it cannot read, or one of
/// an older format, with a fresh one): not when it holds a newer schema than this build knows,
/// whose contents this build would throw away unread.
pub fn check_replaceable(path: &Path) -> Result<()> {
    let Ok(text) = read_bounded(path) else {
        return Ok(());
    };
    let version = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("schema_version").and_then(serde_json::Value::as_u64));
    match version {
        Some(v) if v > SCHEMA_VERSION as u64 => Err(trace_err(
            path,
            format!(
                "schema version {v} is newer than this build knows (version {SCHEMA_VERSION}), so a run would \
                 replace what it cannot read: update this checkout, or move the file away. Nothing was run."
            ),
        )),
        _ => Ok(()),
    }
}

/// The file's text, if it is a regular file of at most `MAX_TRACE_BYTES`: a device such as
/// `/dev/zero` would be read until memory runs out, a pipe would wait forever.
fn read_bounded(path: &Path) -> Result<String> {
    read_limited(path, MAX_TRACE_BYTES, "a trace").map_err(|e| match e {
        Limited::Io(err) => Error::io(path, err),
        Limited::Refused(msg) => trace_err(path, msg),
    })
}

/// Why [`read_limited`] returned no text.
#[derive(Debug)]
pub enum Limited {
    Io(std::io::Error),
    /// Not a regular file, too large, or not UTF-8: the words say which.
    Refused(String),
}

impl std::fmt::Display for Limited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Limited::Io(e) => write!(f, "{e}"),
            Limited::Refused(msg) => f.write_str(msg),
        }
    }
}

/// The text of `path` if it is a regular UTF-8 file of at most `max` bytes (`what` names such a
/// file in messages): every file the lecture or the book reads that a user or a trace names goes
/// through here, so a device, a pipe or a huge file is refused before it is read, never read
/// without end or waited on.
pub fn read_limited(path: &Path, max: u64, what: &str) -> std::result::Result<String, Limited> {
    let refuse = |meta: &std::fs::Metadata| -> std::result::Result<(), Limited> {
        if !meta.is_file() {
            return Err(Limited::Refused(format!("not a regular file ({what} is a file)")));
        }
        if meta.len() > max {
            return Err(Limited::Refused(format!(
                "{} bytes, larger than the {} {what} may have",
                meta.len(),
                human_limit(max)
            )));
        }
        Ok(())
    };
    // `metadata` does not open the file: opening a named pipe would block.
    refuse(&std::fs::metadata(path).map_err(Limited::Io)?)?;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        // Should the file be swapped for a pipe after the check, opening it still returns at once.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(Limited::Io)?;
    refuse(&file.metadata().map_err(Limited::Io)?)?;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).map_err(Limited::Io)?;
    if bytes.len() as u64 > max {
        return Err(Limited::Refused(format!(
            "grew past the size {what} may have while being read"
        )));
    }
    String::from_utf8(bytes).map_err(|e| Limited::Refused(format!("not UTF-8 text: {e}")))
}

fn human_limit(max: u64) -> String {
    if max >= 1 << 20 && max.is_multiple_of(1 << 20) {
        format!("{} MiB", max >> 20)
    } else {
        format!("{max} bytes")
    }
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
        Some(v) if v.as_u64().is_some_and(|n| n > SCHEMA_VERSION as u64) => {
            return Err(trace_err(
                path,
                format!(
                    "schema version {v} is newer than this build knows (this build reads version {SCHEMA_VERSION}): \
                     update this checkout to read it; a run would replace what it cannot read"
                ),
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
    validate::duplicate_keys(text).map_err(|e| trace_err(path, e))?;
    let trace: Trace = serde_path_to_error::deserialize(value).map_err(|e| {
        let at = e.path().to_string();
        trace_err(path, format!("at `{at}`: {}", e.into_inner()))
    })?;
    validate::contents(&trace).map_err(|e| trace_err(path, e))?;
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
