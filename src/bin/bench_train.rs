//! `bench_train`: times a Cruncher training step against the matmuls it contains, measured in the
//! same process, and prints the overhead ratio (goal: autograd + optimizer ≤ 25 % of the step).

use anyhow::Result;
use clap::Parser;

use cs336::bench::train_step::{self, Config};

#[derive(Parser)]
#[command(about = "Training-step overhead: a Cruncher step against its own matmuls")]
struct Cli {
    #[arg(long, default_value_t = 1024)]
    dim: usize,
    #[arg(long, default_value_t = 4)]
    layers: usize,
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// adagrad or sgd
    #[arg(long, default_value = "adagrad")]
    optimizer: String,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let config = Config { dim: cli.dim, num_layers: cli.layers, batch: cli.batch, optimizer: cli.optimizer, ..Config::default() };
    let r = train_step::run(&config)?;
    if cli.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    println!("Cruncher(dim={}, num_layers={}), batch {}, {} ({} parameters)", config.dim, config.num_layers, config.batch, config.optimizer, r.num_parameters);
    println!("  matmul FLOPs per step (counted)  {:.4e}   (6·B·P = {:.4e}; the data's gradient is skipped)", r.counted_matmul_flops as f64, r.six_b_p as f64);
    println!("  step (median)                     {:.3} ms", r.step_s * 1e3);
    println!("    forward + backward              {:.3} ms", r.forward_backward_s * 1e3);
    println!("    optimizer update                {:.3} ms", r.optimizer_s * 1e3);
    println!("  the step's matmuls alone          {:.3} ms   ({:.3e} FLOP/s)", r.matmul_s * 1e3, r.matmul_flop_per_sec);
    println!("  overhead (step − matmuls) / step  {:.1} %   (goal ≤ 25 %)", r.overhead_fraction * 100.0);
    match (r.promised_flop_per_sec, r.step_mfu) {
        (Some(p), Some(m)) => println!("  step throughput                   {:.3e} FLOP/s = MFU {:.3} of {:.3e}", r.step_flop_per_sec, m, p),
        _ => println!("  step throughput                   {:.3e} FLOP/s (no promised peak)", r.step_flop_per_sec),
    }
    Ok(())
}
