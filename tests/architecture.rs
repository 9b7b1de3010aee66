//! The library's layers point one way. Every `src/**/*.rs` file (binaries aside) is lexed with
//! proc-macro2 (so comments, doc comments and strings never count), and every path that leaves
//! its top-level module (`crate::x`, `$crate::x`, `super::…` up to the crate root, grouped
//! `use crate::{a, b}`) becomes an edge between top-level modules. The test then asserts that:
//! - `trace` and `book` import only what they may (the book builds from traces alone, and
//!   `mdbook-lecture` links no tensor, device or CUDA code);
//! - leaf modules import nothing of the crate but `error`;
//! - the graph has no cycle once the known exceptions below are set aside, and each of those
//!   exceptions still exists (remove it from the list when the cycle is gone).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// Edges that close a cycle today and are being removed on other branches.
const KNOWN_EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// What `trace` and `book` may import (besides themselves).
const ALLOWED: &[(&str, &[&str])] = &[
    // `console`, a leaf, for cutting what messages quote.
    ("trace", &["error", "atomic_file", "host", "json", "console"]),
    // `atomic_file`, a leaf, for the lock under which a new book is swapped in.
    ("book", &["trace", "atomic_file", "console"]),
    // `console`, a leaf, to say whom a lock waits for.
    ("atomic_file", &["error", "console"]),
    ("host", &[]),
    ("console", &[]),
    ("json", &[]),
    ("error", &[]),
];

/// Names that `lib.rs` re-exports at the crate root, and the module each comes from (exported
/// macros, also at the crate root, are found in the sources).
const ROOT_REEXPORTS: &[(&str, &str)] = &[
    ("Error", "error"),
    ("Result", "error"),
    ("Tensor", "tensor"),
    ("DType", "tensor"),
    ("einops", "tensor"),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level modules that `lib.rs` declares.
fn top_modules() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    let tokens: Vec<TokenTree> = TokenStream::from_str(&lib).expect("lib.rs lexes").into_iter().collect();
    tokens
        .windows(2)
        .filter(|w| matches!(&w[0], TokenTree::Ident(i) if i == "mod"))
        .filter_map(|w| match &w[1] {
            TokenTree::Ident(i) => Some(i.to_string()),
            _ => None,
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "bin") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `src/book/chart/plot.rs` → [book, chart, plot]; `mod.rs` is its folder.
fn module_path(file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src()).expect("under src");
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// Where a path that starts at the crate root leads: the first segment, or (for a grouped
/// `crate::{a, b}`) the first segment of each item.
fn targets(after_root: &[TokenTree]) -> Vec<String> {
    match after_root.first() {
        Some(TokenTree::Ident(i)) => vec![i.to_string()],
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
            let items: Vec<TokenTree> = g.stream().into_iter().collect();
            items
                .split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
                .filter_map(|item| match item.first() {
                    Some(TokenTree::Ident(i)) => Some(i.to_string()),
                    _ => None,
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

fn is_path_sep(tokens: &[TokenTree], at: usize) -> bool {
    matches!((tokens.get(at), tokens.get(at + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':')
}

/// Collects the crate-root items that the tokens of module `module` name.
fn collect(stream: TokenStream, module: &[String], out: &mut BTreeSet<String>) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Group(g) => {
                // An inline `mod name { … }` is one level deeper for `super`.
                let inline_mod = i >= 2
                    && g.delimiter() == Delimiter::Brace
                    && matches!(&tokens[i - 2], TokenTree::Ident(m) if m == "mod");
                let mut inner = module.to_vec();
                if inline_mod && let TokenTree::Ident(name) = &tokens[i - 1] {
                    inner.push(name.to_string());
                }
                collect(g.stream(), &inner, out);
            }
            TokenTree::Ident(id) if id == "crate" && is_path_sep(&tokens, i + 1) => {
                // `$crate` lexes as `$` then `crate`: the same thing.
                out.extend(targets(&tokens[i + 3..]));
            }
            TokenTree::Ident(id) if id == "super" && !(i >= 2 && is_path_sep(&tokens, i - 2)) => {
                let mut at = i;
                let mut ups = 0;
                while matches!(&tokens.get(at), Some(TokenTree::Ident(s)) if s == "super")
                    && is_path_sep(&tokens, at + 1)
                {
                    ups += 1;
                    at += 3;
                }
                if ups >= module.len() {
                    out.extend(targets(&tokens[at..]));
                }
                // Fewer ups stay inside the file's own top-level module.
            }
            _ => {}
        }
    }
}

/// Macros defined with `macro_rules!` in `stream` (an exported one is named `crate::name`).
fn macros(stream: TokenStream, out: &mut Vec<String>) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    for (i, token) in tokens.iter().enumerate() {
        if let TokenTree::Group(g) = token {
            macros(g.stream(), out);
        }
        if let (TokenTree::Ident(m), Some(TokenTree::Punct(bang)), Some(TokenTree::Ident(name))) =
            (token, tokens.get(i + 1), tokens.get(i + 2))
            && m == "macro_rules"
            && bang.as_char() == '!'
        {
            out.push(name.to_string());
        }
    }
}

fn lex(file: &Path) -> TokenStream {
    let text = std::fs::read_to_string(file).expect("readable source");
    TokenStream::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// Top-level module → the top-level modules it imports.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let modules = top_modules();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    assert!(files.len() > 50, "found only {} files under src/", files.len());
    let mut reexports: BTreeMap<String, String> = ROOT_REEXPORTS
        .iter()
        .map(|(n, m)| (n.to_string(), m.to_string()))
        .collect();
    for file in &files {
        let mut found = Vec::new();
        macros(lex(file), &mut found);
        if let Some(top) = module_path(file).first() {
            reexports.extend(found.into_iter().map(|name| (name, top.clone())));
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for file in files {
        let module = module_path(&file);
        let Some(top) = module.first().cloned() else { continue }; // lib.rs itself
        let mut named = BTreeSet::new();
        collect(lex(&file), &module, &mut named);
        for name in named {
            let target = if modules.contains(&name) {
                name
            } else if let Some(m) = reexports.get(&name) {
                m.clone()
            } else {
                panic!(
                    "{}: `crate::{name}` is neither a module of lib.rs, an exported macro nor in ROOT_REEXPORTS",
                    file.display()
                )
            };
            if target != top {
                graph.entry(top.clone()).or_default().insert(target);
            }
        }
    }
    graph
}

/// A cycle in `graph`, if there is one (depth-first search, three colours).
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, done, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}

#[test]
fn trace_book_and_the_leaves_import_only_what_they_may() {
    let graph = graph();
    for (module, allowed) in ALLOWED {
        let imports = graph.get(*module).unwrap_or_else(|| panic!("no module `{module}`"));
        let forbidden: Vec<&String> = imports.iter().filter(|m| !allowed.contains(&m.as_str())).collect();
        assert!(
            forbidden.is_empty(),
            "`{module}` imports {forbidden:?}; it may import only {allowed:?}"
        );
    }
}

#[test]
fn the_modules_form_no_cycle_but_the_known_exceptions() {
    let mut graph = graph();
    for (from, to, why) in KNOWN_EXCEPTIONS {
        let present = graph.get_mut(*from).is_some_and(|edges| edges.remove(*to));
        assert!(
            present,
            "`{from}` no longer imports `{to}` ({why}): remove the exception from KNOWN_EXCEPTIONS"
        );
    }
    if let Some(cycle) = find_cycle(&graph) {
        panic!("the modules form a cycle: {}", cycle.join(" → "));
    }
}

#[test]
fn the_cycle_check_finds_cycles() {
    let edges = |list: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in list {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    assert_eq!(find_cycle(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
    assert_eq!(
        find_cycle(&edges(&[("a", "b"), ("b", "c"), ("c", "a")])),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    // And the collector sees every kind of path that leaves a module.
    let mut named = BTreeSet::new();
    let code = "use crate::{a::X, b}; fn f() { $crate::c::g(); super::super::d::h(); super::e(); } \
                mod tests { use super::super::f; } // crate::g\n/// crate::h\nconst S: &str = \"crate::i\";";
    collect(
        TokenStream::from_str(code).expect("lexes"),
        &["m".into(), "n".into()],
        &mut named,
    );
    assert_eq!(named, ["a", "b", "c", "d"].into_iter().map(String::from).collect());
}
