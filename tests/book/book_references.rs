//! The book's references: every source of the original lecture is in `book/references.toml`,
//! listed in the References chapter, and cited by at least one chapter; a citation shows title,
//! authors and year on hover; an unknown key or a malformed bibliography fails the build saying
//! where and what.

use crate::common;

use std::path::{Path, PathBuf};

use common::{ROOT, Workspace};
use cs336::book::bibliography::Bibliography;
use cs336::book::directive::{Directive, find};
use cs336::book::{BookError, BuildOptions, Cause, Problem};

fn real_bibliography() -> Bibliography {
    Bibliography::load(&Path::new(ROOT).join("book/references.toml")).unwrap_or_else(|e| panic!("{e}"))
}

/// Builds a one-chapter book with `references` as its bibliography (none when `None`); the
/// chapter reads no trace, so the trace named need not exist.
fn build_mini(ws: &Workspace, references: Option<&str>, chapter: &str) -> Result<String, BookError> {
    let book = ws.dir.path().join("mini");
    std::fs::create_dir_all(book.join("src")).expect("book folder");
    std::fs::write(book.join("book.toml"), "[book]\ntitle = \"mini\"\n").expect("book.toml");
    std::fs::write(book.join("src/SUMMARY.md"), "# Summary\n\n- [Chapter](chapter.md)\n").expect("SUMMARY.md");
    std::fs::write(book.join("src/chapter.md"), chapter).expect("chapter");
    if let Some(text) = references {
        std::fs::write(book.join("references.toml"), text).expect("references.toml");
    }
    let out = ws.dir.path().join("mini-html");
    let options = BuildOptions {
        strict: None,
        trace: Some(ws.trace_dir().join("none.json")),
        trace_dir: Some(ws.trace_dir()),
        out_dir: Some(out.clone()),
        source_root: Some(PathBuf::from(ROOT)),
        baseline: None,
    };
    cs336::book::build(&book, &options)?;
    Ok(std::fs::read_to_string(out.join("chapter.html")).expect("chapter page"))
}

fn real_references_text() -> String {
    std::fs::read_to_string(Path::new(ROOT).join("book/references.toml")).expect("references.toml")
}

fn problems(result: Result<String, BookError>) -> Vec<Problem> {
    match result {
        Err(BookError::Problems(p)) => p,
        other => panic!("expected located problems, got {other:?}"),
    }
}

fn build_message(result: Result<String, BookError>) -> String {
    match result {
        Err(e @ BookError::Build { .. }) => e.to_string(),
        other => panic!("expected the build to fail as a whole, got {other:?}"),
    }
}

/// Attribute text as the browser reads it: character references decoded.
fn decode(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest.find(';').expect("a reference ends with ;");
        let name = &rest[1..end];
        let c = match name {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            _ => {
                let code = name.strip_prefix('#').expect("numeric reference");
                char::from_u32(code.parse().expect("decimal")).expect("a character")
            }
        };
        out.push(c);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// `(href, title, text)` of every citation link in a page.
fn citations(html: &str) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for part in html.split("<a class=\"lecture-cite\"").skip(1) {
        let attr = |name: &str| {
            let start = part.find(&format!("{name}=\"")).map(|i| i + name.len() + 2);
            start.map_or(String::new(), |s| {
                decode(&part[s..s + part[s..].find('"').expect("closed")])
            })
        };
        let text_start = part.find('>').expect("tag ends") + 1;
        let text = decode(&part[text_start..text_start + part[text_start..].find("</a>").expect("link ends")]);
        found.push((attr("href"), attr("title"), text));
    }
    found
}

#[test]
fn the_file_keeps_its_order_and_every_entry_parses() {
    let bib = real_bibliography();
    let text = real_references_text();
    let headers: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix('[').and_then(|l| l.strip_suffix(']')))
        .collect();
    let keys: Vec<&str> = bib.entries.keys().map(String::as_str).collect();
    assert_eq!(keys, headers);
    // The lecture links 31 addresses and one object of its references file (ZeRO).
    assert!(keys.len() >= 32, "{keys:?}");
}

#[test]
fn a_citation_links_out_and_shows_title_authors_and_year_on_hover() {
    let ws = Workspace::new();
    let html = build_mini(
        &ws,
        Some(&real_references_text()),
        "Mixed precision: {{cite mixed_precision_2017}}. Xavier: {{cite glorot_2010}}. Docs: {{cite pytorch_amp_docs}}.\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let cites = citations(&html);
    assert_eq!(
        cites,
        [
            (
                "https://arxiv.org/pdf/1710.03740.pdf".to_string(),
                "Mixed Precision Training — Paulius Micikevicius et al. (2017)".to_string(),
                "Mixed Precision Training".to_string()
            ),
            (
                "https://proceedings.mlr.press/v9/glorot10a/glorot10a.pdf".to_string(),
                "Understanding the difficulty of training deep feedforward neural networks — Xavier Glorot and Yoshua Bengio (2010)"
                    .to_string(),
                "Understanding the difficulty of training deep feedforward neural networks".to_string()
            ),
            (
                "https://pytorch.org/docs/stable/amp.html".to_string(),
                "Automatic Mixed Precision package - torch.amp — PyTorch contributors (accessed 2025)".to_string(),
                "Automatic Mixed Precision package - torch.amp".to_string()
            ),
        ]
    );
    // A plain link: nothing is loaded from the source while the page is read.
    assert!(!html.contains("<img src=\"https://arxiv.org"), "{html}");
}

#[test]
fn an_unknown_key_fails_naming_the_chapter_line_and_key() {
    let ws = Workspace::new();
    let found = problems(build_mini(
        &ws,
        Some(&real_references_text()),
        "Fine: {{cite glorot_2010}}.\n\nWrong: {{cite glorot_2011}}.\n",
    ));
    assert_eq!(found.len(), 1, "{found:#?}");
    let p = &found[0];
    assert_eq!(p.line, 3);
    assert!(p.chapter.ends_with("chapter.md"), "{}", p.chapter.display());
    assert!(
        matches!(&p.cause, Cause::UnknownReference { key, .. } if key == "glorot_2011"),
        "{p}"
    );
    let text = p.to_string();
    assert!(text.contains("chapter.md:3"), "{text}");
    assert!(text.contains("no entry `glorot_2011`"), "{text}");
    assert!(text.contains("glorot_2010"), "the known keys are listed: {text}");

    // Without a bibliography, a citation says which file it needs.
    let ws = Workspace::new();
    let found = problems(build_mini(&ws, None, "{{cite glorot_2010}}\n"));
    assert!(
        matches!(&found[0].cause, Cause::NoBibliography { path } if path.ends_with("references.toml")),
        "{found:#?}"
    );
    // Malformed directives are located like any other.
    let ws = Workspace::new();
    let found = problems(build_mini(
        &ws,
        Some(&real_references_text()),
        "{{cite}} and {{cite a b}}\n",
    ));
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found.iter().all(|p| matches!(p.cause, Cause::Malformed(_))),
        "{found:#?}"
    );
}

#[test]
fn a_malformed_bibliography_fails_the_build_saying_where() {
    let entry =
        "[a]\ntitle = \"T\"\nauthors = [\"A\"]\nyear = 2020\nurl = \"https://example.org/\"\nkind = \"paper\"\n";
    let cases: [(String, &[&str]); 6] = [
        (format!("{entry}\n[b\n"), &["references.toml", "line 8"]),
        (
            entry.replace("year = 2020\n", ""),
            &["references.toml", "line 1", "year"],
        ),
        (entry.replace("2020", "20"), &["entry `a`", "`year` 20"]),
        (
            entry.replace("https://example.org/", "javascript:alert(1)"),
            &["entry `a`", "javascript:alert(1)"],
        ),
        (entry.replace("paper", "poem"), &["references.toml", "poem"]),
        (format!("{entry}colour = \"red\"\n"), &["references.toml", "colour"]),
    ];
    for (text, expected) in cases {
        let ws = Workspace::new();
        let msg = build_message(build_mini(&ws, Some(&text), "No citation here.\n"));
        for e in expected {
            assert!(msg.contains(e), "expected `{e}` in: {msg}\nfor:\n{text}");
        }
    }
    let ws = Workspace::new();
    let msg = build_message(build_mini(&ws, Some("# nothing\n"), "x\n"));
    assert!(msg.contains("has no entries"), "{msg}");
}

/// The chapters of the real book and the keys each cites.
fn cited_keys() -> Vec<(String, Vec<String>)> {
    let src = Path::new(ROOT).join("book/src");
    let mut chapters = Vec::new();
    for entry in std::fs::read_dir(&src).expect("book/src") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            let text = std::fs::read_to_string(&path).expect("chapter");
            let keys = find(&text)
                .into_iter()
                .filter_map(|f| match f.parsed {
                    Ok(Directive::Cite { key }) => Some(key),
                    _ => None,
                })
                .collect();
            chapters.push((path.file_name().expect("name").to_string_lossy().into_owned(), keys));
        }
    }
    chapters.sort();
    chapters
}

/// Decided: every source the lecture links is cited by a chapter of this book, not only listed.
#[test]
fn every_entry_is_cited_by_some_chapter() {
    let bib = real_bibliography();
    let cited: Vec<String> = cited_keys().into_iter().flat_map(|(_, keys)| keys).collect();
    let uncited: Vec<&String> = bib.entries.keys().filter(|k| !cited.contains(k)).collect();
    assert!(uncited.is_empty(), "sources no chapter cites: {uncited:?}");
    for key in &cited {
        assert!(bib.get(key).is_some(), "`{key}` is cited but not in the bibliography");
    }
}

#[test]
fn the_references_chapter_lists_every_entry_in_order_with_the_chapters_citing_it() {
    let ws = Workspace::new();
    for (path, trace) in common::committed_traces() {
        let slug = path.file_stem().expect("name").to_string_lossy().into_owned();
        ws.write_trace(&slug, &trace);
    }
    // The book's default trace (the newest), as `mdbook serve book` would show it.
    let default = common::default_trace_path();
    let cpu = ws.trace_dir().join(default.file_name().expect("a file name"));
    let index = ws.build_real_book(&cpu).unwrap_or_else(|e| panic!("{e}"));
    let html = std::fs::read_to_string(index.with_file_name("references.html")).expect("references page");
    let bib = real_bibliography();
    let mut at = 0;
    for (key, entry) in &bib.entries {
        let item = format!("<li id=\"ref-{key}\"");
        let start = html[at..]
            .find(&item)
            .map(|i| i + at)
            .unwrap_or_else(|| panic!("`{key}` missing or out of the file's order"));
        let end = html[start..].find("</li>").expect("item ends") + start;
        let li = &html[start..end];
        assert!(
            li.contains(&format!("href=\"{}\"", entry.url.replace('&', "&amp;"))),
            "{li}"
        );
        assert!(li.contains(&entry.year.to_string()), "{li}");
        assert!(li.contains("Cited in <a href=\""), "{key} names no chapter: {li}");
        at = end;
    }
    // The list links back to each chapter that cites a source.
    for (chapter, keys) in cited_keys() {
        for key in keys {
            let start = html.find(&format!("<li id=\"ref-{key}\"")).expect("listed");
            let li = &html[start..start + html[start..].find("</li>").expect("ends")];
            let page = chapter.replace(".md", ".html");
            assert!(
                li.contains(&format!("<a href=\"{page}\">")),
                "{key} does not link back to {page}: {li}"
            );
        }
    }
}
