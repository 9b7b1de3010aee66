//! The layers are crates: `cs336-trace` (plain data), `cs336-book` (reads traces alone, and is
//! `mdbook-lecture`) and `cs336-lecture` (the tensor library, devices and the lecture). Cargo
//! already refuses an import against that direction. What it cannot say is that a layer must never
//! *gain* a dependency: this test reads `Cargo.lock` and checks that what the book and the traces
//! pull in, however indirectly, reaches no GPU or tensor code, so `mdbook serve` never builds
//! cudarc or gemm.

use std::collections::{BTreeMap, BTreeSet};

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
