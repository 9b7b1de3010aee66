//! A section's title is declared in the `sections!` table at the end of its file, which `lecture
//! --list` prints and every trace records. A chapter that is one section (`book/src/ID.md`) must
//! carry the same title, as its heading and in the book's table of contents, so the three never
//! drift apart again.

use std::path::Path;

use crate::common::ROOT;

#[test]
fn a_chapter_of_one_section_has_that_sections_title_everywhere() {
    let src = Path::new(ROOT).join("book/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).expect("SUMMARY.md");
    let mut checked = 0;
    for def in cs336::lecture::SECTIONS {
        let Ok(chapter) = std::fs::read_to_string(src.join(format!("{}.md", def.id))) else {
            continue; // a chapter of several sections (einops, gradients) has its own title
        };
        let heading = chapter.lines().next().unwrap_or_default();
        assert_eq!(heading, format!("# {}", def.title), "book/src/{}.md's heading", def.id);
        let entry = format!("- [{}]({}.md)", def.title, def.id);
        assert!(
            summary.lines().any(|l| l.trim() == entry),
            "SUMMARY.md should list `{entry}`"
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} chapters are one section each");
}
