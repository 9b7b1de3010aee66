//! Which folder a build may replace. The swap ([`super::swap`]) puts the new book where the old
//! one was, whole: whatever the output folder held is gone. `build-dir` (or an output folder a
//! command gives) named the crate root once, and the swap took `src/` and `trace/` with it. So a
//! build replaces only a folder that is absent, empty, or marked as a build's own output, and
//! never one that is or holds the book, its chapters, the lecture's code or traces, the home
//! folder or the file system's root, marked or not (mdBook refuses a build dir that holds its
//! source for the same reason). Every check is made before anything is written.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The file every build leaves in the folder it built.
pub const MARKER: &str = ".cs336-book-build";

/// What the marker says; the check reads its start, so the rest may change.
pub const MARKER_TEXT: &str = "Built by cs336-book (`lecture book`): the next build replaces this whole folder.\n";
const MARKER_START: &str = "Built by cs336-book";

/// The text mdBook's HTML renderer writes into `.nojekyll` of every book it renders.
const MDBOOK_NOJEKYLL: &str = "This file makes sure that Github Pages doesn't process mdBook's output.";

/// Bytes read of a marker or of `.nojekyll`: enough for the text, and a huge file or a pipe
/// under that name cannot stall the check.
const READ_AT_MOST: u64 = 256;

/// A folder the build will not replace, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "refusing to build the book into {} (named by {setting}{}): {why}. A build replaces its \
     output folder whole, so it builds only into one that is absent, empty or holds `{MARKER}` \
     (the mark every build leaves), and never into the book's or the lecture's sources. Nothing \
     was changed; name a folder of the book's own there",
    folder.display(),
    as_named(named, folder)
)]
pub struct Refused {
    /// Where the output folder was named: `build-dir` in a book.toml, an environment variable,
    /// or the command.
    pub setting: String,
    /// The folder as named.
    pub named: PathBuf,
    /// The folder it is, links and `..` resolved.
    pub folder: PathBuf,
    pub why: String,
}

/// How the setting named the folder, where that differs from the folder (a link, `..`).
fn as_named(named: &Path, folder: &Path) -> String {
    if named == folder {
        String::new()
    } else {
        format!(" (as `{}`)", named.display())
    }
}

/// A folder the output folder must neither be nor hold, with what it is.
pub struct Protected {
    pub what: &'static str,
    pub path: PathBuf,
}

/// The folder the build may swap its book into for `named`, links and `..` resolved (the swap
/// works on that folder, so a link cannot lead it anywhere the check did not look).
pub fn check(named: &Path, setting: &str, protected: &[Protected]) -> Result<PathBuf, Refused> {
    let refuse = |folder: &Path, why: String| Refused {
        setting: setting.to_string(),
        named: named.to_path_buf(),
        folder: folder.to_path_buf(),
        why,
    };
    let folder = resolve(named).map_err(|why| refuse(named, why))?;
    if folder.parent().is_none() {
        return Err(refuse(&folder, "it is the file system's root".into()));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let home = home.map(|path| Protected {
        what: "the home folder",
        path,
    });
    let protected: Vec<(&str, PathBuf)> = protected
        .iter()
        .chain(&home)
        .map(|p| (p.what, resolve(&p.path).unwrap_or_else(|_| p.path.clone())))
        .collect();
    // What the folder is says more than what it holds: the crate root holds the book too.
    if let Some((what, _)) = protected.iter().find(|(_, path)| *path == folder) {
        return Err(refuse(&folder, format!("it is {what}")));
    }
    if let Some((what, path)) = protected.iter().find(|(_, path)| path.starts_with(&folder)) {
        return Err(refuse(&folder, format!("it holds {what} ({})", path.display())));
    }
    let meta = match std::fs::symlink_metadata(&folder) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(folder),
        Err(e) => return Err(refuse(&folder, format!("it cannot be read: {e}"))),
    };
    if !meta.is_dir() {
        return Err(refuse(&folder, "it is a file, not a folder".into()));
    }
    let mut entries = std::fs::read_dir(&folder).map_err(|e| refuse(&folder, format!("it cannot be listed: {e}")))?;
    if entries.next().is_none() || marked(&folder) || built_by_mdbook(&folder) {
        return Ok(folder);
    }
    Err(refuse(
        &folder,
        format!("it is not empty and holds no `{MARKER}`, so no book build made it"),
    ))
}

/// The folder holds the marker a build writes.
fn marked(folder: &Path) -> bool {
    start_of(&folder.join(MARKER)).is_some_and(|text| text.starts_with(MARKER_START))
}

/// Books built before builds left the marker (the default `book/book` of every existing
/// checkout), and every book `mdbook build` or `mdbook serve` renders into the same folder
/// (mdBook empties it and knows nothing of our marker), carry mdBook's own mark instead: the
/// `.nojekyll` its HTML renderer writes with a fixed text, beside `index.html`. A folder of
/// sources holds neither; the folders that hold the book's or the lecture's sources are refused
/// before this, marked or not.
fn built_by_mdbook(folder: &Path) -> bool {
    let index = std::fs::symlink_metadata(folder.join("index.html")).is_ok_and(|m| m.is_file());
    index && start_of(&folder.join(".nojekyll")).is_some_and(|text| text.trim_end() == MDBOOK_NOJEKYLL)
}

/// The first bytes of a regular file (never a link, a pipe or a device), as text.
fn start_of(file: &Path) -> Option<String> {
    if !std::fs::symlink_metadata(file).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(file)
        .ok()?
        .take(READ_AT_MOST)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// `path` as the file system will meet it: the longest part that exists resolved by the file
/// system (links, `..`), the rest, which can hold no link, joined to it as written.
fn resolve(path: &Path) -> Result<PathBuf, String> {
    let path = std::path::absolute(path).map_err(|e| format!("it cannot be made absolute: {e}"))?;
    let parts: Vec<Component<'_>> = path.components().collect();
    let exists = (1..=parts.len())
        .rev()
        .find(|&n| std::fs::symlink_metadata(parts[..n].iter().collect::<PathBuf>()).is_ok())
        .unwrap_or(1);
    let existing: PathBuf = parts[..exists].iter().collect();
    let mut resolved = std::fs::canonicalize(&existing).map_err(|e| {
        format!(
            "{} cannot be resolved ({e}): a link that leads nowhere?",
            existing.display()
        )
    })?;
    for part in &parts[exists..] {
        match part {
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => resolved.push(name),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crate in a temporary folder: `book/src/SUMMARY.md`, `src/lib.rs`, `trace/t.json`.
    struct Crate {
        dir: tempfile::TempDir,
    }

    impl Crate {
        fn new() -> Crate {
            let dir = tempfile::tempdir().expect("tempdir");
            for (file, text) in [
                ("book/book.toml", "[book]\n"),
                ("book/src/SUMMARY.md", "# Summary\n"),
                ("src/lib.rs", "//! code\n"),
                ("trace/t.json", "{}\n"),
            ] {
                let path = dir.path().join(file);
                std::fs::create_dir_all(path.parent().expect("parent")).expect("folder");
                std::fs::write(path, text).expect("file");
            }
            Crate { dir }
        }

        fn root(&self) -> PathBuf {
            self.dir.path().to_path_buf()
        }

        fn check(&self, named: &Path) -> Result<PathBuf, Refused> {
            let root = self.root();
            let protected = [
                ("the book's chapters", root.join("book/src")),
                ("the book", root.join("book")),
                ("the crate root", root.clone()),
                ("the traces", root.join("trace")),
            ]
            .map(|(what, path)| Protected { what, path });
            check(named, "`build-dir` in book.toml", &protected)
        }

        fn refused(&self, named: &Path, why: &str) {
            let e = self.check(named).expect_err("refused");
            assert!(e.why.contains(why), "{e}");
            let message = e.to_string();
            assert!(message.contains("`build-dir` in book.toml"), "{message}");
            assert!(message.contains(&e.folder.display().to_string()), "{message}");
        }
    }

    #[test]
    fn the_sources_and_every_folder_above_them_are_refused() {
        let c = Crate::new();
        let root = c.root();
        c.refused(&root, "it is the crate root");
        c.refused(&root.join("book"), "it is the book");
        c.refused(&root.join("book/src"), "it is the book's chapters");
        c.refused(&root.join("book/src/.."), "it is the book");
        c.refused(&root.join("book/nothing/../.."), "it is the crate root");
        c.refused(root.parent().expect("a parent"), "it holds the book's chapters (");
        c.refused(&root.join("trace"), "it is the traces");
        // Not protected by name, but not a build's either.
        c.refused(&root.join("src"), "holds no `.cs336-book-build`");
        c.refused(Path::new("/"), "file system's root");
        if let Some(home) = std::env::var_os("HOME") {
            let home = PathBuf::from(home);
            if home.is_dir() && home.parent().is_some() && !root.starts_with(&home) {
                c.refused(&home, "it is the home folder");
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_judged_by_where_it_leads() {
        let c = Crate::new();
        let root = c.root();
        let link = root.join("book/out");
        std::os::unix::fs::symlink(root.join("book/src"), &link).expect("link");
        c.refused(&link, "it is the book's chapters");
        let up = root.join("up");
        std::os::unix::fs::symlink(&root, &up).expect("link");
        c.refused(&up.join("book"), "it is the book");
        std::os::unix::fs::symlink(root.join("gone"), root.join("dangling")).expect("link");
        c.refused(&root.join("dangling"), "leads nowhere");
    }

    #[test]
    fn only_an_absent_empty_or_marked_folder_is_replaced() {
        let c = Crate::new();
        let out = c.root().join("book/book");
        assert_eq!(c.check(&out), Ok(out.clone()), "absent");
        std::fs::create_dir(&out).expect("folder");
        assert_eq!(c.check(&out), Ok(out.clone()), "empty");
        std::fs::write(out.join("notes.txt"), "mine").expect("file");
        c.refused(&out, "holds no `.cs336-book-build`");
        std::fs::write(out.join(MARKER), "something else").expect("file");
        c.refused(&out, "holds no `.cs336-book-build`");
        std::fs::write(out.join(MARKER), MARKER_TEXT).expect("marker");
        assert_eq!(c.check(&out), Ok(out.clone()), "marked");
        let file = c.root().join("book/page.html");
        std::fs::write(&file, "<p>").expect("file");
        c.refused(&file, "a file, not a folder");
    }

    #[test]
    fn a_book_mdbook_rendered_is_replaced_by_its_mark() {
        let c = Crate::new();
        let out = c.root().join("book/book");
        std::fs::create_dir(&out).expect("folder");
        std::fs::write(out.join("index.html"), "<html>").expect("page");
        c.refused(&out, "holds no");
        std::fs::write(out.join(".nojekyll"), "hand-made\n").expect("file");
        c.refused(&out, "holds no");
        std::fs::write(out.join(".nojekyll"), format!("{MDBOOK_NOJEKYLL}\n")).expect("file");
        assert_eq!(c.check(&out), Ok(out.clone()));
        // Not even mdBook's mark makes the book's own folder replaceable.
        std::fs::write(c.root().join("book/index.html"), "<html>").expect("page");
        std::fs::write(c.root().join("book/.nojekyll"), MDBOOK_NOJEKYLL).expect("file");
        std::fs::write(c.root().join("book").join(MARKER), MARKER_TEXT).expect("marker");
        c.refused(&c.root().join("book"), "it is the book");
    }
}
