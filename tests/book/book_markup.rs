//! No trace string can add markup to a page. Every string field of a trace that the book shows
//! (value strings and names, `source_file`, device slug, name and kind, each section's run time,
//! `rustc`, commit and build profile, `cuda_unavailable_reason`, chart labels) is set to arbitrary text; the chapter is
//! rendered as mdbook renders it, and its HTML must hold exactly the elements, attributes and
//! links of the same chapter over a benign trace whose strings have the same lengths.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{ROOT, Workspace, fresh_trace};
use cs336::book::render::render_chapter;
use cs336::book::traces::{TraceChoice, Traces};
use cs336::trace::Trace;
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts};
use proptest::prelude::*;

/// Every directive that shows trace strings, in every kind of place a value can sit.
const CHAPTER: &str = "# Chapter\n\nText {{value tensor_slicing.view_error}} and *{{value tensor_slicing.view_error}}* \
and [{{value tensor_slicing.view_error}}](https://example.com/page).\n\n\
| a | b |\n|---|---|\n| {{value tensor_slicing.view_error}} | {{value tensors_memory.bytes}} |\n\n\
- item {{value tensor_slicing.view_error trace=other}}\n\n> quote {{value tensor_slicing.view_error}}\n\n\
{{code tensor_slicing}}\n\n{{code tensor_slicing trace=other}}\n\n{{provenance}}\n\n{{provenance trace=other}}\n\n\
{{compare tensor_slicing.view_error}}\n\n{{chart float_bit_layouts}}\n\n{{chart train_losses}}\n\nThe end.\n";

/// How many trace strings one case sets.
const FIELDS: usize = 19;

fn slicing(t: &mut Trace) -> &mut cs336::trace::SectionRecord {
    t.sections
        .iter_mut()
        .find(|x| x.id == "tensor_slicing")
        .expect("section")
}

/// The default (`cpu`) and another device's (`other`) trace, with `s[i]` in field `i`.
fn traces(s: &[String]) -> (Trace, Trace) {
    let mut cpu = fresh_trace().clone();
    let section = slicing(&mut cpu);
    section.values.get_mut("view_error").expect("value").value = s[0].clone().into();
    let mut extra = section.values["view_error"].clone();
    extra.value = s[2].clone().into();
    extra.line = 0; // shown below the code, by name
    let states = extra.num_states();
    // A name no recorded value has (recorded names have no spaces): a name the section already
    // records, such as `x`, would move that value below the code and change the markup for a
    // reason that is not injection.
    let name = format!("helper {}", s[1]);
    if section.values.insert(name.clone(), extra).is_none() {
        section.steps.extend((0..states).map(|i| (name.clone(), i)));
    }
    let p = &mut cpu.provenance;
    p.device.name = s[3].clone();
    p.device.cuda_unavailable_reason = Some(s[4].clone());
    for run in cpu.sections.iter_mut().map(|x| &mut x.run) {
        run.rustc = s[5].clone();
        run.recorded_at = s[6].clone();
        run.git.commit = Some(s[7].clone());
        run.build.profile = s[18].clone();
    }
    let memory = cpu
        .sections
        .iter_mut()
        .find(|x| x.id == "tensors_memory")
        .expect("section");
    if let Some(serde_json::Value::Array(layouts)) = memory.values.get_mut("bit_layouts").map(|v| &mut v.value) {
        for l in layouts {
            l["name"] = s[14].clone().into();
        }
    }
    let train = cpu.sections.iter_mut().find(|x| x.id == "train_loop").expect("section");
    if let Some(serde_json::Value::Object(runs)) = train.values.get_mut("longer_runs").map(|v| &mut v.value) {
        for run in runs.values_mut() {
            run["optimizer"] = s[15].clone().into();
        }
    }

    let mut other = fresh_trace().clone();
    let p = &mut other.provenance;
    p.device.slug = format!("other-{}", s[8]);
    p.device.name = s[9].clone();
    p.device.kind = format!("k{}", s[10]);
    for run in other.sections.iter_mut().map(|x| &mut x.run) {
        run.recorded_at = s[16].clone();
        run.rustc = s[17].clone();
    }
    let section = slicing(&mut other);
    // A file name the book may look for (inside the crate root) but will not find: the section
    // is then shown as recorded by older code, with its file named.
    section.source_file = format!("src/x{}", s[11].replace("..", "__"));
    section.run.git.commit = Some(s[12].clone());
    section.values.get_mut("view_error").expect("value").value = s[13].clone().into();
    (cpu, other)
}

/// The chapter's HTML over these traces, rendered as mdbook renders markdown.
fn render(ws: &Workspace, cpu: &Trace, other: &Trace) -> String {
    let path = ws.write_trace("cpu", cpu);
    ws.write_trace("other", other);
    let mut traces =
        Traces::new(&ws.trace_dir(), TraceChoice::File(path.clone()), Path::new(ROOT)).with_strict(Some(path));
    let markdown = render_chapter(CHAPTER, &mut traces).unwrap_or_else(|problems| panic!("renders: {problems:#?}"));
    let parser = mdbook_markdown::new_cmark_parser(&markdown, &mdbook_markdown::MarkdownOptions::default());
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, parser);
    html
}

/// What markup a page holds: each element (start or end, name, attribute names), each comment,
/// and the value of every attribute that can load, link or run something.
#[derive(Debug, Default, PartialEq)]
struct Markup {
    tags: BTreeMap<String, usize>,
    active: Vec<(String, String)>,
}

#[derive(Default)]
struct Collector(std::cell::RefCell<Markup>);

fn is_active(attr: &str) -> bool {
    attr.starts_with("on")
        || matches!(
            attr,
            "href" | "src" | "srcset" | "srcdoc" | "action" | "formaction" | "xlink:href" | "data" | "style" | "poster"
        )
}

impl TokenSink for Collector {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut m = self.0.borrow_mut();
        let key = match token {
            Token::TagToken(tag) => {
                let mut names: Vec<String> = tag.attrs.iter().map(|a| a.name.local.to_string()).collect();
                names.sort();
                for a in &tag.attrs {
                    let name = a.name.local.to_string();
                    if is_active(&name) {
                        m.active.push((name, a.value.to_string()));
                    }
                }
                let kind = if tag.kind == TagKind::StartTag { "<" } else { "</" };
                format!("{kind}{} {}", tag.name, names.join(" "))
            }
            Token::CommentToken(_) => "<!-- -->".to_string(),
            Token::DoctypeToken(_) => "<!doctype>".to_string(),
            _ => return TokenSinkResult::Continue,
        };
        *m.tags.entry(key).or_default() += 1;
        TokenSinkResult::Continue
    }
}

fn markup(html: &str) -> Markup {
    let tokenizer = Tokenizer::new(Collector::default(), TokenizerOpts::default());
    let queue = BufferQueue::default();
    queue.push_back(StrTendril::from_slice(html));
    let _ = tokenizer.feed(&queue);
    tokenizer.end();
    tokenizer.sink.0.take()
}

/// Pieces that mean something to markdown or HTML, to build strings from.
const PIECES: &[&str] = &[
    "\n",
    "\n\n",
    "\r",
    "\r\r",
    "\r\n\r\n",
    " ",
    "    ",
    "\t",
    "<",
    ">",
    "&",
    "\"",
    "'",
    "`",
    "```",
    "*",
    "_",
    "[",
    "]",
    "(",
    ")",
    "!",
    "#",
    "# Injected",
    "- ",
    "1. ",
    "> ",
    "|",
    "---",
    "===",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    "<a href=\"javascript:alert(1)\">",
    "javascript:alert(1)",
    "<!--",
    "-->",
    "<![CDATA[",
    "]]>",
    "{{value tensors_memory.bytes}}",
    "{{#include /etc/passwd}}",
    "&amp;",
    "&#10;",
    "&lt;",
    "\\",
    "<div>",
    "</div>",
    "</span>",
    "</code>",
    "</td>",
    "<svg onload=alert(1)>",
    "</svg>",
    "</figure>",
    "<style>",
    "https://evil.example/",
    "www.evil.example",
    "<https://evil.example>",
    "[x]: https://evil.example",
    "[^note]",
    "\u{0}",
    "\u{2028}",
    "\u{85}",
    "é",
    "💥",
    "\u{202e}",
    "ok",
];

fn nasty() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(prop::sample::select(PIECES), 0..10).prop_map(|v| v.concat()),
        any::<String>(),
        "\\PC{0,40}",
    ]
}

fn benign(s: &[String]) -> Vec<String> {
    s.iter().map(|x| "a".repeat(x.chars().count())).collect()
}

fn check(strings: &[String]) {
    let ws = Workspace::new();
    let (cpu, other) = traces(&benign(strings));
    let expected = markup(&render(&ws, &cpu, &other));
    let (cpu, other) = traces(strings);
    let html = render(&ws, &cpu, &other);
    let found = markup(&html);
    assert_eq!(found.tags, expected.tags, "markup differs for {strings:?}:\n{html}");
    assert_eq!(found.active, expected.active, "links differ for {strings:?}:\n{html}");
}

/// The strings of the issue that found the hole, in every field at once.
#[test]
fn known_injections_stay_text() {
    for s in [
        "ok\n\n[click](javascript:alert(1))",
        "x\n\n# Injected heading\n\n<img src=x onerror=alert(1)>",
        "\r\r<script>alert(1)</script>",
        "a\n\n    indented\n\n- list",
        // A value name the section records itself (`x`): CI's proptest once drew one.
        "x",
        "<![CDATA[<b>]]>",
    ] {
        check(&vec![s.to_string(); FIELDS]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn no_trace_string_adds_markup(strings in prop::collection::vec(nasty(), FIELDS)) {
        check(&strings);
    }
}

/// Through mdbook itself (its HTML renderer and the search index its JavaScript reads): the
/// issue's strings stay text, and no heading (whose text the search shows as HTML) holds one.
#[test]
fn the_built_page_and_its_search_index_hold_no_injected_markup() {
    let strings = vec![
        "ok\n\n[click](javascript:alert(1))\n\n# Injected heading <img src=x onerror=alert(1)>"
            .to_string();
        FIELDS
    ];
    let ws = Workspace::new();
    let (cpu, other) = traces(&strings);
    let path = ws.write_trace("cpu", &cpu);
    ws.write_trace("other", &other);
    let html = ws.build_chapter(&path, CHAPTER).expect("builds");
    let start = html.find("<main>").expect("page body");
    let main = &html[start..start + html[start..].find("</main>").expect("page body ends")];
    assert!(!main.contains("href=\"javascript:"), "a live javascript link");
    assert!(
        !main.contains("<img") && !main.contains("Injected heading</h"),
        "injected markup"
    );
    assert!(main.contains("[click](javascript:alert(1))") || main.contains("&#91;click&#93;"));
    let out = ws.dir.path().join("mini-html");
    let index = std::fs::read_dir(&out)
        .expect("output")
        .flatten()
        .find(|e| {
            e.file_name().to_string_lossy().starts_with("searchindex")
                && e.path().extension().is_some_and(|x| x == "js")
        })
        .map(|e| std::fs::read_to_string(e.path()).expect("search index"))
        .expect("the book has a search index");
    assert!(index.contains("Chapter"), "the index holds the chapter");
    // Breadcrumbs (chapter and heading names) are shown as HTML by mdbook's searcher.js.
    let quoted = index.split_once("JSON.parse('").map(|(_, j)| j).expect("index JSON");
    let quoted = quoted.rsplit_once("'));").map(|(j, _)| j).expect("index JSON ends");
    let mut json = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        json.push(if c == '\\' {
            chars.next().expect("escaped char")
        } else {
            c
        });
    }
    let index: serde_json::Value = serde_json::from_str(&json).expect("search index JSON");
    let mut shown_as_html = Vec::new();
    collect_titles(&index, &mut shown_as_html);
    assert!(!shown_as_html.is_empty(), "the index stores breadcrumbs");
    for text in shown_as_html {
        assert!(
            !text.contains("Injected") && !text.contains('<'),
            "a trace string in a heading: {text}"
        );
    }
}

/// Every `breadcrumbs` and `title` string in the search index.
fn collect_titles(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("breadcrumbs" | "title", serde_json::Value::String(s)) => out.push(s.clone()),
                    _ => collect_titles(v, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_titles(v, out)),
        _ => {}
    }
}
