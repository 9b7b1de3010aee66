//! Napkin math: the two questions the lecture opens with, answered from first principles.

use crate::device::peaks;
use crate::error::Result;
use crate::lecture::givens::{MAX_COUNT, Narrower, given};
use crate::lecture::what_if::Cost;
use crate::lecture::{SectionCtx, record};

/// How long does it take to train a 70B-parameter dense transformer on 15T tokens on 1024 H100s,
/// and what is the largest model that fits on 8 H100s with AdamW (naively)?
pub fn motivating_questions(cx: &mut SectionCtx) -> Result<()> {
    // Training cost: 6 FLOPs per parameter per token (2 forward + 4 backward; see gradients_flops).
    let model_parameters = given!(cx, model_parameters: Positive = 70e9, count, "parameters of the dense transformer")?;
    let num_tokens = given!(cx, num_tokens: Positive = 15e12, count, "tokens it is trained on")?;
    let forward_flop_per_parameter_token = 2.0;
    record!(cx, given forward_flop_per_parameter_token, flop)?;
    let backward_flop_per_parameter_token = 4.0;
    record!(cx, given backward_flop_per_parameter_token, flop)?;
    let flop_per_parameter_token = forward_flop_per_parameter_token + backward_flop_per_parameter_token;
    record!(cx, computed flop_per_parameter_token, flop)?;
    let total_flops = flop_per_parameter_token * model_parameters * num_tokens;
    record!(cx, computed total_flops, flop)?;

    let h100_flop_per_sec = peaks::H100_SXM_BF16_DENSE; // datasheet, dense (no sparsity)
    record!(cx, given h100_flop_per_sec, flop_per_sec)?;
    let mfu = given!(cx, mfu: Fraction = 0.5, ratio, "share of the datasheet peak the run is assumed to get")?;
    let num_gpus = given!(cx, num_gpus: Count = 1024, count, "H100s training the model")?;
    let flops_per_day = h100_flop_per_sec * mfu * num_gpus as f64 * 60.0 * 60.0 * 24.0;
    record!(cx, computed flops_per_day, flop)?;
    let days = total_flops / flops_per_day;
    record!(cx, computed days)?;

    // Memory: parameters, gradients and AdamW's two moments, all float32 (the 2025 answer).
    let memory_num_gpus = given!(cx, memory_num_gpus: Count = 8, count, "H100s whose memory holds the training state")?;
    let h100_bytes = given!(cx, h100_bytes: Positive = 80e9, bytes, "memory of one H100")?;
    let bytes_per_float32 = 4;
    record!(cx, given bytes_per_float32, bytes)?;
    let bytes_per_parameter = bytes_per_float32 + bytes_per_float32 + (bytes_per_float32 + bytes_per_float32);
    record!(cx, computed bytes_per_parameter, bytes)?;
    let num_parameters = (memory_num_gpus as f64 * h100_bytes) / bytes_per_parameter as f64;
    record!(cx, computed num_parameters, count)?;
    // The 2026 answer: parameters and gradients in a narrower format (bf16 by default), AdamW's
    // moments still float32 because they average over many steps. The largest whole model fits.
    let param_grad_bytes =
        given!(cx, param_grad_bytes: Count = 2, bytes, "bytes of one parameter and of one gradient")?;
    let mixed_bytes_per_parameter = param_grad_bytes + param_grad_bytes + (bytes_per_float32 + bytes_per_float32);
    record!(cx, computed mixed_bytes_per_parameter, bytes)?;
    let mixed_num_parameters = ((memory_num_gpus as f64 * h100_bytes) / mixed_bytes_per_parameter as f64).floor();
    record!(cx, computed mixed_num_parameters, count)?;
    // Turned round, for the first question's model: the memory its training state needs, and
    // how many of these GPUs that fills.
    let training_state_bytes = bytes_per_parameter as f64 * model_parameters;
    record!(cx, computed training_state_bytes, bytes)?;
    let gpus_for_training_state = (training_state_bytes / h100_bytes).ceil();
    record!(cx, computed gpus_for_training_state, count)?;

    // The same memory question for the device this run is on (activations still ignored).
    if let Some(this_device_bytes) = cx.device.memory_bytes() {
        record!(cx, device this_device_bytes, bytes)?;
        let this_device_num_parameters = this_device_bytes as f64 / bytes_per_parameter as f64;
        record!(cx, device this_device_num_parameters, count)?;
    }
    Ok(())
}

/// What a what-if of this section needs (`what_if::check_cost`), with each given as `get` reads it.
pub(super) fn cost(_get: &dyn Fn(&str) -> f64) -> Cost {
    // Napkin math: a few multiplications, no tensor.
    Cost {
        bytes: 0.0,
        flops: 0.0,
        trace_bytes: 0.0,
    }
}

/// What this section asks of two givens beyond their types (`givens::Narrower`).
pub(super) const NARROWERS: &[Narrower] = &[
    Narrower {
        // num_parameters = memory_num_gpus × h100_bytes / 16 bytes a parameter is a count, whole
        // in the trace only when the bytes are a multiple of 16 (`h100_bytes=1` made 0.5
        // parameters).
        name: "h100_bytes",
        words: "a whole number of bytes from 16 to 2⁵³ (about 9.0e15), a multiple of 16",
        holds: |x| (16.0..=MAX_COUNT).contains(&x) && x % 16.0 == 0.0,
    },
    Narrower {
        // The bytes of a float format a parameter and its gradient can be kept in: fp8, bf16 or
        // fp16, fp32, fp64.
        name: "param_grad_bytes",
        words: "the bytes of a float format: 1, 2, 4 or 8",
        holds: |x| [1.0, 2.0, 4.0, 8.0].contains(&x),
    },
];
