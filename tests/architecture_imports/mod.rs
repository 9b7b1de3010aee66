//! No file of `src/` imports, through others, a file that imports it back. Read from the source
//! text: `use` lines (braces expanded) and `crate::`/`super::` paths, with test modules and
//! comments left out. An item a `mod.rs` (or an `a.rs` beside its folder `a/`) re-exports counts as an import of the child that defines
//! it; a file naming its own parent module's items does not count (every child would otherwise
//! close a loop with the parent that declares it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// Each crate: its folder under the repository and what of it belongs to another crate.
const CRATES: &[(&str, &str, &[&str])] = &[
    ("cs336", "src", &["book", "trace", "bin"]),
    ("cs336-book", "src/book", &[]),
    ("cs336-trace", "src/trace", &[]),
];

/// The loops today, each a set of files (by module path, `/`-joined) to untie (issue 59). The test
/// fails on any other loop, and on a listed one that is gone, so that the list only shrinks.
const KNOWN: &[&[&str]] = &[&[
    "checks",
    "claims",
    "code_view",
    "devices",
    "provenance",
    "render",
    "tables",
    "times",
    "traces",
    "unrecorded",
    "what_if",
]];

/// Every `.rs` file of the crate at `base`, by module path (`a/mod.rs` is `a`).
fn files(base: &Path, skip: &[&str]) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![(base.to_path_buf(), Vec::<String>::new())];
    while let Some((dir, at)) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a readable folder").flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !(at.is_empty() && skip.contains(&name.as_str())) {
                    stack.push((path, [at.clone(), vec![name]].concat()));
                }
            } else if let Some(stem) = name.strip_suffix(".rs") {
                let is_root = matches!(stem, "mod" | "lib");
                let module = if is_root {
                    at.clone()
                } else {
                    [at.clone(), vec![stem.to_string()]].concat()
                };
                if !(at.is_empty() && is_root && out.contains_key(&module)) {
                    out.insert(module, path);
                }
            }
        }
    }
    out
}

/// The text without its test module and comments.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `a::{b, c::{d}}` as `a::b` and `a::c::d`.
fn expand(path: &str) -> Vec<String> {
    let Some(open) = path.find('{') else {
        return vec![path.to_string()];
    };
    let (head, inner) = (&path[..open], &path[open + 1..path.len().saturating_sub(1)]);
    let (mut parts, mut depth, mut from) = (Vec::new(), 0, 0);
    for (i, ch) in inner.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[from..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| expand(&format!("{head}{p}")))
        .collect()
}

/// Every path the code names: each `use`, expanded, and each `crate::…`/`super::…` elsewhere.
fn named_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("use ") {
        let before = code[..i].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[i + 4..];
        let Some(end) = rest.find(';') else { continue };
        let path: String = rest[..end].chars().filter(|c| !c.is_whitespace()).collect();
        out.extend(
            expand(&path)
                .into_iter()
                .map(|p| p.split(" as ").next().unwrap_or("").to_string()),
        );
    }
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    for start in ["crate::", "super::"] {
        for (i, _) in code.match_indices(start) {
            if code[..i]
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
            {
                continue;
            }
            let end = code[i..].find(|c: char| !word(c)).map_or(code.len(), |e| i + e);
            out.push(code[i..end].trim_end_matches(':').to_string());
        }
    }
    out
}

/// The file-level import graph of one crate.
fn graph(files: &BTreeMap<Module, PathBuf>) -> BTreeMap<Module, BTreeSet<Module>> {
    let is_root = |p: &Path| p.file_name().is_some_and(|n| n == "mod.rs" || n == "lib.rs");
    let texts: BTreeMap<&Module, String> = files
        .iter()
        .map(|(m, p)| (m, code(&std::fs::read_to_string(p).expect("readable"))))
        .collect();
    // What each mod.rs re-exports from a child: item name → that child.
    let mut reexports: BTreeMap<&Module, BTreeMap<String, Module>> = BTreeMap::new();
    // A module with children of its own re-exports them whether its file is `a/mod.rs` or `a.rs`
    // beside a folder `a/`.
    let has_children = |m: &Module| files.keys().any(|k| k.len() > m.len() && k.starts_with(m));
    for (module, path) in files {
        if !is_root(path) && !has_children(module) {
            continue;
        }
        let text = &texts[module];
        let mut found = BTreeMap::new();
        for (i, _) in text.match_indices("pub") {
            let rest = text[i + 3..].trim_start();
            let rest = if rest.starts_with('(') {
                rest[rest.find(')').unwrap_or(0) + 1..].trim_start()
            } else {
                rest
            };
            let Some(rest) = rest.strip_prefix("use ") else {
                continue;
            };
            let Some(end) = rest.find(';') else { continue };
            let path: String = rest[..end].chars().filter(|c| !c.is_whitespace()).collect();
            for p in expand(&path) {
                let segs: Vec<&str> = p.split("::").filter(|s| *s != "self").collect();
                let child = [module.clone(), vec![segs[0].to_string()]].concat();
                if segs.len() >= 2 && files.contains_key(&child) {
                    let item = segs[segs.len() - 1].split(" as ").last().unwrap_or("").to_string();
                    found.insert(item, child);
                }
            }
        }
        reexports.insert(module, found);
    }
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, path) in files {
        let parent: Module = if is_root(path) {
            module.clone()
        } else {
            module[..module.len() - 1].to_vec()
        };
        for named in named_paths(&texts[module]) {
            let segs: Vec<&str> = named.split("::").collect();
            let (mut at, rest): (Module, Vec<&str>) = match segs[0] {
                "crate" => (Vec::new(), segs[1..].to_vec()),
                "super" => {
                    let ups = segs.iter().take_while(|s| **s == "super").count();
                    (
                        parent[..parent.len().saturating_sub(ups - 1)].to_vec(),
                        segs[ups..].to_vec(),
                    )
                }
                "self" => (module.clone(), segs[1..].to_vec()),
                first if files.contains_key(&[module.clone(), vec![first.to_string()]].concat()) => {
                    (module.clone(), segs)
                }
                _ => continue,
            };
            let mut rest = rest.into_iter();
            let mut next = rest.next();
            while let Some(s) = next {
                let child = [at.clone(), vec![s.to_string()]].concat();
                if !files.contains_key(&child) {
                    break;
                }
                at = child;
                next = rest.next();
            }
            if let Some(item) = next
                && let Some(child) = reexports.get(&at).and_then(|r| r.get(item))
            {
                at = child.clone();
            }
            // Itself, or a module above it (its parent's items): not an import that can close a loop.
            if at.len() <= module.len() && module[..at.len()] == at[..] {
                continue;
            }
            graph.entry(module.clone()).or_default().insert(at);
        }
    }
    graph
}

/// The loops of `graph`: its strongly connected parts of more than one file.
fn loops(graph: &BTreeMap<Module, BTreeSet<Module>>) -> BTreeSet<BTreeSet<String>> {
    // Two files are in one loop when each reaches the other.
    let reach = |from: &Module| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(m) = stack.pop() {
            for next in graph.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&Module, BTreeSet<Module>> = graph.keys().map(|m| (m, reach(m))).collect();
    let mut out = BTreeSet::new();
    for (m, seen) in &reached {
        let part: BTreeSet<String> = seen
            .iter()
            .filter(|o| reached.get(o).is_some_and(|back| back.contains(*m)))
            .map(|o| o.join("/"))
            .collect();
        if part.len() > 1 {
            out.insert(part);
        }
    }
    out
}

#[test]
fn no_file_imports_itself_through_others_beyond_the_known_loops() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = BTreeSet::new();
    for (_, base, skip) in CRATES {
        found.extend(loops(&graph(&files(&root.join(base), skip))));
    }
    let known: BTreeSet<BTreeSet<String>> = KNOWN
        .iter()
        .map(|l| l.iter().map(|s| s.to_string()).collect())
        .collect();
    let new: Vec<_> = found.difference(&known).collect();
    let gone: Vec<_> = known.difference(&found).collect();
    assert!(
        new.is_empty(),
        "files that import each other in a loop (untie it, as issue 59 asks): {new:?}"
    );
    assert!(
        gone.is_empty(),
        "these known loops are gone or changed: take them off KNOWN: {gone:?}"
    );
}

/// The reader finds a loop it is shown, through a re-export, and none where the only way back is
/// a child naming its parent.
#[test]
fn the_reader_finds_a_loop_through_a_re_export() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write("lib.rs", "mod a;\nmod b;\n");
    write("a/mod.rs", "mod inner;\npub use inner::Thing;\n");
    write(
        "a/inner.rs",
        "use crate::b::Other;\nuse super::Thing;\npub struct Thing;\n",
    );
    write(
        "b.rs",
        "use crate::a::Thing;\npub struct Other;\n// use crate::nothing;\n",
    );
    let found = loops(&graph(&files(dir.path(), &[])));
    let expected: BTreeSet<String> = ["a/inner", "b"].iter().map(|s| s.to_string()).collect();
    assert_eq!(found, BTreeSet::from([expected]));
}
