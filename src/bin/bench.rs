//! Benchmarks (not tests): `bench matmul-overhead`, `bench cpu-matmul [--with-reference]`,
//! `bench elementwise [--with-reference]` and `bench train-step`. See "Benchmarks" in book/src/reference.md.

use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use cs336::bench;
use cs336::outln;
use cs336::timing::Budget;

#[derive(Parser)]
#[command(about = "CPU benchmarks: medians of many samples, ratios against references measured in the same run")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// f32 matmul through Tensor::matmul vs gemm::gemm called directly on the same buffers.
    MatmulOverhead(Common),
    /// Our f32 and bf16 matmul vs numpy f32 and PyTorch f32/bf16 (GFLOP/s and ratios).
    CpuMatmul {
        #[command(flatten)]
        common: Common,
        /// Create a virtual environment under the target folder, install numpy and PyTorch
        /// from PyPI into it (first time only), and time them in the same run.
        #[arg(long)]
        with_reference: bool,
        /// Also write the table as JSON (medians and spreads in seconds) to this file.
        #[arg(long)]
        json: Option<std::path::PathBuf>,
        /// References not to time, by column name with a dash: np-f32, pt-f32, pt-bf16 (PyTorch's
        /// bf16 on a CPU without AVX512_BF16 runs at ~1 GFLOP/s: a 2048³ product takes seconds).
        #[arg(long, value_delimiter = ',')]
        skip: Vec<String>,
        /// Time this product instead of the standard five, M×K×N (or MxKxN); repeat for more.
        // A leading minus is read as a (bad) shape, not as a flag: `--shape -1x1x1` then names the
        // size that is wrong instead of calling `-1` an unknown argument.
        #[arg(long = "shape", value_parser = bench::Shape::parse, allow_hyphen_values = true)]
        shapes: Vec<bench::Shape>,
    },
    /// Our elementwise ops, reductions, dot and matvec in f32 and bf16 at one size in each level
    /// of the memory (found where its bandwidth curve falls) and beyond them all: GB/s, against a
    /// copy or a read of ours and PyTorch/numpy.
    Elementwise {
        #[command(flatten)]
        common: Common,
        /// Create a virtual environment under the target folder, install numpy and PyTorch
        /// from PyPI into it (first time only), and time them in the same run.
        #[arg(long)]
        with_reference: bool,
        /// Also write the table as JSON (medians and quartiles in seconds, bytes, FLOPs, GB/s) to
        /// this file; keep one per kind of CPU as `trace/bench/<trace name>-elementwise.json`.
        #[arg(long)]
        json: Option<std::path::PathBuf>,
        /// Time only these ops (comma-separated or repeated); all seven by default.
        #[arg(long, value_enum, value_delimiter = ',')]
        op: Vec<bench::elementwise::Op>,
        /// Bytes each op moves (inputs + output), with K, M or G for binary multiples (64K, 24M);
        /// repeat for more. Default: half of each level the memory's curve shows, and 4× the last
        /// (at most 1 GiB).
        #[arg(long, value_parser = parse_bytes)]
        bytes: Vec<u64>,
    },
    /// A Cruncher training step against its own matmuls timed alone, in the same process
    /// (goal: autograd + optimizer ≤ 10 % of the step).
    TrainStep(TrainStep),
}

#[derive(Args)]
struct TrainStep {
    /// Width of every layer (at least 1).
    #[arg(long, default_value_t = 1024)]
    dim: usize,
    /// Hidden layers (at least 1).
    #[arg(long, default_value_t = 4)]
    layers: usize,
    /// Rows per step (at least 1).
    #[arg(long, default_value_t = 256)]
    batch: usize,
    #[arg(long, value_enum, default_value_t = OptimizerArg::Adagrad)]
    optimizer: OptimizerArg,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Run even where it is estimated to take more than a few minutes (as `lecture --yes` for a
    /// what-if).
    #[arg(long)]
    yes: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum OptimizerArg {
    Adagrad,
    Sgd,
}

#[derive(Args)]
struct Common {
    /// Threads for every library (rayon for us, OpenMP/OpenBLAS for the references).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Minimum samples per measurement.
    #[arg(long, default_value_t = 15)]
    min_samples: usize,
    /// Minimum seconds of samples per measurement [default: 1.5; elementwise: 0.6, so that its
    /// cases with references take about five minutes].
    #[arg(long)]
    min_time: Option<f64>,
}

/// `--bytes`: a whole number of bytes, at least 1, with an optional K, M or G.
fn parse_bytes(text: &str) -> Result<u64, String> {
    cs336::host::parse_cache_size(text).ok_or_else(|| {
        format!("{text:?}: give bytes as a whole number of at least 1, with K, M or G if you like (64K, 24M)")
    })
}

/// Threads per core a benchmark may ask for.
const MAX_THREADS_PER_CORE: usize = 4;

/// Seconds of samples per measurement by default.
const DEFAULT_MIN_TIME_S: f64 = 1.5;
/// `bench elementwise`'s: its 56 or so cases (seven ops, two formats, a size per level of the
/// memory) with both references, each of four contenders timed for this long and paused between
/// blocks, take about five minutes.
const ELEMENTWISE_MIN_TIME_S: f64 = 0.6;
/// The longest `--min-time` taken, in seconds.
const MAX_MIN_TIME_S: f64 = 86_400.0;

impl Common {
    /// The budget, with `default_min_time` seconds of samples unless `--min-time` says.
    fn budget(&self, default_min_time: f64) -> anyhow::Result<Budget> {
        let min_time = self.min_time.unwrap_or(default_min_time);
        if self.min_samples == 0 || self.threads == 0 {
            anyhow::bail!("--threads and --min-samples must be at least 1");
        }
        // More threads than cores only time the scheduler; a hundred thousand take minutes to start.
        let most = MAX_THREADS_PER_CORE * cs336::host::logical_cores();
        if self.threads > most {
            anyhow::bail!(
                "--threads {}: this machine has {} cores, and a benchmark takes at most {most} threads",
                self.threads,
                cs336::host::logical_cores()
            );
        }
        // A day is more than any measurement here needs, and far inside what `Duration` holds.
        if !(0.0..=MAX_MIN_TIME_S).contains(&min_time) {
            anyhow::bail!(
                "--min-time {:?}: give seconds from 0 to {MAX_MIN_TIME_S} (a day)",
                min_time
            );
        }
        Ok(Budget {
            min_samples: self.min_samples,
            min_time: Duration::from_secs_f64(min_time),
            ..Budget::bench()
        })
    }
}

fn main() -> std::process::ExitCode {
    // As the lecture does: each step's tensors reuse the last step's freed memory (`heap.rs`).
    if let Err(why) = cs336::device::cpu::heap::keep_freed_memory() {
        cs336::console::warn(format_args!(
            "note: {why}; freed memory goes back to the OS, and timings include the page faults"
        ));
    }
    cs336::console::exit(run(Cli::parse()))
}

fn run(cli: Cli) -> anyhow::Result<()> {
    // Before anything runs: a misspelt budget would otherwise time at the benchmarks' own.
    cs336::timing::budget::from_env()?;
    match cli.command {
        Command::MatmulOverhead(c) => {
            let budget = c.budget(DEFAULT_MIN_TIME_S)?;
            bench::set_threads(c.threads)?;
            bench::overhead::run(budget, c.threads)?;
        }
        Command::CpuMatmul {
            common: c,
            with_reference,
            json,
            skip,
            shapes,
        } => {
            let budget = c.budget(DEFAULT_MIN_TIME_S)?;
            bench::set_threads(c.threads)?;
            let shapes = if shapes.is_empty() {
                &bench::SHAPES[..]
            } else {
                &shapes[..]
            };
            let rows = bench::cpu_matmul::run(budget, c.threads, (with_reference, &skip), shapes)?;
            if let Some(path) = json {
                write_table(&path, bench::cpu_matmul::rows_json(&rows, c.threads))?;
            }
        }
        Command::Elementwise {
            common: c,
            with_reference,
            json,
            op,
            bytes,
        } => {
            let budget = c.budget(ELEMENTWISE_MIN_TIME_S)?;
            bench::set_threads(c.threads)?;
            let report = bench::elementwise_report::run(budget, c.threads, with_reference, &op, &bytes)?;
            if let Some(path) = json {
                write_table(&path, bench::elementwise_report::report_json(&report, c.threads))?;
            }
        }
        Command::TrainStep(t) => train_step(t)?,
    }
    Ok(())
}

/// Writes a benchmark's table atomically, with what its numbers belong to: the CPU, the trace of
/// its kind and the day (`trace/bench/` keeps one table of each kind per kind of CPU).
fn write_table(path: &std::path::Path, mut table: serde_json::Value) -> anyhow::Result<()> {
    table["cpu_model"] = cs336::trace::host::cpu_model().into();
    table["trace_name"] = cs336::device::cpu::trace_name()?.into();
    table["recorded_at"] = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string().into();
    let text = serde_json::to_string_pretty(&table)?;
    cs336::atomic_file::write(path, text.as_bytes()).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))
}

fn train_step(cli: TrainStep) -> anyhow::Result<()> {
    use cs336::bench::train_step::{self, Config};
    let config = Config {
        dim: cli.dim,
        num_layers: cli.layers,
        batch: cli.batch,
        optimizer: match cli.optimizer {
            OptimizerArg::Adagrad => "adagrad",
            OptimizerArg::Sgd => "sgd",
        }
        .into(),
        ..Config::default()
    };
    // What it would cost, before anything is made: a deep, narrow model spends its time in each
    // op's fixed cost, priced here as the what-ifs price it.
    let peak = cs336::device::peaks::peak(&config.device, cs336::device::peaks::MathMode::Fp32)
        .map_or(1e10, |p| p.flop_per_sec);
    let rates = cs336::lecture::what_if::Rates::measure()?;
    let estimate = config.check_time(peak, &rates, cli.yes)?;
    // On stderr: `--json` keeps stdout for the report alone.
    cs336::console::warn(format_args!(
        "Estimate: at least {:.1} s ({})",
        estimate.seconds,
        estimate.describe(peak, &rates)
    ));
    let r = train_step::run(&config)?;
    if cli.json {
        outln!("{}", serde_json::to_string_pretty(&r)?)?;
        return Ok(());
    }
    outln!(
        "Cruncher(dim={}, num_layers={}), batch {}, {} ({} parameters)",
        config.dim,
        config.num_layers,
        config.batch,
        config.optimizer,
        r.num_parameters
    )?;
    outln!(
        "  matmul FLOPs per step (counted)  {:.4e}   (6·B·P = {:.4e}; the data's gradient is skipped)",
        r.counted_matmul_flops as f64,
        r.six_b_p as f64
    )?;
    outln!("  step (median)                     {:.3} ms", r.step_s * 1e3)?;
    outln!(
        "    forward + backward              {:.3} ms",
        r.forward_backward_s * 1e3
    )?;
    outln!("    optimizer update                {:.3} ms", r.optimizer_s * 1e3)?;
    outln!(
        "  the step's matmuls alone          {:.3} ms   ({:.3e} FLOP/s)",
        r.matmul_s * 1e3,
        r.matmul_flop_per_sec
    )?;
    outln!(
        "  overhead (step − matmuls) / step  {:.1} %   (goal ≤ 10 %)",
        r.overhead_fraction * 100.0
    )?;
    outln!(
        "  step, optimizer inside backward   {:.3} ms, overhead {:.1} %   (each update while its gradient is in cache)",
        r.step_in_backward_s * 1e3,
        r.overhead_in_backward_fraction * 100.0
    )?;
    match (r.peak_flop_per_sec, r.step_mfu) {
        (Some(p), Some(m)) => outln!(
            "  step throughput                   {:.3e} FLOP/s = MFU {:.3} of {:.3e}",
            r.step_flop_per_sec,
            m,
            p
        )?,
        _ => outln!(
            "  step throughput                   {:.3e} FLOP/s (no peak known)",
            r.step_flop_per_sec
        )?,
    }
    Ok(())
}
