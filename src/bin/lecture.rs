//! `lecture`: runs the lecture's sections on the best available device, writes the trace, and
//! answers questions about a recorded trace.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};

use cs336::device::{self, DeviceRequest};
use cs336::lecture::{self, LECTURE, SECTIONS, run};
use cs336::trace::{self, Trace};

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

    /// Seed for every random number in the run.
    #[arg(long, default_value_t = 0)]
    seed: u64,

    /// Do not build the HTML book after writing the trace.
    #[arg(long)]
    no_book: bool,

    /// Device to run on; `auto` picks CUDA when it is usable, else the CPU.
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto, global = true)]
    device: DeviceArg,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
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
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

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

fn real_main() -> Result<()> {
    let cli = Cli::parse();
    let trace_dir = cli.trace_dir.clone().unwrap_or_else(|| root().join("trace"));
    let request = match cli.device {
        DeviceArg::Auto => DeviceRequest::Auto,
        DeviceArg::Cpu => DeviceRequest::Cpu,
        DeviceArg::Cuda => DeviceRequest::Cuda,
    };

    if cli.list {
        for (i, s) in SECTIONS.iter().enumerate() {
            println!("{:>2}. {:<26} {}", i + 1, s.id, s.title);
        }
        return Ok(());
    }
    if let Some(Command::Get { key, trace, record }) = cli.command {
        let path = match trace {
            Some(p) => p,
            None => device_trace(&trace_dir, &device::choose(request)?.device.slug())?,
        };
        return get(&path, &key, record);
    }

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
    let choice = device::choose(request)?;
    let path = trace_path(&trace_dir, &choice.device.slug());
    // A partial run merges into the existing trace, so read (and validate) it first.
    let previous = if selected.is_empty() || !path.exists() {
        None
    } else {
        Some(trace::load(&path)?)
    };

    println!(
        "Running {} section(s) on {} (seed {})",
        if selected.is_empty() {
            SECTIONS.len()
        } else {
            selected.len()
        },
        choice.device,
        cli.seed
    );
    if let Some(why) = &choice.cuda_unavailable_reason {
        println!("  not using CUDA: {why}");
    }
    let done = run::run_lecture(&selected, &choice, cli.seed, &root(), previous, |r| {
        println!("  {:<28} {:>10}", r.id, format_seconds(r.wall_time_s));
    });
    let trace = done.context("the trace was not written; the previous one (if any) is unchanged")?;
    trace::save(&path, &trace)?;
    println!("Wrote {}", path.display());
    if !cli.no_book {
        let options = cs336::book::BuildOptions {
            trace: Some(path.clone()),
            trace_dir: path.parent().map(Path::to_path_buf),
            out_dir: None,
            source_root: Some(root()),
        };
        let index = cs336::book::build(&root().join("book"), &options)
            .context("the trace was written, but the book did not build")?;
        println!("Book: {}", index.display());
    }
    if let Some(warning) = run::unoptimised_warning(&trace) {
        eprintln!("{warning}");
    }
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

fn get(path: &Path, key: &str, whole_record: bool) -> Result<()> {
    let trace: Trace = trace::load(path)?;
    let mut parts = key.split('.');
    let (Some(section), Some(name)) = (parts.next(), parts.next()) else {
        bail!("`{key}` is not of the form SECTION.NAME");
    };
    let Some(sec) = trace.section(section) else {
        let known: Vec<&str> = trace.sections.iter().map(|s| s.id.as_str()).collect();
        bail!(
            "{}: no section `{section}` (it has: {})",
            path.display(),
            known.join(", ")
        );
    };
    let Some(rec) = sec.values.get(name) else {
        let known: Vec<&str> = sec.values.keys().map(String::as_str).collect();
        bail!(
            "{}: section `{section}` has no value `{name}` (it has: {})",
            path.display(),
            known.join(", ")
        );
    };
    let value = if whole_record {
        serde_json::to_value(rec)?
    } else {
        rec.value.clone()
    };
    let steps: Vec<String> = parts.map(String::from).collect();
    // The same walk the book uses for `{{value SECTION.NAME.PATH}}`.
    let value =
        trace::walk(&value, &steps).map_err(|(step, what)| anyhow::anyhow!("`{key}`: nothing at `{step}` ({what})"))?;
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
