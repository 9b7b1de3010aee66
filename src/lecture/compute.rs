//! Compute accounting: FLOPs, FLOP/s, and what hardware promises.

use crate::device::peaks;
use crate::error::Result;
use crate::trace::{SectionCtx, Unit};

/// A FLOP is one floating-point operation; FLOP/s is a speed. Training budgets are totals, chips
/// are rated in speed.
pub fn tensor_operations_flops(cx: &mut SectionCtx) -> Result<()> {
    // Reference points (totals): GPT-3 3.14e23, GPT-4 about 2e25, and the 1e26 FLOP line above
    // which the 2023 US executive order required reporting.
    cx.record("gpt3_flops", 3.14e23, Unit::Flop)?;
    cx.record("gpt4_flops", 2e25, Unit::Flop)?;
    cx.record("reporting_threshold_flops", 1e26, Unit::Flop)?;
    // Speeds, from datasheets (dense): A100 bf16 and H100 SXM bf16.
    let a100 = peaks::datasheet_for("A100").map_or(f64::NAN, |p| p.bf16);
    cx.record("a100_flop_per_sec", a100, Unit::FlopPerSec)?;
    cx.record("h100_flop_per_sec", peaks::H100_SXM_BF16_DENSE, Unit::FlopPerSec)?;

    // 8 H100s running flat out for one week (the original calls it two weeks but computes one).
    let seconds = 60.0 * 60.0 * 24.0 * 7.0;
    cx.record("one_week_seconds", seconds, Unit::Seconds)?;
    let total_flops = 8.0 * seconds * peaks::H100_SXM_BF16_DENSE;
    cx.record("total_flops", total_flops, Unit::Flop)?;
    Ok(())
}
