//! mdBook's `links` preprocessor runs before ours and reads whatever `{{#include PATH}}`,
//! `{{#rustdoc_include PATH}}` or `{{#playground PATH}}` names, and `SUMMARY.md` may name a chapter
//! anywhere: `lecture book` refuses each that resolves outside the book's folder, naming the
//! chapter and the path, before mdBook reads a byte, and publishes nothing. Every case runs in a
//! temporary copy of the crate, never in this tree.

use crate::cli_book_guard::Copy;
use crate::common::process::{assert_clean_failure, assert_success};

/// What no page may show.
const SECRET: &str = "not the book's: a secret";

/// `lecture book` on the copy is refused with every one of `expect` in its message, and leaves
/// the copy as it was (no book built, nothing published).
fn assert_refused(c: &Copy, expect: &[&str]) -> String {
    let before = c.snapshot();
    let err = assert_clean_failure(&c.book_command(None), expect);
    assert!(!err.contains(SECRET), "{err}");
    assert!(c.snapshot() == before, "the copy changed: {err}");
    assert!(!c.book().join("book").exists(), "a book was built: {err}");
    err
}

/// The chapter `book/src/intro.md` of the copy with `line` added.
fn with_line(c: &Copy, line: &str) -> impl Drop {
    struct Restore(std::path::PathBuf, String);
    impl Drop for Restore {
        fn drop(&mut self) {
            std::fs::write(&self.0, &self.1).expect("chapter restored");
        }
    }
    let chapter = c.book().join("src/intro.md");
    let text = std::fs::read_to_string(&chapter).expect("chapter");
    std::fs::write(&chapter, format!("{text}\n{line}\n")).expect("chapter written");
    Restore(chapter, text)
}

#[cfg(unix)]
#[test]
fn includes_that_read_outside_the_book_are_refused_before_mdbook_reads_them() {
    let c = Copy::new();
    let secret = c.home().join("secret.txt");
    std::fs::write(&secret, SECRET).expect("secret");
    let s = secret.to_str().expect("utf-8");
    // From `book/src`: up to `book`, the crate, then `home`.
    let climb = format!("{}secret.txt", "../".repeat(3));
    // A link inside the book's folder (but outside `src`, which is walked on its own) to a file
    // outside it.
    std::fs::create_dir_all(c.book().join("snippets")).expect("folder");
    std::os::unix::fs::symlink(&secret, c.book().join("snippets/leak.txt")).expect("link");
    let cases = [
        (format!("{{{{#include {s}}}}}"), s.to_string()),
        (format!("{{{{#include {climb}:1:2}}}}"), s.to_string()),
        (format!("{{{{ #rustdoc_include {s}:anchor }}}}"), s.to_string()),
        (format!("{{{{#playground {s} editable}}}}"), s.to_string()),
        ("{{#include ../snippets/leak.txt}}".into(), s.to_string()),
        ("{{#include ../../src/lib.rs}}".into(), "src/lib.rs".into()),
        ("{{#include /dev/zero}}".into(), "/dev/zero".into()),
    ];
    for (line, path) in &cases {
        let _restore = with_line(&c, line);
        let err = assert_refused(&c, &["intro.md", path, "outside the book's folder", "Copy the file"]);
        assert!(err.contains(line.trim()), "names the include {line}: {err}");
    }
    // An include inside the book that includes one outside: named with the chapter and the file.
    std::fs::write(c.book().join("snippets/inner.md"), "{{#include leak.txt}}\n").expect("file");
    let _restore = with_line(&c, "{{#include ../snippets/inner.md}}");
    assert_refused(&c, &["intro.md", "snippets/inner.md", s, "outside the book's folder"]);
}

#[test]
fn a_chapter_named_outside_the_book_or_includes_without_end_are_refused() {
    let c = Copy::new();
    let secret = c.home().join("secret.md");
    std::fs::write(&secret, SECRET).expect("secret");
    let summary = c.book().join("src/SUMMARY.md");
    let text = std::fs::read_to_string(&summary).expect("summary");
    for location in [secret.display().to_string(), "../../../secret.md".to_string()] {
        std::fs::write(&summary, format!("{text}[Leak]({location})\n")).expect("summary");
        assert_refused(&c, &["secret.md", "outside the book's folder"]);
    }
    // A chapter that does not exist yet would be made outside the book (with `create-missing`).
    std::fs::write(&summary, format!("{text}[New](../../../new.md)\n")).expect("summary");
    assert_refused(
        &c,
        &["new.md", "does not exist", "would be made outside the book's folder"],
    );
    std::fs::write(&summary, &text).expect("summary");
    // A file that includes itself twice is expanded 2¹⁰ times by mdBook.
    std::fs::create_dir_all(c.book().join("snippets")).expect("folder");
    std::fs::write(
        c.book().join("snippets/loop.md"),
        "{{#include loop.md}}\n{{#include loop.md}}\n",
    )
    .expect("file");
    let _restore = with_line(&c, "{{#include ../snippets/loop.md}}");
    assert_refused(&c, &["intro.md", "more than 1000", "includes itself"]);
}

/// Includes that stay inside the book, and an escaped one, which mdBook shows as text and never
/// reads, build as before.
#[test]
fn includes_inside_the_book_and_escaped_ones_build() {
    let c = Copy::new();
    std::fs::create_dir_all(c.book().join("snippets")).expect("folder");
    std::fs::write(c.book().join("snippets/note.md"), "An included note.\n").expect("file");
    let _restore = with_line(&c, "{{#include ../snippets/note.md}} `\\{{#include /etc/passwd}}`");
    assert_success(&c.book_command(None));
    let page = std::fs::read_to_string(c.book().join("book/intro.html")).expect("page");
    assert!(page.contains("An included note."), "the include is expanded");
    assert!(
        page.contains("{{#include /etc/passwd}}"),
        "the escaped one is shown as written"
    );
}
