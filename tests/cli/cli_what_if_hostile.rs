//! Hostile what-ifs (issue 37): each writes only a trace its own reader takes back, or is refused
//! with a message naming what is wrong, and leaves no file behind; names say the section, do not
//! depend on the order of the flags, never collide and stay short; a diverged training gives a
//! book that says so; nothing is written through a link out of the what-if's folder; `what-if
//! --list` keeps a hostile folder name on its line. A property test runs random what-ifs within
//! the declared ranges, each at a small size, and holds every one to run and read back.

use std::path::{Path, PathBuf};
use std::time::Duration;

use proptest::prelude::*;

use crate::cli_what_if::{folder_with_own_trace, snapshot};
use crate::common::process::{assert_clean_failure, assert_success, run_lecture, text};
use cs336::lecture::givens::{MAX_COUNT, MIN_FRACTION};
use cs336::lecture::what_if;

const LIMIT: Duration = Duration::from_secs(300);

/// `lecture --trace-dir DIR --device cpu [--no-book] --set …` for each of `sets`.
fn what_if_run(dir: &Path, sets: &[&str], book: bool) -> std::process::Output {
    let d = dir.to_str().expect("utf-8");
    let mut args = vec!["--trace-dir", d, "--device", "cpu"];
    if !book {
        args.push("--no-book");
    }
    for s in sets {
        args.extend(["--set", s]);
    }
    run_lecture(&args, None, LIMIT)
}

/// Where the what-if `sets` writes its trace under `dir`.
fn trace_path(dir: &Path, sets: &[&str]) -> PathBuf {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let changes = what_if::parse(&sets).expect("valid");
    let slug = cs336::device::cpu::trace_name().expect("a CPU trace name");
    what_if::trace_path(&dir.join("lecture_02"), &slug, &changes)
}

/// Every JSON file under `dir` loads by the rules its folder holds it to.
fn every_trace_loads(dir: &Path) {
    for (path, _) in snapshot(dir) {
        if path.extension().is_some_and(|x| x == "json")
            && let Err(e) = cs336::trace::load_named(&path)
        {
            panic!("{} is left, and its reader refuses it: {e}", path.display());
        }
    }
}

#[test]
fn counts_stay_whole_and_products_in_range_or_nothing_is_written() {
    let (dir, _) = folder_with_own_trace();
    let before = snapshot(dir.path());
    let cases: [(&str, &[&str]); 7] = [
        (
            "motivating_questions.model_parameters=0.1",
            &["`0.1` is not a whole number from 1 to 2⁵³"],
        ),
        (
            "motivating_questions.model_parameters=1.5",
            &["`1.5` is not a whole number from 1 to 2⁵³"],
        ),
        (
            "motivating_questions.num_tokens=0.5",
            &["`0.5` is not a whole number from 1 to 2⁵³"],
        ),
        (
            "motivating_questions.model_parameters=1e300",
            &["`1e300` is too large", "takes a whole number from 1 to 2⁵³"],
        ),
        // Values whose products the section cannot record (0.5 parameters, 0.87 FLOP a day) are
        // outside the given's range, and refused before anything runs.
        (
            "motivating_questions.h100_bytes=1",
            &["`1` is not a whole number of bytes from 16", "a multiple of 16"],
        ),
        (
            "motivating_questions.mfu=1e-20",
            &["`1e-20` is not a fraction from 0.001 to 1"],
        ),
        (
            "optimizer.d=1000",
            &["would record about", "256 MiB", "nothing was run"],
        ),
    ];
    for (set, expect) in cases {
        assert_clean_failure(&what_if_run(dir.path(), &[set], false), expect);
        assert_eq!(snapshot(dir.path()), before, "{set} left no file");
        if what_if::parse(&[set.to_string()]).is_ok() {
            let folder = trace_path(dir.path(), &[set]).parent().map(Path::to_path_buf);
            assert!(!folder.expect("folder").exists(), "{set} left no folder");
        }
    }
    every_trace_loads(dir.path());
}

#[test]
fn names_say_the_section_ignore_the_order_of_flags_and_never_collide() {
    let (dir, _) = folder_with_own_trace();
    for set in ["custom_model.d=8", "optimizer.d=8"] {
        assert_success(&what_if_run(dir.path(), &[set], false));
    }
    let (a, b) = (
        trace_path(dir.path(), &["custom_model.d=8"]),
        trace_path(dir.path(), &["optimizer.d=8"]),
    );
    assert_ne!(a, b);
    let section_of = |p: &Path| {
        cs336::trace::load_named(p).expect("loads").changed_givens()[0]
            .0
            .id
            .clone()
    };
    assert_eq!(section_of(&a), "custom_model", "the first survives the second");
    assert_eq!(section_of(&b), "optimizer");
    assert!(a.to_string_lossy().contains("custom_model.d8"), "{}", a.display());

    // The same what-if in either order of the flags: one folder.
    let (x, y) = ("motivating_questions.mfu=0.25", "motivating_questions.num_gpus=64");
    assert_eq!(trace_path(dir.path(), &[x, y]), trace_path(dir.path(), &[y, x]));
    for order in [[x, y], [y, x]] {
        assert_success(&what_if_run(dir.path(), &order, false));
    }
    let folders = std::fs::read_dir(dir.path().join("lecture_02/what-if"))
        .expect("what-ifs")
        .count();
    assert_eq!(
        folders, 3,
        "two what-ifs of one given each, and one of two in either order"
    );

    // A tiny learning rate works, under a short name.
    let out = assert_success(&what_if_run(dir.path(), &["optimizer.lr=1e-300"], false));
    let path = trace_path(dir.path(), &["optimizer.lr=1e-300"]);
    assert!(out.contains(&path.display().to_string()), "{out}");
    let name = path.parent().and_then(|p| p.file_name()).expect("folder").len();
    assert!(name <= what_if::MAX_FOLDER_NAME, "{name} bytes");

    // The lecture's own value is refused before anything runs.
    let before = snapshot(dir.path());
    assert_clean_failure(
        &what_if_run(dir.path(), &["motivating_questions.mfu=0.5"], false),
        &[
            "`--set motivating_questions.mfu=0.5` is the lecture's own value",
            "nothing was run",
        ],
    );
    assert_eq!(snapshot(dir.path()), before);
    every_trace_loads(dir.path());
}

#[test]
fn every_given_at_once_gets_a_bounded_name_and_each_value_its_own() {
    let device = cs336::device::Device::Cpu;
    // Each given at a value of its range other than its default, long when typed.
    let sets = |bump: f64| -> Vec<String> {
        cs336::lecture::givens::all()
            .into_iter()
            .map(|(s, g)| {
                let default = (g.default)(&device).as_f64().expect("a number");
                // Sixteen apart: a given of bytes is a multiple of 16.
                let value = if g.range_words().contains("fraction") {
                    default * bump / 3.0
                } else {
                    // Far from the default where the range allows; a given of a few allowed
                    // values (bytes per number, a power of two or of four) takes a doubling, a
                    // halving or a quadrupling.
                    let candidates = [
                        (default * 3.0 + 16.0 * bump).round(),
                        default * 2f64.powf(bump),
                        default / 2f64.powf(bump),
                        default * 4f64.powf(bump),
                    ];
                    let valid = |v: &f64| what_if::parse(&[format!("{}.{}={v}", s.id, g.name)]).is_ok();
                    candidates.into_iter().find(valid).unwrap_or(candidates[0])
                };
                format!("{}.{}={value}", s.id, g.name)
            })
            .collect()
    };
    let slug = "cpu-".repeat(20);
    let one = what_if::parse(&sets(1.0)).expect("valid");
    let other = what_if::parse(&sets(2.0)).expect("valid");
    assert!(one.len() >= 23, "{} givens", one.len());
    let (a, b) = (what_if::folder_name(&slug, &one), what_if::folder_name(&slug, &other));
    assert!(a.len() <= what_if::MAX_FOLDER_NAME && b.len() <= what_if::MAX_FOLDER_NAME);
    assert_ne!(a, b, "cut to one prefix, told apart by the hash");
    let mut reversed = one.clone();
    reversed.reverse();
    assert_eq!(what_if::folder_name(&slug, &reversed), a);
}

#[test]
fn a_diverged_training_gives_a_book_that_says_so() {
    let ws = crate::common::Workspace::new();
    let dir = ws.dir.path().join("trace");
    let d = dir.to_str().expect("utf-8");
    // The sections the chapter quotes, as this device's own run.
    let mut own = vec!["--trace-dir", d, "--no-book", "--device", "cpu"];
    for id in ["tensors_memory", "tensors_on_gpus", "mixed_precision_training"] {
        own.extend(["--section", id]);
    }
    assert_success(&run_lecture(&own, None, LIMIT));
    let set = "mixed_precision_training.lr=1000";
    assert_success(&what_if_run(&dir, &[set], false));
    let what_if = trace_path(&dir, &[set]);
    // The chapter as the book has it, less its citations (the one-chapter book has no
    // bibliography).
    let chapter = std::fs::read_to_string(Path::new(crate::common::ROOT).join("book/src/mixed_precision_training.md"))
        .expect("the chapter");
    let chapter: String = chapter
        .split("{{cite ")
        .enumerate()
        .map(|(i, part)| {
            if i == 0 {
                part
            } else {
                part.split_once("}}").map_or(part, |(_, rest)| rest)
            }
        })
        .collect();
    let html = ws
        .build_chapter_named(&what_if, "mixed_precision_training", &chapter)
        .unwrap_or_else(|problems| panic!("the chapter builds: {problems:#?}"));
    assert!(html.contains("training diverged"), "the chapter says so");
    assert!(html.contains("cannot be compared on how far each run got"), "twice");
    // A rate whose fivefold would overflow is refused before anything runs.
    assert_clean_failure(
        &what_if_run(&dir, &["mixed_precision_training.lr=1e308"], true),
        &["`1e308` is too large", "takes a number > 0, at most 2⁵³"],
    );
    every_trace_loads(&dir);
}

#[cfg(unix)]
#[test]
fn a_what_if_follows_no_link_out_of_its_folder() {
    use std::os::unix::fs::symlink;
    let (dir, own) = folder_with_own_trace();
    let own_bytes = std::fs::read(&own).expect("own");
    let outside = tempfile::tempdir().expect("tempdir");
    let notes = outside.path().join("notes.txt");
    std::fs::write(&notes, "mine").expect("notes");
    let set = "motivating_questions.num_gpus=64";
    let path = trace_path(dir.path(), &[set]);
    std::fs::create_dir_all(path.parent().expect("folder")).expect("folder");

    // The trace a link to a file outside, to nothing, and to the device's own trace.
    let gone = outside.path().join("gone.json");
    for (target, expect) in [
        (&notes, "outside the trace folder"),
        (&gone, "does not exist"),
        (&own, "outside the folder of what-ifs"),
    ] {
        symlink(target, &path).expect("link");
        assert_clean_failure(&what_if_run(dir.path(), &[set], false), &[expect]);
        std::fs::remove_file(&path).expect("unlink");
    }
    assert_eq!(std::fs::read(&notes).expect("notes"), b"mine");
    assert!(!gone.exists(), "a dangling link made nothing");
    assert_eq!(std::fs::read(&own).expect("own"), own_bytes);

    // The what-if's folder, or its book's, a link to a folder outside.
    let folder = path.parent().expect("folder");
    std::fs::remove_dir(folder).expect("empty");
    symlink(outside.path(), folder).expect("link");
    assert_clean_failure(
        &what_if_run(dir.path(), &[set], false),
        &["outside the folder of what-ifs"],
    );
    std::fs::remove_file(folder).expect("unlink");
    std::fs::create_dir(folder).expect("folder");
    symlink(outside.path(), folder.join("book")).expect("link");
    assert_clean_failure(
        &what_if_run(dir.path(), &[set], true),
        &["outside the folder of what-ifs"],
    );
    let left: Vec<_> = std::fs::read_dir(outside.path())
        .expect("outside")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("notes.txt")], "nothing written outside");
}

#[test]
fn what_if_list_keeps_a_hostile_name_on_its_line() {
    let (dir, _) = folder_with_own_trace();
    let d = dir.path().to_str().expect("utf-8");
    assert_success(&what_if_run(dir.path(), &["motivating_questions.num_gpus=64"], false));
    let written = trace_path(dir.path(), &["motivating_questions.num_gpus=64"]);
    let hostile = dir.path().join("lecture_02/what-if/x\u{1b}[2J\nfake: line");
    std::fs::create_dir_all(&hostile).expect("folder");
    std::fs::copy(&written, hostile.join("t\u{7}.json")).expect("copy");
    let o = run_lecture(&["--trace-dir", d, "what-if", "--list"], None, LIMIT);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert!(out.contains("x\\u{1b}[2J\\u{a}fake: line/t\\u{7}.json"), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("fake")), "{out}");
}

/// A whole number from `low` to `high`, spread over its orders of magnitude (both ends drawn too).
fn whole_in(low: u64, high: u64) -> impl Strategy<Value = u64> {
    let (a, b) = ((low as f64).log2(), (high as f64).log2());
    prop_oneof![
        Just(low),
        Just(high),
        (a..=b).prop_map(move |e| (2f64.powf(e).round() as u64).clamp(low, high)),
    ]
}

/// A number in (0, 2⁵³], spread over its orders of magnitude, the smallest float included.
fn positive() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::from_bits(1)),
        Just(MAX_COUNT),
        (-323.5f64..=MAX_COUNT.log10()).prop_map(|e| 10f64.powf(e).clamp(f64::from_bits(1), MAX_COUNT)),
    ]
}

/// One random what-if: a given and a value within its declared range (a size at a small value),
/// never the lecture's own value (a what-if changes a given from it).
pub(crate) fn small_given() -> impl Strategy<Value = String> {
    let whole = |key: &'static str, low: u64, high: u64| whole_in(low, high).prop_map(move |v| format!("{key}={v}"));
    let rate = |key: &'static str| positive().prop_map(move |x| format!("{key}={x:e}"));
    let top = MAX_COUNT as u64;
    prop_oneof![
        whole("motivating_questions.model_parameters", 1, top),
        whole("motivating_questions.num_tokens", 1, top),
        prop_oneof![Just(MIN_FRACTION), Just(1.0), MIN_FRACTION..=1.0]
            .prop_map(|x| format!("motivating_questions.mfu={x:e}")),
        whole("motivating_questions.num_gpus", 1, top),
        whole("motivating_questions.memory_num_gpus", 1, top),
        whole_in(1, top / 16).prop_map(|v| format!("motivating_questions.h100_bytes={}", 16 * v)),
        prop_oneof![Just(1), Just(4), Just(8)].prop_map(|b| format!("motivating_questions.param_grad_bytes={b}")),
        whole("custom_model.d", 1, 16),
        whole("custom_model.num_layers", 1, 4),
        whole("custom_model.batch_size", 1, 8),
        whole("optimizer.d", 1, 16),
        whole("optimizer.num_layers", 1, 3),
        rate("optimizer.lr"),
        whole("activation_memory.batch_size", 1, 8),
        whole("activation_memory.d", 1, 16),
        whole("activation_memory.num_layers", 1, 4),
        whole("activation_memory.segment_layers", 1, 5),
        rate("mixed_precision_training.lr"),
    ]
    .prop_filter("not the lecture's own value", |set| {
        what_if::parse(std::slice::from_ref(set))
            .is_ok_and(|changes| what_if::check_not_default(&changes, &cs336::device::Device::Cpu).is_ok())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// A what-if within the declared ranges runs, and its trace reads back: the range of a given
    /// is what its section can compute with, so nothing in it is refused.
    #[test]
    fn random_what_ifs_within_their_ranges_run_and_read_back(sets in proptest::collection::vec(small_given(), 1..4)) {
        let (dir, _) = folder_with_own_trace();
        let mut keys: Vec<&str> = sets.iter().filter_map(|s| s.split_once('=')).map(|(k, _)| k).collect();
        keys.sort();
        keys.dedup();
        prop_assume!(keys.len() == sets.len(), "each given once");
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let o = what_if_run(dir.path(), &sets, false);
        let (out, err) = text(&o);
        prop_assert!(o.status.success(), "{:?} was refused: {}{}", sets, out, err);
        let path = trace_path(dir.path(), &sets);
        let t = cs336::trace::load_named(&path).map_err(|e| TestCaseError::fail(format!("{sets:?}: {e}")))?;
        prop_assert_eq!(t.changed_givens().len(), sets.len(), "{:?}", sets);
        every_trace_loads(dir.path());
    }
}

/// `what-if --list` names a what-if folder it cannot read, instead of saying there is no what-if
/// yet; `book --what-if` refuses a what-if trace of another lecture before it builds anything.
#[test]
fn an_unreadable_what_if_folder_and_another_lectures_what_if_are_named() {
    let (dir, _) = folder_with_own_trace();
    let d = dir.path().to_str().expect("utf-8");
    // Readable by root whatever its mode: a file where the folder should be cannot be read as one.
    let what_ifs = dir.path().join("lecture_02").join(what_if::WHAT_IF_DIR);
    std::fs::write(&what_ifs, "not a folder").expect("write");
    let o = run_lecture(&["--trace-dir", d, "what-if", "--list"], None, LIMIT);
    assert_clean_failure(&o, &[what_if::WHAT_IF_DIR, "Not a directory"]);
    assert!(!text(&o).0.contains("No what-if yet"), "{:?}", text(&o));
    std::fs::remove_file(&what_ifs).expect("rm");
    let o = run_lecture(&["--trace-dir", d, "what-if", "--list"], None, LIMIT);
    assert!(assert_success(&o).contains("No what-if yet"));

    let set = "motivating_questions.num_gpus=2048";
    assert_success(&what_if_run(dir.path(), &[set], false));
    let path = trace_path(dir.path(), &[set]);
    let mut t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
    t["lecture"] = "lecture_03".into();
    std::fs::write(&path, serde_json::to_string(&t).expect("JSON")).expect("write");
    let before = snapshot(dir.path());
    let p = path.to_str().expect("utf-8");
    let o = run_lecture(&["book", "--what-if", p], None, LIMIT);
    assert_clean_failure(&o, &["lecture_03", "this book is of `lecture_02`"]);
    assert_eq!(snapshot(dir.path()), before, "nothing was written");
}
