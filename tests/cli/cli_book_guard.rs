//! `lecture book` replaces its output folder whole, so it builds only into a folder a build made
//! (or an empty or absent one), and never into the book's or the lecture's sources: `build-dir`
//! at the crate root once swapped the new book in for `src/` and `trace/`. Every case runs in a
//! temporary copy of the crate (`CARGO_MANIFEST_DIR` is the root `lecture` reads), never in this
//! tree.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime};

use common::process::{assert_clean_failure, assert_success, finish, lecture_cmd};
use cs336::book::out_folder::{MARKER, MARKER_TEXT};

const LIMIT: Duration = Duration::from_secs(120);

pub(crate) type Snapshot = Vec<(PathBuf, String, Vec<u8>, Option<SystemTime>)>;

/// A temporary `home/` holding `crate/`: the parts of this crate the book reads (its book, code
/// and committed traces), nothing that a build wrote.
pub(crate) struct Copy {
    dir: tempfile::TempDir,
}

impl Copy {
    pub(crate) fn new() -> Copy {
        let dir = tempfile::tempdir().expect("tempdir");
        let from = Path::new(common::ROOT);
        let to = dir.path().join("home/crate");
        for part in [
            "Cargo.toml",
            "src",
            "book/book.toml",
            "book/references.toml",
            "book/src",
            "book/theme",
            "book/images",
        ] {
            copy(&from.join(part), &to.join(part));
        }
        let traces = to.join("trace/lecture_02");
        std::fs::create_dir_all(&traces).expect("trace folder");
        for entry in std::fs::read_dir(from.join("trace/lecture_02"))
            .expect("traces")
            .flatten()
        {
            if entry.path().extension().is_some_and(|x| x == "json") {
                std::fs::copy(entry.path(), traces.join(entry.file_name())).expect("trace copied");
            }
        }
        Copy { dir }
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub(crate) fn root(&self) -> PathBuf {
        self.home().join("crate")
    }

    pub(crate) fn book(&self) -> PathBuf {
        self.root().join("book")
    }

    /// `build-dir` under `[build]` in the copy's book.toml (none: mdBook's default, `book`).
    fn set_build_dir(&self, value: Option<&Path>) {
        let toml = self.book().join("book.toml");
        let text = std::fs::read_to_string(&toml).expect("book.toml");
        let mut lines: Vec<String> = text
            .lines()
            .filter(|l| !l.starts_with("build-dir"))
            .map(str::to_string)
            .collect();
        if let Some(value) = value {
            let at = lines.iter().position(|l| l == "[build]").expect("a [build] table") + 1;
            let value = value.to_str().expect("utf-8");
            assert!(!value.contains('\''), "a TOML literal string");
            lines.insert(at, format!("build-dir = '{value}'"));
        }
        std::fs::write(&toml, lines.join("\n") + "\n").expect("book.toml written");
    }

    /// `lecture book` with the copy as its crate root and `home/` as the home folder.
    pub(crate) fn book_command(&self, build_dir_env: Option<&Path>) -> Output {
        let mut cmd = lecture_cmd(&["book"], build_dir_env);
        cmd.env("CARGO_MANIFEST_DIR", self.root()).env("HOME", self.home());
        if build_dir_env.is_none() {
            cmd.env_remove("MDBOOK_BUILD__BUILD_DIR");
        }
        finish(cmd.spawn().expect("spawn lecture"), LIMIT, "lecture book")
    }

    /// Every entry under the temporary folder: the kind, a file's bytes and time, a link's target.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let mut all = Vec::new();
        let mut stack = vec![self.dir.path().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("listed").flatten() {
                let path = entry.path();
                let meta = std::fs::symlink_metadata(&path).expect("metadata");
                let (kind, bytes, time) = if meta.is_symlink() {
                    let target = std::fs::read_link(&path).expect("link");
                    ("link", target.into_os_string().into_encoded_bytes(), None)
                } else if meta.is_dir() {
                    stack.push(path.clone());
                    ("folder", Vec::new(), None)
                } else {
                    ("file", std::fs::read(&path).expect("read"), meta.modified().ok())
                };
                all.push((path, kind.to_string(), bytes, time));
            }
        }
        all.sort();
        all
    }
}

/// `from` (a file or a folder, links not followed) copied to `to`.
fn copy(from: &Path, to: &Path) {
    let meta = std::fs::symlink_metadata(from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    if meta.is_dir() {
        std::fs::create_dir_all(to).expect("folder");
        for entry in std::fs::read_dir(from).expect("listed").flatten() {
            copy(&entry.path(), &to.join(entry.file_name()));
        }
    } else if meta.is_file() {
        std::fs::create_dir_all(to.parent().expect("parent")).expect("folder");
        std::fs::copy(from, to).expect("copied");
    }
}

/// Refused, naming the setting, the folder and why, with nothing under the copy changed.
fn assert_refused(copy: &Copy, o: &Output, setting: &str, folder: &Path, why: &str, before: &Snapshot) {
    let into = format!("refusing to build the book into {} (", folder.display());
    let err = assert_clean_failure(o, &[&into, setting, why, "Nothing was changed"]);
    let after = copy.snapshot();
    let changed: Vec<_> = after
        .iter()
        .filter(|e| !before.contains(e))
        .chain(before.iter().filter(|e| !after.contains(e)))
        .map(|(path, kind, _, _)| format!("{kind} {}", path.display()))
        .collect();
    assert!(changed.is_empty(), "changed, added or removed: {changed:#?}\n{err}");
}

#[cfg(unix)]
#[test]
fn book_refuses_a_build_dir_that_holds_the_sources_or_no_build_made() {
    let c = Copy::new();
    let (root, book, home) = (c.root(), c.book(), c.home());
    std::os::unix::fs::symlink(&root, book.join("to-root")).expect("link");
    std::os::unix::fs::symlink(book.join("src"), book.join("to-chapters")).expect("link");
    std::os::unix::fs::symlink(&home, book.join("to-home")).expect("link");
    std::fs::create_dir(book.join("mine")).expect("folder");
    std::fs::write(book.join("mine/notes.txt"), "not a book").expect("file");
    std::fs::write(book.join("page.html"), "<p>mine</p>").expect("file");
    let no_marker = format!("holds no `{MARKER}`");
    let cases: [(PathBuf, PathBuf, &str); 13] = [
        (root.clone(), root.clone(), "it is the crate root"),
        ("src".into(), book.join("src"), "it is the book's chapters"),
        (root.join("src"), root.join("src"), &no_marker),
        ("../src".into(), root.join("src"), &no_marker),
        ("../trace".into(), root.join("trace"), "it holds the traces ("),
        ("/".into(), "/".into(), "it is the file system's root"),
        (home.clone(), home.clone(), "it is the home folder"),
        (".".into(), book.clone(), "it is the book (its book.toml)"),
        ("to-root".into(), root.clone(), "it is the crate root"),
        ("to-chapters".into(), book.join("src"), "it is the book's chapters"),
        ("to-home".into(), home.clone(), "it is the home folder"),
        ("mine".into(), book.join("mine"), &no_marker),
        ("page.html".into(), book.join("page.html"), "it is a file, not a folder"),
    ];
    for (build_dir, folder, why) in &cases {
        c.set_build_dir(Some(build_dir));
        let before = c.snapshot();
        let o = c.book_command(None);
        assert_refused(&c, &o, "`build-dir` under [build] in", folder, why, &before);
    }
    // mdBook's own override of `build-dir` is guarded, and named, the same way.
    c.set_build_dir(None);
    let before = c.snapshot();
    let o = c.book_command(Some(&root));
    assert_refused(
        &c,
        &o,
        "MDBOOK_BUILD__BUILD_DIR",
        &root,
        "it is the crate root",
        &before,
    );
}

#[test]
fn book_marks_its_folder_and_replaces_only_a_built_one() {
    let c = Copy::new();
    let out = c.book().join("book");
    let build = || {
        let o = c.book_command(None);
        let stdout = assert_success(&o);
        assert_eq!(
            stdout.trim_end().lines().last(),
            Some(out.join("index.html").display().to_string().as_str())
        );
    };
    build();
    assert_eq!(std::fs::read_to_string(out.join(MARKER)).expect("marker"), MARKER_TEXT);
    // A second build replaces the first whole.
    std::fs::write(out.join("stale.html"), "from an older build").expect("file");
    build();
    assert!(!out.join("stale.html").exists(), "the old book is gone");
    assert!(out.join("index.html").is_file() && out.join(MARKER).is_file());
    let leftovers: Vec<_> = std::fs::read_dir(c.book())
        .expect("listed")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".book-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A book built before builds left the marker (or by `mdbook build`) carries mdBook's mark.
    std::fs::remove_file(out.join(MARKER)).expect("marker removed");
    build();
    assert!(out.join(MARKER).is_file(), "marked again");
    // A folder of someone's own files at the same place is left alone.
    std::fs::remove_dir_all(&out).expect("book removed");
    std::fs::create_dir(&out).expect("folder");
    std::fs::write(out.join("notes.txt"), "mine").expect("file");
    let before = c.snapshot();
    let o = c.book_command(None);
    assert_refused(&c, &o, "`build-dir` under [build] in", &out, MARKER, &before);
}
