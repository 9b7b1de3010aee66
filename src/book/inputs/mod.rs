//! The book's own files, checked before mdbook reads them. mdbook reads `book.toml`, every file
//! under the book's `src` folder and its `theme` folder whole and without a check: a named pipe in
//! place of a chapter makes it wait forever (holding the book's lock), and a device such as
//! `/dev/zero` makes it read until memory runs out. So every entry there must be a folder or a
//! regular file, and no file may be larger than a book's file can sensibly be. What it reads
//! beyond them, chapters named outside `src` and files pulled in by `{{#include}}`, is checked by
//! [`includes`].

pub mod includes;

use std::path::{Path, PathBuf};

use crate::trace::io::read_limited;

/// The largest file read from the book's folders (chapters are a few KB; the largest theme
/// asset is far below this).
pub const MAX_BOOK_FILE_BYTES: u64 = 16 << 20;

/// Folders nested deeper than this under `src` or `theme` are refused (a link loop would
/// otherwise be walked for ever).
const MAX_DEPTH: usize = 16;

/// At most this many entries are looked at (a book has a few dozen).
const MAX_ENTRIES: usize = 10_000;

/// Why the book's files cannot be read: the file, and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("{}: {msg}", path.display())]
pub struct BadInput {
    pub path: PathBuf,
    pub msg: String,
}

pub(crate) fn bad(path: &Path, msg: impl Into<String>) -> BadInput {
    BadInput {
        path: path.to_path_buf(),
        msg: msg.into(),
    }
}

/// Checks `book.toml` and every entry under the book's `src` folder (as `book.toml` names it)
/// and `theme` folder.
pub fn check(book_root: &Path) -> Result<(), BadInput> {
    let config_path = book_root.join("book.toml");
    let config =
        read_limited(&config_path, MAX_BOOK_FILE_BYTES, "book.toml").map_err(|e| bad(&config_path, e.to_string()))?;
    let src = toml::from_str::<toml::Table>(&config)
        .ok()
        .and_then(|t| t.get("book")?.get("src")?.as_str().map(String::from))
        .unwrap_or_else(|| "src".into());
    // Everything the book publishes resolves inside its folder: a chapter that is a link to
    // `/etc/passwd` would otherwise be rendered into the book (and `src = "/etc"` likewise).
    let home = book_root
        .canonicalize()
        .map_err(|e| bad(book_root, format!("cannot be resolved: {e}")))?;
    inside(&config_path, &home)?;
    let mut seen = 0;
    for folder in [book_root.join(&src), book_root.join("theme")] {
        if folder.exists() {
            inside(&folder, &home)?;
            walk(&folder, &home, 0, &mut seen)?;
        }
    }
    // What mdbook reads beyond that folder: chapters named outside it, and included files.
    includes::check(&book_root.join(&src), &home)
}

/// `path`, links followed, lies inside `home` (the book's folder, resolved).
pub(crate) fn inside(path: &Path, home: &Path) -> Result<(), BadInput> {
    let resolved = path
        .canonicalize()
        .map_err(|e| bad(path, format!("cannot be resolved: {e}")))?;
    if resolved.starts_with(home) {
        return Ok(());
    }
    Err(bad(
        path,
        format!(
            "leads to {}, outside the book's folder {}: the book publishes only what lies inside it. Copy the \
             file into the book, or remove the link.",
            resolved.display(),
            home.display()
        ),
    ))
}

fn walk(dir: &Path, home: &Path, depth: usize, seen: &mut usize) -> Result<(), BadInput> {
    if depth > MAX_DEPTH {
        return Err(bad(
            dir,
            format!("folders nest more than {MAX_DEPTH} deep here (a link that loops?)"),
        ));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| bad(dir, format!("cannot be listed: {e}")))?;
    for entry in entries {
        let entry = entry.map_err(|e| bad(dir, format!("cannot be listed: {e}")))?;
        *seen += 1;
        if *seen > MAX_ENTRIES {
            return Err(bad(
                dir,
                format!("the book's folders hold more than {MAX_ENTRIES} entries"),
            ));
        }
        let path = entry.path();
        // `metadata` follows links and opens nothing: a pipe is found without waiting on it.
        let meta = std::fs::metadata(&path).map_err(|e| bad(&path, format!("cannot be read: {e}")))?;
        if meta.is_dir() {
            inside(&path, home)?;
            walk(&path, home, depth + 1, seen)?;
        } else if !meta.is_file() {
            return Err(bad(
                &path,
                "is not a regular file (a pipe, a socket or a device?): mdbook would wait on it or read it without \
                 end, so the book is not built. Put a file there, or move it out of the book's folder.",
            ));
        } else if meta.len() > MAX_BOOK_FILE_BYTES {
            return Err(bad(
                &path,
                format!(
                    "{} bytes, larger than the {} MiB a file of the book may have",
                    meta.len(),
                    MAX_BOOK_FILE_BYTES >> 20
                ),
            ));
        } else {
            inside(&path, home)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("book.toml"), "[book]\nsrc = \"pages\"\n").expect("write");
        std::fs::create_dir_all(dir.path().join("pages/part")).expect("mkdir");
        std::fs::write(dir.path().join("pages/SUMMARY.md"), "# Summary\n").expect("write");
        std::fs::write(dir.path().join("pages/part/a.md"), "text").expect("write");
        dir
    }

    #[test]
    fn a_book_of_files_and_folders_passes() {
        let dir = book();
        check(dir.path()).expect("a plain book");
    }

    #[cfg(unix)]
    #[test]
    fn a_pipe_among_the_chapters_is_refused_without_waiting() {
        let dir = book();
        let fifo = dir.path().join("pages/part/b.md");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("c string");
        // SAFETY: a valid C string; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let err = check(dir.path()).unwrap_err();
        assert_eq!(err.path, fifo);
        assert!(err.msg.contains("not a regular file"), "{err}");
        // Under `theme` too, and for book.toml itself.
        std::fs::remove_file(&fifo).expect("rm");
        std::fs::create_dir(dir.path().join("theme")).expect("mkdir");
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("theme/x.css")).expect("link");
        assert!(check(dir.path()).unwrap_err().msg.contains("not a regular file"));
        std::fs::remove_file(dir.path().join("theme/x.css")).expect("rm");
        std::fs::remove_file(dir.path().join("book.toml")).expect("rm");
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("book.toml")).expect("link");
        assert!(check(dir.path()).unwrap_err().to_string().contains("book.toml"));
    }

    #[test]
    fn an_oversized_chapter_is_refused() {
        let dir = book();
        let big = std::fs::File::create(dir.path().join("pages/big.md")).expect("create");
        big.set_len(MAX_BOOK_FILE_BYTES + 1).expect("sparse file");
        let err = check(dir.path()).unwrap_err();
        assert!(err.msg.contains("larger than the 16 MiB"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn a_chapter_or_folder_that_leads_outside_the_book_is_refused() {
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("secret.md"), "not the book's").expect("write");
        let dir = book();
        let link = dir.path().join("pages/part/a.md");
        std::fs::remove_file(&link).expect("rm");
        std::os::unix::fs::symlink(outside.path().join("secret.md"), &link).expect("link");
        let err = check(dir.path()).unwrap_err();
        assert_eq!(err.path, link);
        assert!(err.msg.contains("outside the book's folder"), "{err}");
        // A folder that leads out, and a source folder named outside in book.toml.
        std::fs::remove_file(&link).expect("rm");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("pages/away")).expect("link");
        assert!(check(dir.path()).unwrap_err().msg.contains("outside the book's folder"));
        std::fs::remove_file(dir.path().join("pages/away")).expect("rm");
        let config = format!("[book]\nsrc = \"{}\"\n", outside.path().display());
        std::fs::write(dir.path().join("book.toml"), config).expect("write");
        assert!(check(dir.path()).unwrap_err().msg.contains("outside the book's folder"));
        // A link that stays inside is fine.
        std::fs::write(dir.path().join("book.toml"), "[book]\nsrc = \"pages\"\n").expect("write");
        std::os::unix::fs::symlink("a.md", dir.path().join("pages/part/c.md")).ok();
        std::fs::write(dir.path().join("pages/part/a.md"), "text").expect("write");
        check(dir.path()).expect("a link inside the book");
    }
}
