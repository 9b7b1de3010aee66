//! Napkin math: the two questions the lecture opens with, answered from first principles.

use super::{SectionCtx, record};
use crate::device::peaks;
use crate::error::Result;
use crate::trace::Unit;

/// How long does it take to train a 70B-parameter dense transformer on 15T tokens on 1024 H100s,
/// and what is the largest model that fits on 8 H100s with AdamW (naively)?
pub fn motivating_questions(cx: &mut SectionCtx) -> Result<()> {
    // Training cost: 6 FLOPs per parameter per token (2 forward + 4 backward; see gradients_flops).
    let model_parameters = 70e9;
    record!(cx, model_parameters, Unit::Count)?;
    let num_tokens = 15e12;
    record!(cx, num_tokens, Unit::Count)?;
    let forward_flop_per_parameter_token = 2.0;
    record!(cx, forward_flop_per_parameter_token, Unit::Flop)?;
    let backward_flop_per_parameter_token = 4.0;
    record!(cx, backward_flop_per_parameter_token, Unit::Flop)?;
    let flop_per_parameter_token = forward_flop_per_parameter_token + backward_flop_per_parameter_token;
    record!(cx, flop_per_parameter_token, Unit::Flop)?;
    let total_flops = flop_per_parameter_token * model_parameters * num_tokens;
    record!(cx, total_flops, Unit::Flop)?;

    let h100_flop_per_sec = peaks::H100_SXM_BF16_DENSE; // datasheet, dense (no sparsity)
    record!(cx, untimed h100_flop_per_sec, Unit::FlopPerSec)?;
    let mfu = 0.5;
    record!(cx, mfu, Unit::Ratio)?;
    let num_gpus = 1024;
    record!(cx, num_gpus, Unit::Count)?;
    let flops_per_day = h100_flop_per_sec * mfu * num_gpus as f64 * 60.0 * 60.0 * 24.0;
    record!(cx, flops_per_day, Unit::Flop)?;
    let days = total_flops / flops_per_day;
    record!(cx, days, Unit::None)?;

    // Memory: parameters, gradients and AdamW's two moments, all float32.
    let memory_num_gpus = 8;
    record!(cx, memory_num_gpus, Unit::Count)?;
    let h100_bytes = 80e9;
    record!(cx, h100_bytes, Unit::Bytes)?;
    let bytes_per_float32 = 4;
    record!(cx, bytes_per_float32, Unit::Bytes)?;
    let bytes_per_parameter = bytes_per_float32 + bytes_per_float32 + (bytes_per_float32 + bytes_per_float32);
    record!(cx, bytes_per_parameter, Unit::Bytes)?;
    let largest_model = (memory_num_gpus as f64 * h100_bytes) / bytes_per_parameter as f64;
    cx.record("num_parameters", largest_model, Unit::Count)?;

    // The same memory question for the device this run is on (activations still ignored).
    let here_bytes = cx.device.memory_bytes();
    if let Some(bytes) = here_bytes {
        cx.record("this_device_bytes", bytes, Unit::Bytes)?;
        cx.record(
            "this_device_num_parameters",
            bytes as f64 / bytes_per_parameter as f64,
            Unit::Count,
        )?;
    }
    Ok(())
}
