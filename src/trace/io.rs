//! Reading and writing trace files. Writes are atomic (`crate::atomic_file`): a crash or Ctrl-C
//! mid-write leaves the previous trace intact.
//! Reads refuse what is not a regular file or is larger than [`MAX_TRACE_BYTES`] before reading
//! a byte, check the schema version first (an older trace is refused with the command that writes
//! it again), name the exact field when something is wrong, and then check what the schema cannot
//! say (`validate`, and each section's record order).

use std::io::Read;
use std::path::Path;

use super::schema::{SCHEMA_VERSION, Trace};
use super::stream;
use super::strict::{self, Strict};
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
    check_name(path, &trace)?;
    Ok(trace)
}

/// The rules of names [`load_named`] holds a trace to: its file is named after its device, and
/// a trace folder (`trace/lecture_02/`) after its lecture.
fn check_name(path: &Path, trace: &Trace) -> Result<()> {
    let stem = path.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default();
    super::name::check(&trace.provenance, &stem).map_err(|e| trace_err(path, e))?;
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
    Ok(())
}

/// Whether `path` holds JSON that is no lecture trace at all (a `package.json`, a benchmark's
/// results) rather than a trace: a JSON object without `schema_version`, or any other JSON value.
/// Readers of a trace folder pass over such files; a file that is not valid JSON is not passed
/// over, since it may be a trace cut short, which should be said.
pub fn is_foreign_json(path: &Path) -> bool {
    matches!(looks(path), Looks::NotATrace)
}

/// What a file looks like at a glance, from its `schema_version` alone: the one question the
/// checks before a run and the readers of a folder ask of a file they may not load.
enum Looks {
    /// Missing, refused (a device, too large) or not JSON.
    Unreadable,
    /// JSON without `schema_version`.
    NotATrace,
    /// A trace, of this schema version when it is a whole number.
    Trace(Option<u64>),
}

fn looks(path: &Path) -> Looks {
    // Streamed, not built into a tree: a reader of a folder asks this of every file in it.
    let version = read_bounded(path).ok().and_then(|text| stream::schema_version(&text));
    match version {
        None => Looks::Unreadable,
        Some(None) => Looks::NotATrace,
        Some(Some(version)) => Looks::Trace(version.as_u64()),
    }
}

/// Whether a full run may replace the trace at `path` (it replaces one it cannot read, or one of
/// an older format, with a fresh one): not when it holds a newer schema than this build knows,
/// whose contents this build would throw away unread.
pub fn check_replaceable(path: &Path) -> Result<()> {
    match looks(path) {
        Looks::Trace(Some(v)) if v > SCHEMA_VERSION as u64 => Err(trace_err(
            path,
            format!(
                "schema version {v} is newer than this build knows (version {SCHEMA_VERSION}), so a run would \
                 replace what it cannot read: update this checkout, or move the file away. Nothing was run."
            ),
        )),
        _ => Ok(()),
    }
}

/// Whether a run may write through `path` when it is a symbolic link: a link that stays in the
/// trace's folder, or that leads to a trace (a shared folder of traces), is followed; one that
/// leads elsewhere to anything else (`cpu-….json -> ../../notes.txt`), or to nothing yet, is
/// refused, so that a run never overwrites or creates a file outside the trace folder that is not
/// a trace. Full and partial runs both ask this before anything runs.
pub fn check_link(path: &Path) -> Result<()> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(());
    }
    let target = atomic_file::follow_links(path)?;
    let folder = |p: &Path| std::fs::canonicalize(atomic_file::folder_of(p)).ok();
    if let Some(there) = folder(&target)
        && Some(there) == folder(path)
    {
        return Ok(());
    }
    let refuse = |what: &str| {
        Err(trace_err(
            path,
            format!(
                "is a symbolic link to {}, outside the trace folder, and {what}: a run would write over it. \
                 Remove the link, or point it at a trace. Nothing was run.",
                target.display()
            ),
        ))
    };
    if !target.exists() {
        return refuse("that file does not exist");
    }
    match looks(&target) {
        Looks::Trace(_) => Ok(()),
        Looks::Unreadable | Looks::NotATrace => refuse("that file is not a trace"),
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
    if text.starts_with('\u{feff}') {
        return Err(trace_err(
            path,
            "not valid JSON: it starts with a byte order mark (U+FEFF), which JSON does not allow; save it without one",
        ));
    }
    // Before the text is built into a tree, which for a list of millions of states takes longer
    // than any reader should wait to be told that no run writes one.
    stream::lists_within_limits(text).map_err(|e| trace_err(path, e))?;
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
    validate::exact_integers(text).map_err(|e| trace_err(path, e))?;
    let mut trace: Trace = serde_path_to_error::deserialize(Strict(&value)).map_err(|e| {
        let at = match e.path().to_string() {
            root if root == "." => "the top level".to_string(),
            at => format!("`{at}`"),
        };
        trace_err(path, format!("at {at}: {}", strict::plain(&e.into_inner().to_string())))
    })?;
    // An older trace's values under their current names, before anything reads them.
    super::renamed::apply(&mut trace);
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

/// Writes the trace as pretty JSON, atomically (an interrupted write leaves the previous file),
/// once its text passes every check [`load`] makes, the size limit first: a run never leaves a
/// file that its own reader refuses (a count that is not whole, a FLOP count that overflowed, a
/// file too large to be read). Otherwise nothing is written.
pub fn save(path: &Path, trace: &Trace) -> Result<()> {
    let text = checked_text(path, trace)?;
    atomic_file::write(path, text.as_bytes())
}

/// [`save`] for a trace in a trace folder: held to [`load_named`]'s rules of names too.
pub fn save_named(path: &Path, trace: &Trace) -> Result<()> {
    let text = checked_text(path, trace)?;
    check_name(path, trace).map_err(unwritten)?;
    atomic_file::write(path, text.as_bytes())
}

/// The trace's text, if its reader would take it back.
fn checked_text(path: &Path, trace: &Trace) -> Result<String> {
    let mut text =
        serde_json::to_string_pretty(trace).map_err(|e| trace_err(path, format!("cannot serialise: {e}")))?;
    text.push('\n');
    if text.len() as u64 > MAX_TRACE_BYTES {
        return Err(trace_err(
            path,
            format!(
                "was not written: it would be {} bytes, larger than the {} a trace may have (its reader refuses a \
                 larger one)",
                text.len(),
                human_limit(MAX_TRACE_BYTES)
            ),
        ));
    }
    parse(path, &text).map_err(unwritten)?;
    Ok(text)
}

/// A reader's refusal of a trace about to be written, said as such.
fn unwritten(e: Error) -> Error {
    match e {
        Error::Trace { path, msg } => Error::Trace {
            path,
            msg: format!("was not written: its reader would refuse it: {msg}"),
        },
        other => other,
    }
}
