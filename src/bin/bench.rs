//! Benchmarks (not tests): `bench matmul-overhead` and `bench cpu-matmul [--with-reference]`.
//! See README.md, "Benchmarks".

use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use cs336::bench::{self, timing::Budget};

#[derive(Parser)]
#[command(about = "Matmul benchmarks: medians of many samples, ratios against references measured in the same run")]
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
    },
}

#[derive(Args)]
struct Common {
    /// Threads for every library (rayon for us, OpenMP/OpenBLAS for the references).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Minimum samples per measurement.
    #[arg(long, default_value_t = 15)]
    min_samples: usize,
    /// Minimum seconds of samples per measurement.
    #[arg(long, default_value_t = 1.5)]
    min_time: f64,
}

impl Common {
    fn budget(&self) -> anyhow::Result<Budget> {
        if self.min_samples == 0 || self.threads == 0 || !(self.min_time >= 0.0 && self.min_time.is_finite()) {
            anyhow::bail!("--threads and --min-samples must be at least 1 and --min-time a non-negative number of seconds");
        }
        Ok(Budget { min_samples: self.min_samples, min_time: Duration::from_secs_f64(self.min_time), ..Budget::default() })
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::MatmulOverhead(c) => {
            let budget = c.budget()?;
            bench::set_threads(c.threads)?;
            bench::overhead::run(budget, c.threads)?;
        }
        Command::CpuMatmul { common: c, with_reference } => {
            let budget = c.budget()?;
            bench::set_threads(c.threads)?;
            bench::cpu_matmul::run(budget, c.threads, with_reference)?;
        }
    }
    Ok(())
}
