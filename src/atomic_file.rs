//! Atomic file writes: the bytes go to a temporary file in the target's folder, are synced, and
//! the temporary file is renamed over the target. A crash or Ctrl-C mid-write leaves the previous
//! file intact (traces, checkpoints, token files and cached kernels all rely on this).
//!
//! The replaced file keeps its identity: a symbolic link is followed and its target written (the
//! link stays a link), and an existing file's permissions carry over (a new file gets the usual
//! 0666 less the umask). A killed writer can leave its temporary file behind; the next write in
//! that folder removes the ones whose process is gone.
//!
//! A read-modify-write of one file (merging a section into a trace, swapping in a new book) holds
//! [`lock_beside`] on it, so concurrent processes take turns instead of losing each other's work.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};

/// Temporary files are `.tmp-<process id>-<random>.partial`: the process id tells a stale one.
const PREFIX: &str = ".tmp-";
const SUFFIX: &str = ".partial";

/// A temporary file without a process id (older versions of this program) counts as stale once
/// it is this old: no write takes that long.
const LEGACY_STALE_AFTER: Duration = Duration::from_secs(600);

/// Symbolic links followed before giving up (as the kernel's own limit).
const MAX_LINKS: usize = 40;

fn file_err(path: &Path, msg: impl Into<String>) -> Error {
    Error::File {
        path: path.to_path_buf(),
        msg: msg.into(),
    }
}

/// Writes `bytes` to `path` atomically, creating the parent folder if needed.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    let target = follow_links(path)?;
    let dir = folder_of(&target);
    ensure_folder(dir)?;
    refuse_folder(&target)?;
    remove_stale_partials(dir);
    let existing = std::fs::metadata(&target).ok().map(|m| m.permissions());
    let mut builder = tempfile::Builder::new();
    let prefix = format!("{PREFIX}{}-", std::process::id());
    builder.prefix(&prefix).suffix(SUFFIX);
    #[cfg(unix)]
    if existing.is_none() {
        use std::os::unix::fs::PermissionsExt;
        // Created with 0666 the kernel applies the umask, as for any new file.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir).map_err(|e| Error::io(dir, without_path(e)))?;
    // Through the `File` itself: its errors are the OS's own.
    tmp.as_file_mut()
        .write_all(bytes)
        .map_err(|e| Error::io(tmp.path(), e))?;
    if let Some(permissions) = existing {
        tmp.as_file()
            .set_permissions(permissions)
            .map_err(|e| Error::io(tmp.path(), e))?;
    }
    tmp.as_file().sync_all().map_err(|e| Error::io(tmp.path(), e))?;
    // If we die before this line the temporary file is removed (or left as `.tmp-*.partial`,
    // removed by the next write), and `target` is untouched.
    tmp.persist(&target).map_err(|e| Error::io(&target, e.error))?;
    // The rename itself reaches the disk with the folder's entry.
    if let Ok(folder) = File::open(dir) {
        folder.sync_all().ok();
    }
    Ok(())
}

/// Checks, before any work is done, that `path` can be written: its folder exists or can be
/// created, is a folder, and takes a new file; `path` itself is not a folder.
pub fn check_writable(path: &Path) -> Result<()> {
    let target = follow_links(path)?;
    let dir = folder_of(&target);
    ensure_folder(dir)?;
    refuse_folder(&target)?;
    let probe = tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-", std::process::id()))
        .suffix(SUFFIX)
        .tempfile_in(dir);
    probe
        .map(drop)
        .map_err(|e| file_err(dir, format!("cannot be written: {}", without_path(e))))
}

/// An exclusive lock, held until dropped.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
    pub path: PathBuf,
}

/// Takes the exclusive lock of `path` (waiting for it): a file `.NAME.lock` beside it, which is
/// left in place (removing it could let two processes lock two different files).
pub fn lock_beside(path: &Path) -> Result<FileLock> {
    let target = follow_links(path)?;
    let dir = folder_of(&target);
    ensure_folder(dir)?;
    let name = target
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy());
    let lock_path = dir.join(format!(".{name}.lock"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::io(&lock_path, e))?;
    file.lock()
        .map_err(|e| file_err(&lock_path, format!("cannot be locked: {e}")))?;
    Ok(FileLock {
        _file: file,
        path: lock_path,
    })
}

/// The file a path names after following symbolic links (also a link to a file not yet there).
pub fn follow_links(path: &Path) -> Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&current).map_err(|e| Error::io(&current, e))?;
                current = folder_of(&current).join(to);
            }
            _ => return Ok(current),
        }
    }
    Err(file_err(
        path,
        format!("more than {MAX_LINKS} symbolic links in a row (a loop?)"),
    ))
}

/// The OS error alone: `tempfile` adds "at path …" to the errors of the files it creates, and
/// ours name the path already.
fn without_path(e: std::io::Error) -> std::io::Error {
    let text = e.to_string();
    match text.rsplit_once(" at path ") {
        Some((error, _)) if e.get_ref().is_some() => std::io::Error::new(e.kind(), error.to_string()),
        _ => e,
    }
}

fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Creates `dir` (and its parents); says which part is in the way when one is not a folder.
fn ensure_folder(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let blocker = dir.ancestors().find(|a| a.exists() && !a.is_dir());
    if let Some(file) = blocker {
        return Err(file_err(file, "is not a folder, so nothing can be written inside it"));
    }
    std::fs::create_dir_all(dir).map_err(|e| file_err(dir, format!("the folder cannot be created: {e}")))
}

/// Only a regular file is replaced: renaming over a folder fails, and renaming over a device or
/// a pipe (a link to `/dev/null`, say) would put a file where the device was.
fn refuse_folder(target: &Path) -> Result<()> {
    match std::fs::metadata(target) {
        Ok(m) if m.is_dir() => Err(file_err(target, "is a folder, not a file: move it away to write here")),
        Ok(m) if !m.is_file() => Err(file_err(
            target,
            "is not a regular file (a device or a pipe?): it is not replaced",
        )),
        _ => Ok(()),
    }
}

/// Removes temporary files in `dir` that a killed writer left behind: ours whose process is
/// gone, and old ones without a process id. Best effort: a failure here never fails a write.
fn remove_stale_partials(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(middle) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)) else {
            continue;
        };
        let stale = match middle.split_once('-') {
            Some((pid, _)) => pid.parse::<u32>().is_ok_and(|pid| !process_alive(pid)),
            None => entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age > LEGACY_STALE_AFTER),
        };
        if stale && entry.file_type().is_ok_and(|t| t.is_file()) {
            std::fs::remove_file(entry.path()).ok();
        }
    }
}

#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 only asks whether the process exists; nothing is sent.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn process_alive(_pid: u32) -> bool {
    // No cheap check: keep every file that names a process.
    true
}
