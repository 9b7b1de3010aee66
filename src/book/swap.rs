//! A new book replaces the old one whole: it is built into a fresh folder beside the output
//! folder, then swapped into place. On Linux the swap is one atomic exchange of the two folders
//! (`renameat2` with `RENAME_EXCHANGE`), so at every instant the output folder holds a whole
//! book; elsewhere (or on a file system without the exchange) the old folder is renamed aside
//! and the new one into place. A kill between those two renames leaves no output folder, only the
//! old book aside: the next build, which holds the output folder's lock, puts that last good book
//! back before anything else, whether or not it then succeeds. Folders left by killed builds
//! (which no running build can be using) are removed after that. Whether `out` may be replaced at
//! all is decided before any of this ([`super::out_folder`]): only a folder a build made.

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
    restore(out, &parent, &name);
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

/// A build killed between its two renames left no book at `out` and the last good one aside:
/// put it back (the newest, should several be there).
fn restore(out: &Path, parent: &Path, name: &str) {
    if std::fs::symlink_metadata(out).is_ok() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    let aside = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&format!(".{name}-old-")) && e.path().is_dir())
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok());
    if let Some(last_good) = aside {
        std::fs::rename(last_good.path(), out).ok();
    }
}

/// Exchanges the two paths in one step, where the OS can.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let (Ok(a), Ok(b)) = (
        std::ffi::CString::new(a.as_os_str().as_bytes()),
        std::ffi::CString::new(b.as_os_str().as_bytes()),
    ) else {
        return false;
    };
    // SAFETY: both are valid NUL-terminated paths that outlive the call; renameat2 reads them only.
    let done = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    done == 0
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> bool {
    false
}

/// Puts the book built in `fresh` at `out`, replacing what was there.
pub fn into_place(fresh: TempDir, out: &Path) -> Result<(), String> {
    let (parent, name) = names(out);
    let fresh = fresh.keep();
    // One atomic step: `fresh` then holds the old book, which is removed.
    if std::fs::symlink_metadata(out).is_ok_and(|m| m.is_dir()) && exchange(&fresh, out) {
        std::fs::remove_dir_all(&fresh).ok();
        return Ok(());
    }
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

/// Whether a build could make its fresh folder beside `out`: a folder is made in the nearest
/// folder that exists on the way there, and removed at once.
pub fn check_writable_beside(out: &Path) -> Result<(), String> {
    let (parent, name) = names(out);
    // A file on the way fails here, as the build would.
    let existing = parent.ancestors().find(|p| p.exists()).unwrap_or(Path::new("."));
    tempfile::Builder::new()
        .prefix(&format!(".{name}-check-"))
        .tempdir_in(existing)
        .map(drop)
        .map_err(|e| {
            format!(
                "the book is built beside {} and {} cannot be written ({e}): give this user write access there, \
                 name another folder with MDBOOK_BUILD__BUILD_DIR, or run with `--no-book`",
                out.display(),
                existing.display()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(dir: &Path, text: &str) {
        std::fs::create_dir_all(dir).expect("folder");
        std::fs::write(dir.join("index.html"), text).expect("page");
    }

    fn page(out: &Path) -> String {
        std::fs::read_to_string(out.join("index.html")).expect("a book is there")
    }

    fn leftovers(parent: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(parent)
            .expect("parent")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_new_book_replaces_the_old_whole_and_leaves_nothing_beside_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("book");
        book(&out, "old");
        let fresh = fresh_folder(&out).expect("fresh folder");
        book(fresh.path(), "new");
        into_place(fresh, &out).expect("swapped");
        assert_eq!(page(&out), "new");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn a_build_killed_between_its_renames_gets_its_last_good_book_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("book");
        // What a kill after "old aside" and before "new into place" leaves.
        book(&dir.path().join(".book-old-4242"), "last good");
        book(&dir.path().join(".book-new-abcd"), "half built");
        let fresh = fresh_folder(&out).expect("fresh folder");
        assert_eq!(page(&out), "last good", "restored before anything else");
        // The next build failing changes nothing: the book stays.
        drop(fresh);
        assert_eq!(page(&out), "last good");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }
}
