//! A new book replaces the old one whole: it is built into a fresh folder beside the output
//! folder, then the old folder is renamed aside, the new one renamed into place, and the old one
//! removed. The caller holds the output folder's lock, so folders left by a killed build (which
//! no running build can be using) are removed first.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// `.NAME-new-…` and `.NAME-old-…` beside `out` (hidden, and git-ignored for the repository's
/// own `book/book`).
fn names(out: &Path) -> (PathBuf, String) {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = out
        .file_name()
        .map_or_else(|| "book".into(), |n| n.to_string_lossy().into_owned());
    (parent, name)
}

/// An empty folder to build into, after removing what killed builds left.
pub fn fresh_folder(out: &Path) -> Result<TempDir, String> {
    let (parent, name) = names(out);
    std::fs::create_dir_all(&parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    if let Ok(entries) = std::fs::read_dir(&parent) {
        let leftovers = [format!(".{name}-new-"), format!(".{name}-old-")];
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            if leftovers.iter().any(|l| file.starts_with(l)) && entry.path().is_dir() {
                std::fs::remove_dir_all(entry.path()).ok();
            }
        }
    }
    tempfile::Builder::new()
        .prefix(&format!(".{name}-new-"))
        .tempdir_in(&parent)
        .map_err(|e| format!("{}: cannot create a folder to build in: {e}", parent.display()))
}

/// Puts the book built in `fresh` at `out`, replacing what was there.
pub fn into_place(fresh: TempDir, out: &Path) -> Result<(), String> {
    let (parent, name) = names(out);
    let fresh = fresh.keep();
    let old = parent.join(format!(".{name}-old-{}", std::process::id()));
    let had_old = std::fs::symlink_metadata(out).is_ok();
    if had_old {
        std::fs::rename(out, &old).map_err(|e| {
            std::fs::remove_dir_all(&fresh).ok();
            format!("{}: cannot move the previous book aside: {e}", out.display())
        })?;
    }
    if let Err(e) = std::fs::rename(&fresh, out) {
        if had_old {
            std::fs::rename(&old, out).ok();
        }
        std::fs::remove_dir_all(&fresh).ok();
        return Err(format!("{}: cannot move the new book into place: {e}", out.display()));
    }
    if had_old {
        std::fs::remove_dir_all(&old).ok();
    }
    Ok(())
}
