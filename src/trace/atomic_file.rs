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

/// Checks that the file system holding `path` has room for `bytes` more, before the work whose
/// result will be written there starts: a run that fails on a full disk after it ran has lost its
/// work. Where the OS does not say how much is free, nothing is refused.
pub fn check_space(path: &Path, bytes: u64) -> Result<()> {
    let target = follow_links(path)?;
    let dir = folder_of(&target);
    let Some(free) = free_bytes(dir) else { return Ok(()) };
    if free < bytes {
        return Err(file_err(
            dir,
            format!(
                "only {free} bytes are free on its disk, and writing here needs about {bytes}: free some space \
                 first. Nothing was run, and {} is as it was.",
                target.display()
            ),
        ));
    }
    Ok(())
}

/// Bytes an unprivileged process may still write on the file system holding `dir`.
#[cfg(unix)]
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c_path` is a valid C string and `stats` is written by the call before it is read.
    let stats = unsafe {
        if libc::statvfs(c_path.as_ptr(), stats.as_mut_ptr()) != 0 {
            return None;
        }
        stats.assume_init()
    };
    #[allow(clippy::unnecessary_cast)] // the field types differ between platforms
    Some((stats.f_bavail as u64).saturating_mul(stats.f_frsize as u64))
}

#[cfg(not(unix))]
fn free_bytes(_dir: &Path) -> Option<u64> {
    None
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
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            // Never a silent wait: say for what, and for whom (a stopped holder waits forever).
            let holder = std::fs::read_to_string(&lock_path).unwrap_or_default();
            crate::console::warn(format_args!(
                "waiting for {}: {}",
                crate::console::terminal_safe(&lock_path.display().to_string()),
                crate::console::terminal_safe(&describe_holder(holder.trim()))
            ));
            file.lock()
                .map_err(|e| file_err(&lock_path, format!("cannot be locked: {e}")))?;
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(file_err(&lock_path, format!("cannot be locked: {e}")));
        }
    }
    // Who holds it, for the next process that has to wait (best effort: a full disk only loses
    // that courtesy).
    let mut holder = &file;
    if file.set_len(0).is_ok() {
        let _ = writeln!(holder, "{}", std::process::id());
    }
    Ok(FileLock {
        _file: file,
        path: lock_path,
    })
}

/// Who holds a lock, from the process id its holder wrote into it: the command, and whether
/// that process is stopped (then it holds the lock until it is continued or ended).
fn describe_holder(written: &str) -> String {
    let Ok(pid) = written.parse::<u32>() else {
        return "another process holds it (it did not say which)".into();
    };
    let command = std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .map(|raw| {
            let words: Vec<String> = raw
                .split(|&b| b == 0)
                .filter(|w| !w.is_empty())
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            // A command line can be long (a `python -c` script): its start says enough.
            crate::console::shorten(&words.join(" ").replace(['\n', '\r'], " "), 160)
        })
        .filter(|c| !c.is_empty());
    // The state is the first field after the command's closing parenthesis in /proc/PID/stat.
    let stopped = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .is_some_and(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state == "T" || state == "t")
        });
    let who = match command {
        Some(command) => format!("process {pid} ({command}) holds it"),
        None => format!("process {pid} holds it"),
    };
    if stopped {
        format!("{who}, and it is stopped: it keeps the lock until it is continued (`kill -CONT {pid}`) or ended")
    } else {
        format!("{who}; this run goes on when it is done")
    }
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

/// The folder holding `path` (`.` for a bare file name).
pub(crate) fn folder_of(path: &Path) -> &Path {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_is_checked_against_what_the_disk_has_free() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.json");
        check_space(&path, 1).expect("a byte is free");
        let free = free_bytes(dir.path()).expect("statvfs answers here");
        let err = check_space(&path, free.saturating_add(1 << 40))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bytes are free on its disk") && err.contains("Nothing was run"),
            "{err}"
        );
    }

    #[test]
    fn a_lock_holder_is_named_and_a_stopped_one_said_to_be() {
        let me = describe_holder(&std::process::id().to_string());
        assert!(me.starts_with(&format!("process {} (", std::process::id())), "{me}");
        assert!(me.ends_with("this run goes on when it is done"), "{me}");
        assert!(describe_holder("").contains("did not say which"));
        let mut child = std::process::Command::new("sleep").arg("30").spawn().expect("sleep");
        // Stopped before it has become `sleep`, the child would still be a copy of this test
        // binary: wait until the kernel shows it as `sleep` (a busy CI machine was that slow).
        let cmdline = format!("/proc/{}/cmdline", child.id());
        for _ in 0..200 {
            if std::fs::read(&cmdline).is_ok_and(|c| c.starts_with(b"sleep")) {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // SAFETY: sends SIGSTOP to our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGSTOP) };
        let mut said = String::new();
        // The state changes once the kernel has stopped it.
        for _ in 0..100 {
            said = describe_holder(&child.id().to_string());
            if said.contains("stopped") {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        child.kill().ok();
        child.wait().ok();
        assert!(said.contains("(sleep 30)") && said.contains("it is stopped"), "{said}");
        assert!(said.contains(&format!("kill -CONT {}", child.id())), "{said}");
    }
}
