//! The layers are crates: `cs336-trace` (plain data), `cs336-book` (reads traces alone, and is
//! `mdbook-lecture`) and `cs336-lecture` (the tensor library, devices and the lecture). Cargo
//! already refuses an import against that direction. What it cannot say is that a layer must never
//! *gain* a dependency: this test reads `Cargo.lock` and checks that what the book and the traces
//! pull in, however indirectly, reaches no GPU or tensor code, so `mdbook serve` never builds
//! cudarc or gemm.
//!
//! The map of those layers, the "where things live" table of the crate's front page and of the
//! Reference chapter, is held to the tree the same way: every path it names must exist.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each package of the lock file and the names of the packages it depends on.
fn lock_graph() -> BTreeMap<String, BTreeSet<String>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock");
    let text = std::fs::read_to_string(path).expect("Cargo.lock");
    let lock: toml::Table = toml::from_str(&text).expect("Cargo.lock is TOML");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for package in lock["package"].as_array().expect("[[package]] entries") {
        let name = package["name"].as_str().expect("name").to_string();
        let deps = package.get("dependencies").and_then(toml::Value::as_array);
        // An entry is `name` or `name version` (when several versions are locked).
        let names = deps.into_iter().flatten().filter_map(|d| d.as_str()?.split(' ').next());
        graph.entry(name).or_default().extend(names.map(String::from));
    }
    graph
}

/// Every package `root` depends on, directly or not (any version of a name counts).
fn reaches(graph: &BTreeMap<String, BTreeSet<String>>, root: &str) -> BTreeSet<String> {
    assert!(graph.contains_key(root), "no package `{root}` in Cargo.lock");
    let mut seen = BTreeSet::new();
    let mut stack = vec![root.to_string()];
    while let Some(name) = stack.pop() {
        for dep in graph.get(&name).into_iter().flatten() {
            if seen.insert(dep.clone()) {
                stack.push(dep.clone());
            }
        }
    }
    seen
}

/// Packages a layer must never pull in, and why.
const FORBIDDEN: &[(&str, &[&str], &str)] = &[
    (
        "cs336-book",
        &["cs336-lecture", "cudarc", "gemm", "rayon", "half"],
        "the book reads traces alone: `mdbook serve` relinks it after every section edit",
    ),
    (
        "cs336-trace",
        &[
            "cs336-lecture",
            "cs336-book",
            "cudarc",
            "gemm",
            "mdbook-driver",
            "plotters",
        ],
        "traces are plain data that every layer reads",
    ),
];

#[test]
fn the_book_and_the_traces_reach_no_gpu_or_tensor_code() {
    let graph = lock_graph();
    for (layer, forbidden, why) in FORBIDDEN {
        let reached = reaches(&graph, layer);
        let wrong: Vec<&&str> = forbidden.iter().filter(|f| reached.contains(**f)).collect();
        assert!(
            wrong.is_empty(),
            "{layer} depends on {wrong:?}, which it must not: {why}"
        );
    }
}

/// The check can fail: the lecture crate does reach what the book must not.
#[test]
fn the_walk_finds_what_the_lecture_depends_on() {
    let reached = reaches(&lock_graph(), "cs336-lecture");
    for expected in ["cs336-book", "cs336-trace", "cudarc", "gemm", "rayon", "gemm-f32"] {
        assert!(reached.contains(expected), "cs336-lecture should reach {expected}");
    }
    let graph: BTreeMap<String, BTreeSet<String>> = [("a", &["b"][..]), ("b", &["c"]), ("c", &[]), ("d", &["a"])]
        .into_iter()
        .map(|(n, d)| (n.to_string(), d.iter().map(|s| s.to_string()).collect()))
        .collect();
    assert_eq!(reaches(&graph, "a"), ["b", "c"].into_iter().map(String::from).collect());
}

/// The map of the code: the crate's front page (`src/lib.rs`) and the Reference chapter's "Layout
/// of the code" both show this one file.
const MAP: &str = include_str!("../book/src/code_map.md");

/// The paths a map names: its code spans that read as a path from the crate root (a `/` or a
/// file's extension, and no space). Other code spans (`cs336::trace`, `lecture --list`) are not.
fn named_paths(map: &str) -> Vec<&str> {
    const EXTENSIONS: &[&str] = &[".rs", ".md", ".toml", ".lock", ".cu", ".py", ".js", ".css"];
    // Between an odd and an even backtick: the map writes no double-backtick spans.
    map.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| !span.contains(char::is_whitespace))
        .filter(|span| span.contains('/') || EXTENSIONS.iter().any(|e| span.ends_with(e)))
        .collect()
}

/// Whether `path` is in `root`: as a file or folder, or, for a pattern (`<id>` or `*` in its last
/// part), as at least one entry of its folder that fits it.
fn exists(root: &Path, path: &str) -> bool {
    let (folder, last) = path.trim_end_matches('/').rsplit_once('/').unwrap_or(("", path));
    let Some(at) = last.find(['<', '*']) else {
        return root.join(path).exists();
    };
    // What follows the placeholder: after `>` for `<id>`, after `*` for a glob.
    let (prefix, rest) = last.split_at(at);
    let suffix = rest.split_once(['>', '*']).map_or("", |(_, s)| s);
    let entries = std::fs::read_dir(root.join(folder)).into_iter().flatten().flatten();
    entries.into_iter().any(|entry| {
        let name = entry.file_name().to_string_lossy().into_owned();
        name.len() > prefix.len() + suffix.len() && name.starts_with(prefix) && name.ends_with(suffix)
    })
}

#[test]
fn every_path_the_map_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let paths = named_paths(MAP);
    assert!(
        paths.len() > 40,
        "only {} paths read from the map: {paths:?}",
        paths.len()
    );
    let missing: Vec<&&str> = paths.iter().filter(|p| !exists(root, p)).collect();
    assert!(
        missing.is_empty(),
        "book/src/code_map.md names paths that do not exist (moved? update the map): {missing:?}"
    );
}

/// A new folder or file at the top of `src/` goes on the map, or the map stops being one.
#[test]
fn the_map_names_everything_at_the_top_of_src() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let paths = named_paths(MAP);
    let mut absent = Vec::new();
    for entry in std::fs::read_dir(root.join("src")).expect("src").flatten() {
        let name = format!("src/{}", entry.file_name().to_string_lossy());
        // Named itself, or as the folder of a path the map names.
        if !paths.iter().any(|p| *p == name || p.starts_with(&format!("{name}/"))) {
            absent.push(name);
        }
    }
    assert!(
        absent.is_empty(),
        "book/src/code_map.md does not say where these are: {absent:?}"
    );
}

/// The checks can fail: a made-up path, and a pattern nothing fits, are found missing.
#[test]
fn the_map_check_finds_a_path_that_is_not_there() {
    let sample = "| Ops | `src/lib.rs`, `src/made_up.rs` | `book/src/<id>.md`, `kernels/*.cu`, `kernels/*.nope`, \
                  `src/nowhere/<id>.rs`; not paths: `cs336::trace`, `lecture --list`, `ID =>` |";
    let paths = named_paths(sample);
    assert_eq!(
        paths,
        [
            "src/lib.rs",
            "src/made_up.rs",
            "book/src/<id>.md",
            "kernels/*.cu",
            "kernels/*.nope",
            "src/nowhere/<id>.rs"
        ]
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found: Vec<bool> = paths.iter().map(|p| exists(root, p)).collect();
    assert_eq!(found, [true, false, true, true, false, false]);
}

/// Every `.rs` file under `src/` that is longer than `limit` lines, with its length.
fn longer_than(dir: &Path, limit: usize, found: &mut Vec<(String, usize)>) {
    for entry in std::fs::read_dir(dir).expect("a readable folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            longer_than(&path, limit, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let lines = std::fs::read_to_string(&path).expect("a readable file").lines().count();
            if lines > limit {
                found.push((path.display().to_string(), lines));
            }
        }
    }
}

/// Small files: a file past 500 lines is split along its seams (a module's tests into a file of
/// their own, a command line's parsing apart from its commands), as the other files are.
#[test]
fn no_source_file_is_over_five_hundred_lines() {
    let mut found = Vec::new();
    longer_than(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), 500, &mut found);
    assert!(found.is_empty(), "split these along their seams: {found:?}");
    // The walk sees the files: the longest is within reach of the limit.
    let mut near = Vec::new();
    longer_than(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), 300, &mut near);
    assert!(
        !near.is_empty(),
        "the walk found no file of more than 300 lines under src/"
    );
}

#[path = "architecture_imports/mod.rs"]
mod imports;
