//! `lecture --set …`, `lecture givens`, `lecture what-if --list` and `lecture book --what-if FILE`:
//! the command line of a what-if (`cs336::lecture::what_if` holds what it checks and runs).

use std::path::Path;

use anyhow::{Context, Result, bail};

use cs336::atomic_file;
use cs336::console::{self, Console, line_safe};
use cs336::device::peaks::{self, MathMode};
use cs336::device::{self, DeviceRequest};
use cs336::lecture::what_if::{self, Change};
use cs336::lecture::{LECTURE, givens, run};
use cs336::trace;

/// `lecture givens`: every given, by section, with its default on this device.
pub fn list_givens(out: &mut Console, request: DeviceRequest) -> Result<()> {
    let device = device::choose(request)?.device;
    let mut section = "";
    for (def, given) in givens::all() {
        if def.id != section {
            section = def.id;
            out.line(format_args!("{} ({})", def.id, def.title));
        }
        out.line(format_args!(
            "  {:<22} default {:<16} {:<22} {}",
            given.name,
            what_if::typed(&(given.default)(&device)),
            given.range_words(),
            given.help
        ));
    }
    out.line(format_args!(
        "Change one with `cargo run --release --bin lecture -- --set SECTION.NAME=VALUE` (repeatable)."
    ));
    Ok(())
}

/// `lecture what-if --list`: the what-if traces on this machine and what each changed.
pub fn list(out: &mut Console, trace_dir: &Path, list: bool) -> Result<()> {
    if !list {
        bail!("`lecture what-if` needs `--list` (a what-if is run with `lecture --set SECTION.NAME=VALUE`)");
    }
    let folder = what_if::folder(&trace_dir.join(LECTURE));
    let files = what_if::all(&trace_dir.join(LECTURE))?;
    if files.is_empty() {
        out.line(format_args!(
            "No what-if yet in {}; run one with `lecture --set SECTION.NAME=VALUE`.",
            line_safe(&folder.display().to_string())
        ));
    }
    for file in files {
        match trace::load_named(&file) {
            Ok(t) => {
                out.line(format_args!("{}", line_safe(&file.display().to_string())));
                for change in what_if::changed_givens(&t) {
                    out.line(format_args!("  {}", line_safe(&change)));
                }
            }
            Err(e) => out.line(format_args!(
                "{} (unreadable: {})",
                line_safe(&file.display().to_string()),
                line_safe(&e.to_string())
            )),
        }
    }
    Ok(())
}

/// The folder a what-if's book is built in: `book/` beside its trace, in the what-if's own folder.
fn book_dir(what_if_trace: &Path) -> std::path::PathBuf {
    let dir = what_if_trace.with_file_name("book");
    // mdbook reads a relative folder as relative to the book, not to here.
    std::path::absolute(&dir).unwrap_or(dir)
}

/// The book of the what-if whose trace is `file`, beside the device's own trace `baseline`.
fn book_options(file: &Path, baseline: &Path, root: &Path) -> cs336::book::BuildOptions {
    cs336::book::BuildOptions {
        trace: Some(file.to_path_buf()),
        strict: Some(file.to_path_buf()),
        trace_dir: baseline.parent().map(Path::to_path_buf),
        out_dir: Some(book_dir(file)),
        source_root: Some(root.to_path_buf()),
        baseline: Some(baseline.to_path_buf()),
    }
}

/// `lecture book --what-if FILE`: the what-if's book, its values beside the device's own run's.
pub fn book(out: &mut Console, file: &Path, root: &Path) -> Result<()> {
    let what_if = trace::load_named(file)?;
    if what_if.lecture != LECTURE {
        bail!(
            "{} is a trace of `{}`: this book is of `{LECTURE}`",
            console::shorten_path(file),
            console::shorten(&what_if.lecture, 200)
        );
    }
    if what_if.changed_givens().is_empty() {
        bail!("{} changes no given: it is not a what-if's trace", file.display());
    }
    // The device's own trace: in the folder above the what-ifs, named after the device.
    let lecture_dir =
        what_if::lecture_dir_of(file).context("a what-if trace lives in `<trace-dir>/lecture_02/what-if/<name>/`")?;
    what_if::check_inside(&what_if::folder(lecture_dir), &book_dir(file))?;
    let baseline = lecture_dir.join(format!("{}.json", what_if.provenance.device.slug));
    if !baseline.is_file() {
        bail!(
            "the device's own trace {} is missing: a what-if book shows its values beside the own run's",
            baseline.display()
        );
    }
    let index = cs336::book::build(&root.join("book"), &book_options(file, &baseline, root))
        .context("the what-if book did not build")?;
    out.line(format_args!("What-if book: {}", index.display()));
    Ok(())
}

/// `lecture --set …`: checks every change and the cost before anything runs, runs the sections
/// whose givens changed into a what-if trace (the device's own is not touched) and builds its book.
#[allow(clippy::too_many_arguments)]
pub fn run(
    out: &mut Console,
    sets: &[String],
    yes: bool,
    seed: u64,
    build_book: bool,
    trace_dir: &Path,
    request: DeviceRequest,
    root: &Path,
) -> Result<()> {
    let changes: Vec<Change> = what_if::parse(sets)?;
    device::cpu::isa::from_env()?;
    let choice = device::choose(request)?;
    let slug = choice.device.slug()?;
    let lecture_dir = trace_dir.join(LECTURE);
    let own = lecture_dir.join(format!("{slug}.json"));
    if !own.is_file() {
        bail!(
            "a what-if runs beside this device's own run, and there is none at {}: run `cargo run --release --bin \
             lecture` first",
            own.display()
        );
    }
    let baseline = trace::load_named(&own)?;
    // What it would cost, against this machine's memory and peak, before anything is allocated.
    let peak = peaks::peak(&choice.device, MathMode::Fp32).map_or(1e10, |p| p.flop_per_sec);
    // And this machine's price of an op and a comparison: a deep, narrow model spends its time
    // there, not in arithmetic.
    let rates = what_if::Rates::measure()?;
    for line in what_if::check_cost(
        &changes,
        &choice.device,
        choice.device.memory_bytes(),
        peak,
        &rates,
        yes,
    )? {
        out.line(format_args!("Estimate: {line}"));
    }
    what_if::check_not_default(&changes, &choice.device)?;
    let path = what_if::trace_path(&lecture_dir, &slug, &changes);
    let folder = path.parent().context("a what-if trace has a folder")?;
    let what_ifs = what_if::folder(&lecture_dir);
    if build_book {
        // The what-if's book reads every trace beside the device's own, and quotes the own run
        // wherever the what-if ran no section: both are checked before anything runs, or is made.
        crate::checks::check_neighbours(&own, true)?;
        if what_ifs.exists() {
            // A link out of the folder of what-ifs is named as such, before the book's own rules.
            what_if::check_inside(&what_ifs, folder)?;
            what_if::check_inside(&what_ifs, &book_dir(&path))?;
        }
        let will_hold = baseline
            .sections
            .iter()
            .map(|s| s.id.clone())
            .chain(what_if::sections(&changes).iter().map(|s| s.id.to_string()))
            .collect();
        crate::checks::check_book(&book_options(&path, &own, root), &will_hold)?;
    }
    std::fs::create_dir_all(&what_ifs).with_context(|| format!("cannot make {}", what_ifs.display()))?;
    // Before the what-if's own folder is made (a link there would make it elsewhere), and after.
    what_if::check_inside(&what_ifs, folder)?;
    let made_folder = !folder.exists();
    std::fs::create_dir_all(folder).with_context(|| format!("cannot make {}", folder.display()))?;
    let written = write_what_if(out, &changes, &what_ifs, &path, &own, build_book, |out| {
        let sections = what_if::sections(&changes);
        out.line(format_args!(
            "What if, on {}: running {} section(s)",
            choice.device,
            sections.len()
        ));
        for c in &changes {
            out.line(format_args!(
                "  {}.{} = {}",
                c.section.id,
                c.given.name,
                what_if::typed(&c.value)
            ));
        }
        let overrides = what_if::overrides(&changes);
        run::run_lecture_with(&sections, &choice, seed, root, Some(baseline), &overrides, |r| {
            out.line(format_args!("  {:<28} {:>8.1} ms", r.id, r.wall_time_s * 1e3));
        })
        .context("the what-if's trace was not written")
    });
    // A what-if that stops before its trace is written leaves no empty folder of its own behind
    // (`remove_dir` takes only an empty one).
    if written.is_err() && made_folder {
        std::fs::remove_dir(folder).ok();
    }
    written?;
    out.line(format_args!(
        "Wrote {} (the device's own trace is unchanged)",
        path.display()
    ));
    if build_book {
        book(out, &path, root)?;
    }
    Ok(())
}

/// The checks before a what-if's sections run (`run`), the run, and the write of its trace at
/// `path`, held to its reader's rules before it is renamed into place: with these givens a section
/// may compute what no trace may hold (a count that is not whole, a trace too large).
fn write_what_if(
    out: &mut Console,
    changes: &[Change],
    what_ifs: &Path,
    path: &Path,
    own: &Path,
    build_book: bool,
    run: impl FnOnce(&mut Console) -> Result<trace::Trace>,
) -> Result<()> {
    what_if::check_inside(what_ifs, path)?;
    if build_book {
        what_if::check_inside(what_ifs, &book_dir(path))?;
    }
    atomic_file::check_writable(path)?;
    atomic_file::check_space(path, 4 * std::fs::metadata(own).map_or(1 << 20, |m| m.len()))?;
    let merged = run(out)?;
    trace::save_named(path, &merged).with_context(|| {
        format!(
            "the what-if's trace was not written (with these givens, its sections recorded what a trace may not \
             hold); change {}",
            changes
                .iter()
                .map(|c| format!("`{}.{}`", c.section.id, c.given.name))
                .collect::<Vec<_>>()
                .join(" or ")
        )
    })?;
    Ok(())
}
