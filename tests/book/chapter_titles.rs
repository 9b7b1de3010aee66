//! A section's title is declared once: in the `sections!` table at the end of its file, which
//! `lecture --list` prints and every trace records. A chapter that is one section
//! (`book/src/ID.md`) has no heading of its own and is listed in `SUMMARY.md` as `[ID](ID.md)`;
//! the build takes the title from the trace for the page's heading, its `<title>` and the table of
//! contents. A chapter that writes its own heading fails the build.

use std::path::Path;

use crate::common::{ROOT, Workspace, fresh_trace};

#[test]
fn a_chapter_of_one_section_takes_the_title_the_code_declares() {
    let src = Path::new(ROOT).join("book/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).expect("SUMMARY.md");
    let ws = Workspace::new();
    let path = ws.write_trace("cpu", fresh_trace());
    ws.build_real_book(&path).expect("the book builds");
    let out = ws.out_dir();
    let toc = ["toc.js", "toc.html", "index.html"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(out.join(f)).ok())
        .collect::<String>();
    let mut checked = 0;
    for def in cs336::lecture::SECTIONS {
        let Ok(chapter) = std::fs::read_to_string(src.join(format!("{}.md", def.id))) else {
            continue; // a chapter of several sections (einops, gradients) has its own title
        };
        assert!(
            !chapter.lines().next().unwrap_or_default().starts_with("# "),
            "book/src/{}.md writes its own heading; its title is the code's",
            def.id
        );
        let entry = format!("- [{0}]({0}.md)", def.id);
        assert!(
            summary.lines().any(|l| l.trim() == entry),
            "SUMMARY.md should list `{entry}`"
        );
        let page = std::fs::read_to_string(out.join(format!("{}.html", def.id))).expect("page");
        let title = cs336::book::html::escape(def.title);
        assert!(
            page.contains(&format!(">{title}</a></h1>")),
            "{}: no heading `{title}`",
            def.id
        );
        assert!(
            page.contains(&format!("<title>{title}")),
            "{}: no <title> `{title}`",
            def.id
        );
        assert!(toc.contains(&title), "the table of contents lacks `{title}`");
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} chapters are one section each");

    // A chapter of a section that repeats the title fails the build, saying why.
    let problems = ws
        .build_chapter_named(&path, "tensor_storage", "# Tensor storage\n\nText.\n")
        .expect_err("a second declaration");
    let text = problems.iter().map(|p| p.to_string()).collect::<String>();
    assert!(
        text.contains("sections!") && text.contains("remove the chapter's own heading"),
        "{text}"
    );
}
