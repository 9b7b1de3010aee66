//! A page's prose names things as a reader says them: a device as "the Intel Xeon with AMX", never
//! by its trace's slug (`cpu-intel-r-xeon-r-processor-amx`); a value by what it is, never by its
//! trace key (`motivating_questions.this_device_bytes`); a chapter by its title, never by a file
//! path (`src/lecture/training.rs`). Slugs, keys and paths belong in code, tables and hover text.
//! This test builds the book from a fresh trace with every committed trace beside it (so the GPU
//! passages and the Devices chapter render too) and reads each page's text outside code, tables,
//! charts, code views and the provenance box, failing on any of the three.

use std::path::Path;

use crate::common::{ROOT, Workspace, committed_traces, fresh_trace};

/// Elements whose text is not prose: code, tables, charts, scripts, the code view with its
/// PyTorch panel (a program's own words), the provenance box (the record of which trace file and
/// commit a page quotes), and the recorded error messages (quoted, in blockquotes or as text values)
/// that name the files they were about. Inline code counts as prose: a slug there is still in a sentence.
const NOT_PROSE_TAGS: &[&str] = &["pre", "table", "svg", "script", "style", "head", "nav", "blockquote"];
const NOT_PROSE_CLASSES: &[&str] = &[
    // The keys an older run never recorded, listed per trace file: a table in the form of a list.
    "lecture-unrecorded-list",
    "lecture-code",
    "lecture-provenance",
    "lecture-pytorch",
    // A source's web address on the References page, printed as it is linked: an address whose
    // query names a file (`?show_file_info=….json`) is not prose naming a file of ours.
    "lecture-url",
    "sidebar",
    "lecture-text",
];

/// The text of `html` outside the elements above, one string.
fn prose(html: &str) -> String {
    prose_outside(html, NOT_PROSE_CLASSES)
}

/// The text of `html` outside the tags above and the elements of these classes.
fn prose_outside(html: &str, not_prose: &[&str]) -> String {
    let mut out = String::new();
    // Depth of the elements we are inside, and how many of them are not prose.
    let mut stack: Vec<(String, bool)> = Vec::new();
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        if !stack.iter().any(|(_, skip)| *skip) {
            out.push_str(&rest[..lt]);
        }
        let Some(gt) = rest[lt..].find('>') else { break };
        let tag = &rest[lt + 1..lt + gt];
        rest = &rest[lt + gt + 1..];
        if tag.starts_with('!') || tag.ends_with('/') {
            continue;
        }
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_lowercase();
        if matches!(
            name.as_str(),
            "br" | "img" | "hr" | "input" | "meta" | "link" | "wbr" | "source"
        ) {
            continue;
        }
        if tag.starts_with('/') {
            if let Some(at) = stack.iter().rposition(|(n, _)| *n == name) {
                stack.truncate(at);
            }
            out.push(' ');
            continue;
        }
        let class = tag
            .split("class=\"")
            .nth(1)
            .and_then(|c| c.split('"').next())
            .unwrap_or_default();
        let skip = NOT_PROSE_TAGS.contains(&name.as_str()) || class.split_whitespace().any(|c| not_prose.contains(&c));
        stack.push((name, skip));
    }
    out
}

/// Words of `text` that are a program's, not a sentence's: `true`, `false`, "not applicable", and
/// a number with a fraction or an exponent written with more than four significant figures (a
/// count such as 65,536 is exact and stays whole).
fn machinery(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    if text.contains("not applicable") {
        found.push("not applicable".to_string());
    }
    for word in text.split_whitespace() {
        // A web address or a version path is not a number of the run.
        if word.contains('/') {
            continue;
        }
        let word = word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '.');
        let word = word.trim_end_matches('.');
        if matches!(word, "true" | "false") {
            found.push(word.to_string());
            continue;
        }
        let number = word.trim_start_matches(['-', '−']);
        let mantissa = number.split(['e', 'E']).next().unwrap_or_default();
        let is_number = !mantissa.is_empty()
            && mantissa.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',')
            && mantissa.starts_with(|c: char| c.is_ascii_digit());
        if !is_number || !(mantissa.contains('.') || number.contains(['e', 'E'])) {
            continue;
        }
        let significant = mantissa
            .chars()
            .filter(char::is_ascii_digit)
            .skip_while(|&c| c == '0')
            .count();
        if significant > 4 {
            found.push(word.to_string());
        }
    }
    found
}

/// Words that look like a slug but are the name a reader knows a tool by.
const TOOLS: &[&str] = &["nvidia-smi"];

/// Words of `text` that are a device slug, a trace key or a file path.
fn offending(text: &str, sections: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for word in text.split_whitespace() {
        let word = word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_' && c != '/');
        let slug = (word.starts_with("cpu-") || word.starts_with("nvidia-")) && word.len() > "cpu-".len();
        let key = word
            .split_once('.')
            .is_some_and(|(section, name)| sections.contains(&section) && !name.is_empty());
        let path = word.starts_with("src/")
            || word.starts_with("tests/")
            || word.starts_with("trace/")
            || [".rs", ".json", ".py"].iter().any(|ext| word.ends_with(ext));
        if (slug || key || path) && !TOOLS.contains(&word) {
            found.push(word.to_string());
        }
    }
    found
}

#[test]
fn no_page_names_a_slug_a_trace_key_or_a_file_path_in_its_prose() {
    let ws = Workspace::new();
    for (path, trace) in committed_traces() {
        if path
            .parent()
            .and_then(|p| p.file_name())
            .is_some_and(|n| n == "lecture_02")
        {
            let slug = path.file_stem().and_then(|s| s.to_str()).expect("a trace's name");
            ws.write_trace(slug, &trace);
        }
    }
    // The Devices chapter's benchmark tables, which name their CPU, sit beside the traces.
    let bench = Path::new(ROOT).join("trace/bench");
    let into = ws.dir.path().join("trace/bench");
    std::fs::create_dir_all(&into).expect("bench folder");
    for entry in std::fs::read_dir(&bench).into_iter().flatten().flatten() {
        std::fs::copy(entry.path(), into.join(entry.file_name())).expect("a bench table copied");
    }
    // Written last: a committed trace of this machine is replaced by the fresh run, which the
    // build holds to today's code.
    let fresh = fresh_trace();
    let default = ws.write_trace(&fresh.provenance.device.slug, fresh);
    ws.build_real_book(&default).expect("the book builds");
    let sections: Vec<&str> = fresh.sections.iter().map(|s| s.id.as_str()).collect();
    let chapters = std::fs::read_dir(Path::new(ROOT).join("book/src")).expect("book/src");
    let mut problems = Vec::new();
    let mut machine_words = Vec::new();
    let mut pages = 0;
    for entry in chapters.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(stem) = name.strip_suffix(".md") else { continue };
        // The Reference and how the book is made are for whoever edits the repository: their
        // prose names commands, files and keys on purpose. The map of the code is part of the
        // Reference (included there, and no page of its own).
        if matches!(stem, "SUMMARY" | "reference" | "how_this_book_is_made" | "code_map") {
            continue;
        }
        let html = std::fs::read_to_string(ws.out_dir().join(format!("{stem}.html"))).expect("a built page");
        let main = html
            .split("<main>")
            .nth(1)
            .and_then(|m| m.split("</main>").next())
            .unwrap_or_default();
        pages += 1;
        for word in offending(&prose(main), &sections) {
            problems.push(format!("{stem}.html: `{word}`"));
        }
        // A recorded text is a sentence of the page here: "not applicable" may not hide in one.
        let with_texts: Vec<&str> = NOT_PROSE_CLASSES
            .iter()
            .copied()
            .filter(|c| *c != "lecture-text")
            .collect();
        for word in machinery(&prose_outside(main, &with_texts)) {
            machine_words.push(format!("{stem}.html: `{word}`"));
        }
    }
    assert!(pages > 20, "only {pages} pages read");
    assert!(
        problems.is_empty(),
        "prose should name devices, values and chapters as a reader says them (slugs, trace keys and paths \
         belong in code, tables and hover text):\n{}",
        problems.join("\n")
    );
    assert!(
        machine_words.is_empty(),
        "prose should read as a sentence: a yes-or-no value in words (`{{{{if …}}}}`), no \"not applicable\", and at most \
         four significant figures in a number that is not a count:\n{}",
        machine_words.join("\n")
    );
}

#[test]
fn machinery_is_found_and_sentences_pass() {
    let text = "same storage: true . pinned: not applicable: none. h1.grad: [[-0.04540199413895607, 0.25]] \
                and 1.0011717677116394e-8, but 65,536 values, 4.531 bits, 12.5% and https://arxiv.org/abs/1910.02054";
    assert_eq!(
        machinery(text),
        [
            "not applicable",
            "true",
            "-0.04540199413895607",
            "1.0011717677116394e-8"
        ]
    );
    assert!(machinery("It held on this run, at 0.01562 and 2.000e-8, from 1,048,576 elements.").is_empty());
}

#[test]
fn the_reader_finds_what_is_not_prose_and_what_offends() {
    let html = "<p>On the <pre>cpu-amd-epyc</pre> trace <span class=\"lecture-code\">src/x.rs</span> ran.</p>\
                <table><tr><td>nvidia-h200</td></tr></table><p>See data_loading.starts and cpu-amd-epyc.</p>";
    let text = prose(html);
    assert!(!text.contains("src/x.rs") && !text.contains("nvidia-h200") && !text.contains("cpu-amd-epyc "));
    assert_eq!(
        offending(&text, &["data_loading"]),
        ["data_loading.starts", "cpu-amd-epyc"]
    );
    assert!(
        offending(
            "the Intel Xeon with AMX, 2.42 GB (2.25 GiB) and e.g. this",
            &["data_loading"]
        )
        .is_empty()
    );
}
