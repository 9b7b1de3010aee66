//! Several `lecture --section …` processes started at once against one trace: every run's
//! section reaches the trace (the merge happens under a lock, re-reading the trace inside it), and
//! with the book on every run builds it (into a fresh folder swapped in under a lock).

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::process::{assert_success, finish, lecture_cmd, run_lecture};

/// Sections that run in well under a second, so that concurrent runs overlap in their merges.
const QUICK: [&str; 3] = ["tensors_memory", "tensor_storage", "tensors_basics"];

const LIMIT: Duration = Duration::from_secs(120);

fn trace_file(dir: &Path) -> std::path::PathBuf {
    let slug = cs336::device::choose(cs336::device::DeviceRequest::Cpu)
        .expect("cpu")
        .device
        .slug()
        .expect("this CPU has a trace name");
    dir.join("lecture_02").join(format!("{slug}.json"))
}

/// Marks `ids` as not yet re-run (a wall time no run records), so a lost update shows.
fn mark_old(path: &Path, ids: &[&str]) {
    let mut t = cs336::trace::load(path).expect("trace loads");
    for s in t.sections.iter_mut().filter(|s| ids.contains(&s.id.as_str())) {
        s.wall_time_s = -1.0;
    }
    cs336::trace::save(path, &t).expect("trace saved");
}

/// The sections among `ids` whose new values did not reach the trace, and how many sections it
/// holds.
fn lost(path: &Path, ids: &[&str]) -> (Vec<String>, usize) {
    let t = cs336::trace::load(path).expect("trace loads after concurrent runs");
    let lost = ids
        .iter()
        .filter(|id| t.section(id).is_none_or(|s| s.wall_time_s < 0.0))
        .map(|id| id.to_string())
        .collect();
    (lost, t.sections.len())
}

/// Starts one `--section` run per id at once and waits for all; each must succeed.
fn race(dir: &str, ids: &[&str], seed: usize, html: Option<&Path>) -> Vec<String> {
    let seed = seed.to_string();
    let children: Vec<_> = ids
        .iter()
        .map(|id| {
            let mut args = vec!["--trace-dir", dir, "--section", id, "--seed", &seed];
            if html.is_none() {
                args.push("--no-book");
            }
            lecture_cmd(&args, html).spawn().expect("spawn lecture")
        })
        .collect();
    children
        .into_iter()
        .zip(ids)
        .map(|(child, id)| assert_success(&finish(child, LIMIT, id)))
        .collect()
}

#[test]
fn two_and_three_concurrent_partial_runs_lose_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    let path = trace_file(dir.path());
    let mut args = vec!["--trace-dir", d, "--no-book"];
    for id in QUICK {
        args.extend(["--section", id]);
    }
    assert_success(&run_lecture(&args, None, LIMIT));
    let mut lost_total = Vec::new();
    let mut rounds = 0;
    for n in [2, 3] {
        for round in 0..8 {
            let ids = &QUICK[..n];
            mark_old(&path, ids);
            race(d, ids, round, None);
            let (lost, held) = lost(&path, ids);
            assert_eq!(held, QUICK.len(), "round {round} of {n}: sections disappeared");
            lost_total.extend(lost.into_iter().map(|id| format!("{n} runs, round {round}: {id}")));
            rounds += 1;
        }
    }
    assert!(lost_total.is_empty(), "lost in {rounds} rounds: {lost_total:#?}");
}

#[test]
fn concurrent_partial_runs_with_the_book_all_build_it_and_lose_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    let html = dir.path().join("html");
    let path = trace_file(dir.path());
    // The book quotes every section: start from a full trace (the binary's one fresh run).
    assert_eq!(common::put_fresh_trace(dir.path()), path);
    for round in 0..3 {
        mark_old(&path, &QUICK);
        let outs = race(d, &QUICK, round, Some(&html));
        for out in outs {
            let book = format!("Book: {}", html.join("index.html").display());
            assert_eq!(out.lines().last(), Some(book.as_str()), "{out}");
        }
        let (lost, _) = lost(&path, &QUICK);
        assert!(lost.is_empty(), "round {round}: lost {lost:?}");
        assert!(html.join("tensors_memory.html").is_file());
        // Nothing is left of the folders the runs built into or swapped out.
        let leftovers: Vec<String> = std::fs::read_dir(dir.path())
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".html-"))
            .collect();
        assert!(leftovers.is_empty(), "round {round}: {leftovers:?}");
    }
}
