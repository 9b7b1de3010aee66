//! In range means it finishes, book and all: random what-ifs within their givens' declared ranges
//! run in this process and their books build. A what-if's book differs from the device's own only
//! in the chapters that quote a section it ran, so each draw builds those chapters (the own book
//! is built whole elsewhere), with the own trace as the baseline beside them, as `lecture book
//! --what-if` does.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;

use crate::cli_what_if_hostile::small_given;
use crate::common::{self, ROOT};
use cs336::book::BuildOptions;
use cs336::device::Device;
use cs336::device::{self, DeviceRequest};
use cs336::lecture::givens::{self, GivenDef, MIN_FRACTION};
use cs336::lecture::{run, what_if};

/// A copy of the book's folder whose `SUMMARY.md` each draw rewrites, and a trace folder holding
/// the fresh run as the device's own trace.
struct Shelf {
    dir: tempfile::TempDir,
    own: PathBuf,
    /// Held by one what-if at a time: each rewrites the shelf's `SUMMARY.md` and its own what-if
    /// folder, and the tests that draw them run side by side.
    turn: std::sync::Mutex<()>,
}

fn shelf() -> &'static Shelf {
    static SHELF: OnceLock<Shelf> = OnceLock::new();
    SHELF.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let book = dir.path().join("book");
        for sub in ["", "src", "theme"] {
            let from = Path::new(ROOT).join("book").join(sub);
            std::fs::create_dir_all(book.join(sub)).expect("mkdir");
            for entry in std::fs::read_dir(&from).expect("the book's folder").flatten() {
                if entry.path().is_file() {
                    std::fs::copy(entry.path(), book.join(sub).join(entry.file_name())).expect("copy");
                }
            }
        }
        let own = common::put_fresh_trace(&dir.path().join("trace"));
        Shelf {
            dir,
            own,
            turn: std::sync::Mutex::new(()),
        }
    })
}

/// The chapters that quote section `id` (a directive naming `id.` somewhere in them).
fn chapters_quoting(ids: &[&str]) -> Vec<String> {
    let src = Path::new(ROOT).join("book/src");
    let mut names: Vec<String> = std::fs::read_dir(&src)
        .expect("book/src")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md") && n != "SUMMARY.md")
        .filter(|n| {
            let text = std::fs::read_to_string(src.join(n)).unwrap_or_default();
            ids.iter()
                .any(|id| text.contains(&format!("{{{{value {id}.")) || text.contains(&format!(" {id}.")))
        })
        .collect();
    names.sort();
    names
}

/// Runs the what-if `sets` in this process, writes its trace where `lecture` would, and builds
/// the chapters that quote a section it ran, the own trace as their baseline.
fn run_and_build(sets: &[String]) -> Result<(), String> {
    run_and_read(sets, &[]).map(drop)
}

/// `run_and_build`, then the built pages of `chapters` (by file stem), read before another test
/// takes its turn on the shelf.
fn run_and_read(sets: &[String], pages: &[&str]) -> Result<Vec<String>, String> {
    let changes = what_if::parse(sets).map_err(|e| format!("{sets:?}: {e}"))?;
    let shelf = shelf();
    // A test that failed while holding the turn leaves the shelf as usable as before.
    let _turn = shelf.turn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    common::test_budget();
    let choice = device::choose(DeviceRequest::Cpu).map_err(|e| e.to_string())?;
    let baseline = cs336::trace::load_named(&shelf.own).map_err(|e| e.to_string())?;
    let sections = what_if::sections(&changes);
    let overrides = what_if::overrides(&changes);
    let trace = run::run_lecture_with(
        &sections,
        &choice,
        0,
        Path::new(ROOT),
        Some(baseline),
        &overrides,
        |_| {},
    )
    .map_err(|e| format!("{sets:?} did not run: {e}"))?;
    let slug = choice.device.slug().map_err(|e| e.to_string())?;
    let path = what_if::trace_path(shelf.own.parent().ok_or("no folder")?, &slug, &changes);
    let folder = path.parent().ok_or("no folder")?;
    std::fs::create_dir_all(folder).map_err(|e| e.to_string())?;
    cs336::trace::save_named(&path, &trace).map_err(|e| format!("{sets:?} was not written: {e}"))?;

    let ids: Vec<&str> = sections.iter().map(|s| s.id).collect();
    let chapters = chapters_quoting(&ids);
    if chapters.is_empty() {
        return Err(format!("no chapter quotes {ids:?}"));
    }
    let book = shelf.dir.path().join("book");
    let summary: String = chapters.iter().map(|c| format!("- [{c}]({c})\n")).collect();
    std::fs::write(book.join("src/SUMMARY.md"), format!("# Summary\n\n{summary}")).map_err(|e| e.to_string())?;
    let options = BuildOptions {
        trace: Some(path.clone()),
        strict: Some(path.clone()),
        trace_dir: shelf.own.parent().map(Path::to_path_buf),
        out_dir: Some(shelf.dir.path().join("html")),
        source_root: Some(PathBuf::from(ROOT)),
        baseline: Some(shelf.own.clone()),
    };
    let built = cs336::book::build(&book, &options);
    std::fs::remove_dir_all(folder).ok();
    built.map_err(|e| format!("{sets:?}: the book of {chapters:?} did not build: {e}"))?;
    pages
        .iter()
        .map(|stem| {
            let page = shelf.dir.path().join("html").join(format!("{stem}.html"));
            std::fs::read_to_string(&page).map_err(|e| format!("{}: {e}", page.display()))
        })
        .collect()
}

/// Givens in their ranges that make a recorded tensor larger than a trace lists whole (the
/// custom model's output of `batch_size` rows, the layer's `output_dim` outputs, the deep
/// network's batch) used to run and then fail at the record call, and then were refused before
/// running. The tensor is kept as a summary now: its corners and statistics, which the code
/// view's grid and the chapter show.
#[test]
fn a_tensor_too_large_to_list_is_kept_as_a_summary_that_the_page_shows() {
    let most = cs336::lecture::recorder::MAX_RECORDED_ELEMENTS;
    for (sets, page, says) in [
        (
            vec![
                "custom_model.batch_size=100000".to_string(),
                "custom_model.d=1".to_string(),
            ],
            "custom_model",
            "a summary: 100000 elements",
        ),
        (
            vec![
                "module_parameters.output_dim=1000000".to_string(),
                "module_parameters.input_dim=1".to_string(),
            ],
            "module_parameters",
            "the statistics of all\n<span",
        ),
        (
            vec![
                format!("deep_network.batch_size={}", most + 1),
                "deep_network.d=1".to_string(),
            ],
            "deep_network",
            &format!("a summary: {} elements", most + 1),
        ),
    ] {
        let html = run_and_read(&sets, &[page]).unwrap_or_else(|e| panic!("{e}"));
        let html = &html[0];
        assert!(
            html.contains("lecture-tensor-summary"),
            "{sets:?}: no summary drawn on {page}"
        );
        assert!(html.contains(says), "{sets:?}: {page} does not say {says:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// A what-if within the declared ranges runs, its trace is written by the rules `lecture`
    /// writes it by, and every chapter that quotes a section it ran builds, held to the code.
    #[test]
    fn random_what_ifs_within_their_ranges_build_their_books(sets in proptest::collection::vec(small_given(), 1..4)) {
        let mut keys: Vec<&str> = sets.iter().filter_map(|s| s.split_once('=')).map(|(k, _)| k).collect();
        keys.sort();
        keys.dedup();
        prop_assume!(keys.len() == sets.len(), "each given once");
        run_and_build(&sets).map_err(TestCaseError::fail)?;
    }
}

/// The corner a random draw may miss: every given, alone, at the smallest value its range takes
/// (the first of a few candidates, smallest first, that it accepts), runs and builds its chapters.
#[test]
fn every_given_at_its_smallest_builds_its_chapters() {
    let candidates = ["0", "5e-324", &format!("{MIN_FRACTION:e}"), "1", "8", "16", "64"];
    let mut tried = 0;
    for (section, given) in givens::all() {
        let Some(value) = candidates.iter().find(|v| (given.parse)(v).is_ok()) else {
            panic!("{}.{}: none of {candidates:?} is in its range", section.id, given.name);
        };
        let set = vec![format!("{}.{}={value}", section.id, given.name)];
        let Ok(changes) = what_if::parse(&set) else { continue };
        if what_if::check_not_default(&changes, &cs336::device::Device::Cpu).is_err() {
            continue;
        }
        run_and_build(&set).unwrap_or_else(|e| panic!("{e}"));
        tried += 1;
    }
    assert!(tried >= 30, "only {tried} givens were tried");
}

/// The largest whole value at most `top` that the given takes: `top` itself, else rounded down
/// to a multiple of 16 or of 8, a power of four or of two (the forms the narrowed givens ask for).
fn largest_taken(given: &GivenDef, top: f64) -> Option<f64> {
    let t = top.floor();
    let pow = |base: f64| base.powf((t.ln() / base.ln()).floor());
    [t, t - t % 16.0, t - t % 8.0, pow(4.0), pow(2.0), top]
        .into_iter()
        .find(|v| *v > 0.0 && (given.parse)(&format!("{v}")).is_ok())
}

/// The other corner: every given alone at the largest value whose estimate (`what_if::check_cost`,
/// with this machine's rates) is under a quarter of a second and a GiB, runs and builds its
/// chapters. The estimate is what lets a reader run a value without `--yes`: a value it passes
/// must finish. (Run at a whole machine's memory, this found `custom_model.d=46340` estimated to
/// fit and failing for 8 GiB the estimate left out; the test keeps to a GiB to stay quick.)
#[test]
fn every_given_at_the_largest_its_estimate_allows_builds_its_chapters() {
    const BUDGET_S: f64 = 0.25;
    const MEMORY: u64 = 5 << 28; // 1.25 GiB, of which `check_cost` allows 80 %.
    let device = Device::Cpu;
    let rates = what_if::Rates::measure().expect("rates");
    // `check_cost` refuses past MAX_SECONDS: the rates and peak scaled so that it refuses past
    // the budget instead.
    let scale = what_if::MAX_SECONDS / BUDGET_S;
    let scaled = what_if::Rates {
        op_seconds: rates.op_seconds * scale,
        comparison_seconds: rates.comparison_seconds * scale,
    };
    let peak = cs336::device::peaks::peak(&device, cs336::device::peaks::MathMode::Fp32)
        .map_or(1e10, |p| p.flop_per_sec)
        / scale;
    let mut tried = Vec::new();
    for (section, given) in givens::all() {
        let default = (given.default)(&device).as_f64().expect("a number");
        // From 2⁵³ down by halves, the first value the estimate allows.
        let found = (0..=106).map(|i| 2f64.powf(53.0 - f64::from(i) / 2.0)).find_map(|top| {
            let v = largest_taken(given, top)?;
            let set = vec![format!("{}.{}={v}", section.id, given.name)];
            let changes = what_if::parse(&set).ok()?;
            what_if::check_not_default(&changes, &device).ok()?;
            what_if::check_cost(&changes, &device, Some(MEMORY), peak, &scaled, false).ok()?;
            Some((v, set))
        });
        let Some((v, set)) = found else { continue };
        if v <= default {
            continue;
        }
        run_and_build(&set).unwrap_or_else(|e| panic!("{e}"));
        tried.push(set[0].clone());
    }
    assert!(
        tried.len() >= 20,
        "only {} givens went past their defaults: {tried:?}",
        tried.len()
    );
}
