//! `lecture`: runs the lecture's sections on the best available device, writes the trace, and
//! answers questions about a recorded trace.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};

use cs336::atomic_file;
use cs336::console::{self, Console, terminal_safe};
use cs336::device::{self, DeviceRequest};
use cs336::lecture::{self, LECTURE, SECTIONS, run};
use cs336::trace::{self, Trace};

#[path = "lecture/checks.rs"]
mod checks;
#[path = "lecture/compare.rs"]
mod compare;
#[path = "lecture/flags.rs"]
mod flags;
#[path = "lecture/what_if.rs"]
mod what_if;

#[derive(Parser)]
#[command(
    version,
    about = "CS336 Lecture 2 (PyTorch, resource accounting), executed: runs every section and records what it measured"
)]
struct Cli {
    /// Run only this section (repeatable) and merge the result into the existing trace.
    #[arg(long = "section", value_name = "ID")]
    sections: Vec<String>,

    /// List the sections in lecture order and exit.
    #[arg(long)]
    list: bool,

    /// Folder holding the traces (default: `trace` in the crate root).
    #[arg(long, value_name = "DIR", global = true)]
    trace_dir: Option<PathBuf>,

    /// Seed for every random number in the run (default 0).
    #[arg(long)]
    seed: Option<u64>,

    /// Do not build the HTML book after writing the trace.
    #[arg(long)]
    no_book: bool,

    /// Device to run on; `auto` picks CUDA when it is usable, else the CPU.
    #[arg(long, value_enum, global = true)]
    device: Option<DeviceArg>,

    /// What if: run the sections whose givens this changes (repeatable), e.g.
    /// `--set tensor_operations_flops.B=4096`, into a what-if trace beside the device's own (which
    /// stays as it is), and build a what-if book. `lecture givens` lists the givens.
    #[arg(long = "set", value_name = "SECTION.NAME=VALUE")]
    set: Vec<String>,

    /// Run a what-if even where it is estimated to take more than a few minutes.
    #[arg(long)]
    yes: bool,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Build the HTML book from the traces already recorded, running no section and writing no
    /// trace, and print the path of its `index.html`.
    Book {
        /// Pages quote this trace (default: the newest in the trace folder, as `book/book.toml`
        /// says); `{{compare}}` reads the traces beside it unless `--trace-dir` says otherwise.
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
        /// Build the book of this what-if trace (`trace/lecture_02/what-if/…`), beside the device's
        /// own, with every moved value shown beside the own run's.
        #[arg(long, value_name = "FILE", conflicts_with = "trace")]
        what_if: Option<PathBuf>,
    },
    /// List the givens a what-if may change (`--set SECTION.NAME=VALUE`), section by section, with
    /// their defaults on this device, their ranges and what they are.
    Givens,
    /// The what-ifs recorded on this machine.
    WhatIf {
        /// List them, with the givens each changed.
        #[arg(long)]
        list: bool,
    },
    /// Print the name of this device's trace file without `.json` (the CPU's model and the
    /// kernels its matmuls run with, or the GPU's name), e.g. `cpu-amd-epyc-avx512-bf16`: the file
    /// a run writes is `<trace-dir>/lecture_02/<name>.json`.
    TraceName,
    /// Compare two traces value by value as their kinds say: given and computed values must be
    /// equal, a kernel's rounding too when both ran the same bf16 kernel; what a clock or the device
    /// decided is left out (its seconds are listed side by side). Exits 1 on a difference.
    Compare {
        /// The first trace (e.g. the committed one: `<(git show HEAD:trace/lecture_02/NAME.json)`).
        a: PathBuf,
        /// The second trace (e.g. a fresh run's).
        b: PathBuf,
    },
    /// Print one recorded value as JSON, e.g. `lecture get tensors_memory.bytes`
    /// (a further `.field` or `.0` walks into objects and lists).
    Get {
        /// SECTION.NAME[.PATH]
        key: String,
        /// Read this trace file instead of the device's default one.
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
        /// Print the whole record (value, unit, line…) instead of the value alone.
        #[arg(long)]
        record: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum DeviceArg {
    Auto,
    Cpu,
    Cuda,
}

fn main() -> ExitCode {
    // Each training step's tensors reuse the last step's freed memory (see `heap.rs`): without it
    // the timings the lecture records include a page fault per 4 KiB written.
    if let Err(why) = cs336::device::cpu::heap::keep_freed_memory() {
        console::warn(format_args!(
            "note: {why}; freed memory goes back to the OS, and timings include the page faults"
        ));
    }
    let mut out = Console::new();
    let done = real_main(&mut out);
    // Everything is done by now (a trace written, a book built): what is left is to say so. A
    // reader that closed the pipe ends the process quietly; any other output failure is reported.
    let unwritten = out.finish();
    match done {
        Err(e) => {
            console::warn(format_args!("error: {}", terminal_safe(&format!("{e:#}"))));
            ExitCode::FAILURE
        }
        Ok(()) => match unwritten {
            Some(e) => {
                console::warn(format_args!(
                    "error: could not write to standard output ({e}); the command's work itself is done (a trace it \
                     writes is written)"
                ));
                ExitCode::FAILURE
            }
            None => ExitCode::SUCCESS,
        },
    }
}

/// Bytes a trace is taken to need when there is none yet to measure (a full one is about 150 KB).
const MIN_TRACE_ESTIMATE: u64 = 1 << 20;

/// The crate root: where `cargo run` was pointed, else the current folder.
fn root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn trace_path(dir: &Path, slug: &str) -> PathBuf {
    dir.join(LECTURE).join(format!("{slug}.json"))
}

/// This device's trace, or an error naming the traces there are (another machine's traces are
/// named after its own device).
fn device_trace(dir: &Path, slug: &str) -> Result<PathBuf> {
    let path = trace_path(dir, slug);
    if path.exists() {
        return Ok(path);
    }
    let folder = dir.join(LECTURE);
    let mut others: Vec<String> = std::fs::read_dir(&folder)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".json"))
                .collect()
        })
        .unwrap_or_default();
    others.sort();
    bail!(
        "this device has no trace ({} does not exist); run `cargo run --release --bin lecture` to record one, \
         or read another with `--trace FILE` ({})",
        path.display(),
        if others.is_empty() {
            format!("{} holds none", folder.display())
        } else {
            format!("in {}: {}", folder.display(), others.join(", "))
        }
    )
}

fn real_main(out: &mut Console) -> Result<()> {
    let cli = Cli::parse();
    let trace_dir = cli.trace_dir.clone().unwrap_or_else(|| root().join("trace"));
    flags::check(&cli)?;
    // Before anything runs: a misspelt budget would otherwise time at the lecture's own.
    cs336::timing::budget::from_env()?;
    let request = match cli.device.unwrap_or(DeviceArg::Auto) {
        DeviceArg::Auto => DeviceRequest::Auto,
        DeviceArg::Cpu => DeviceRequest::Cpu,
        DeviceArg::Cuda => DeviceRequest::Cuda,
    };

    if cli.list {
        for (i, s) in SECTIONS.iter().enumerate() {
            out.line(format_args!("{:>2}. {:<26} {}", i + 1, s.id, s.title));
        }
        return Ok(());
    }
    if cli.command.is_some() && !cli.sections.is_empty() {
        bail!("`--section` runs sections; `get` and `book` run none (drop one or the other)");
    }
    match cli.command {
        Some(Command::Get { key, trace, record }) => {
            let path = match trace {
                Some(p) => p,
                None => device_trace(&trace_dir, &device_name(request)?)?,
            };
            return get(out, &path, &key, record);
        }
        Some(Command::Book { trace, what_if: None }) => return book(out, cli.trace_dir.as_deref(), trace),
        Some(Command::Book {
            what_if: Some(file), ..
        }) => return what_if::book(out, &file, &root()),
        Some(Command::Givens) => return what_if::list_givens(out, request),
        Some(Command::WhatIf { list }) => return what_if::list(out, &trace_dir, list),
        Some(Command::Compare { a, b }) => return compare::compare(out, &a, &b),
        Some(Command::TraceName) => {
            out.line(format_args!("{}", device_name(request)?));
            return Ok(());
        }
        None => {}
    }
    if !cli.set.is_empty() {
        return what_if::run(
            out,
            &cli.set,
            cli.yes,
            cli.seed.unwrap_or(0),
            !cli.no_book,
            &trace_dir,
            request,
            &root(),
        );
    }
    run_sections(out, &cli, &trace_dir, request)
}

/// The name of the trace of the device `request` picks (`CS336_CPU_ISA` must be valid: it decides
/// a CPU's kernels, and so the name).
fn device_name(request: DeviceRequest) -> Result<String> {
    device::cpu::isa::from_env()?;
    Ok(device::choose(request)?.device.slug()?)
}

/// Runs the sections `cli` names (all without `--section`), merges them into the trace and
/// builds the book.
fn run_sections(out: &mut Console, cli: &Cli, trace_dir: &Path, request: DeviceRequest) -> Result<()> {
    let seed = cli.seed.unwrap_or(0);
    let mut selected = Vec::new();
    for id in &cli.sections {
        match lecture::find(id) {
            Some(def) => selected.push(def),
            None => bail!(
                "unknown section `{id}`; `lecture --list` shows the {} sections",
                SECTIONS.len()
            ),
        }
    }
    // CS336_CPU_ISA names a level this CPU has, or nothing runs.
    device::cpu::isa::from_env()?;
    let choice = device::choose(request)?;
    let path = trace_path(trace_dir, &choice.device.slug()?);
    // Before any section runs, and before anything is made (a refused run leaves no folder): a
    // partial run has a valid trace to merge into (a full run replaces an unreadable one), the
    // book can read its other traces and can be built from what the run will write, and the
    // trace can be written.
    // A partial run merges into the trace, so it must load (a newer schema is refused there); a
    // full run replaces it, but not one of a newer schema, which it would throw away unread.
    trace::io::check_link(&path)?;
    let mut will_hold: BTreeSet<String> = selected.iter().map(|s| s.id.to_string()).collect();
    if !selected.is_empty() && path.exists() {
        will_hold.extend(trace::load_named(&path)?.sections.into_iter().map(|s| s.id));
    } else if path.exists() {
        trace::io::check_replaceable(&path)?;
    }
    if selected.is_empty() {
        will_hold.extend(SECTIONS.iter().map(|s| s.id.to_string()));
    }
    checks::check_neighbours(&path, !cli.no_book)?;
    if !cli.no_book {
        checks::check_book(&checks::book_options(&path), &will_hold)?;
    }
    atomic_file::check_writable(&path)?;
    // Room for the new trace beside the old one (the write goes to a temporary file first), with
    // the old one's size as the estimate: a run that finds the disk full after it ran loses its work.
    let old_size = std::fs::metadata(&path).map_or(0, |m| m.len());
    atomic_file::check_space(&path, 2 * old_size.max(MIN_TRACE_ESTIMATE))?;

    out.line(format_args!(
        "Running {} section(s) on {} (seed {})",
        if selected.is_empty() {
            SECTIONS.len()
        } else {
            selected.len()
        },
        choice.device,
        seed
    ));
    if let Some(why) = &choice.cuda_unavailable_reason {
        out.line(format_args!("  not using CUDA: {why}"));
    }
    // Read before anything runs: a bad value stops the run, not its end.
    let policy = lecture::watch::Policy::from_env()?;
    let done = run::run_lecture_watched(
        &selected,
        &choice,
        seed,
        &root(),
        None,
        &run::Overrides::new(),
        &policy,
        |r| out.line(format_args!("  {:<28} {:>10}", r.id, format_seconds(r.wall_time_s))),
        |note| console::warn(format_args!("  {}", terminal_safe(note))),
    );
    let fresh = done.context("the trace was not written; the previous one (if any) is unchanged")?;
    // Concurrent runs take turns from here: each merges into the trace as the one before left
    // it, and builds the book from it, so no run's sections are lost and the last book is the
    // newest.
    let _lock = atomic_file::lock_beside(&path)?;
    let previous = if selected.is_empty() || !path.exists() {
        None
    } else {
        Some(trace::load_named(&path)?)
    };
    let merged = run::merge(previous, fresh);
    let existed = path.exists();
    trace::save_named(&path, &merged).with_context(|| {
        if existed {
            format!(
                "the trace was not written; {} is as it was before this run",
                path.display()
            )
        } else {
            format!(
                "the trace was not written, so there is still none at {}",
                path.display()
            )
        }
    })?;
    out.line(format_args!("Wrote {}", path.display()));
    if !cli.no_book {
        let index = cs336::book::build(&root().join("book"), &checks::book_options(&path))
            .context("the trace was written, but the book did not build")?;
        out.line(format_args!("Book: {}", index.display()));
    }
    if let Some(warning) = run::unoptimised_warning(&merged) {
        console::warn(format_args!("{warning}"));
    }
    if let Some(warning) = run::test_budget_warning(&merged) {
        console::warn(format_args!("{warning}"));
    }
    if let Some(warning) = run::disturbed_warning(&merged) {
        console::warn(format_args!("{}", terminal_safe(&warning)));
    }
    Ok(())
}

/// `lecture book`: the book from the traces as they are.
fn book(out: &mut Console, trace_dir: Option<&Path>, trace: Option<PathBuf>) -> Result<()> {
    if let Some(file) = &trace {
        trace::load_named(file)?;
    }
    let folder = match (trace_dir, &trace) {
        (Some(dir), _) => Some(dir.join(LECTURE)),
        (None, Some(file)) => file.parent().map(Path::to_path_buf),
        (None, None) => None,
    };
    let options = cs336::book::BuildOptions {
        trace,
        strict: None,
        trace_dir: folder,
        out_dir: None,
        source_root: Some(root()),
        baseline: None,
    };
    let index = cs336::book::build(&root().join("book"), &options).context("the book did not build")?;
    out.line(format_args!("{}", index.display()));
    Ok(())
}

fn format_seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

fn get(out: &mut Console, path: &Path, key: &str, whole_record: bool) -> Result<()> {
    let trace: Trace = trace::load(path)?;
    // What the reader typed, echoed at most this long: a 100 KB name buries the message.
    let cut = |text: &str| console::shorten(text, 200);
    let file = console::shorten_path(path);
    let mut parts = key.split('.');
    let (Some(section), Some(name)) = (parts.next(), parts.next()) else {
        bail!("`{}` is not of the form SECTION.NAME", cut(key));
    };
    let Some(sec) = trace.section(section) else {
        let known: Vec<&str> = trace.sections.iter().map(|s| s.id.as_str()).collect();
        bail!("{file}: no section `{}` (it has: {})", cut(section), known.join(", "));
    };
    let Some(rec) = sec.values.get(name) else {
        let known: Vec<&str> = sec.values.keys().map(String::as_str).collect();
        bail!(
            "{file}: section `{section}` has no value `{}` (it has: {})",
            cut(name),
            known.join(", ")
        );
    };
    let steps: Vec<String> = parts.map(String::from).collect();
    // The same walk the book uses for `{{value SECTION.NAME.PATH}}`.
    let value = trace::walk(&rec.value, &steps)
        .map_err(|(step, what)| anyhow::anyhow!("`{}`: nothing at `{}` ({what})", cut(key), cut(&step)))?;
    let shown = match serde_json::to_value(rec)? {
        // The record with the part of its value the path leads to.
        serde_json::Value::Object(mut fields) if whole_record => {
            fields.insert("value".into(), value.clone());
            if !steps.is_empty() {
                fields.insert("path".into(), steps.join(".").into());
            }
            serde_json::Value::Object(fields)
        }
        _ => value.clone(),
    };
    out.line(format_args!("{}", serde_json::to_string_pretty(&shown)?));
    Ok(())
}
