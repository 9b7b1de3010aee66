//! Memory accounting: what a tensor is, what each element costs, and where it lives.

use serde_json::json;

use super::{SectionCtx, record};
use crate::device::cuda;
use crate::error::Result;
use crate::tensor::formats::{self, FloatFormat};
use crate::tensor::{DType, Tensor};
use crate::trace::Unit;

/// Tensors are the basic building block: parameters, gradients, optimizer state, data and
/// activations are all tensors. Here are the ways to make one.
pub fn tensors_basics(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::from_data(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], DType::F32)?;
    cx.record_tensor("x_from_data", &x)?;
    cx.record("x_from_data_shape", x.shape().to_vec(), Unit::None)?;
    let filled_shape = [4, 8];
    cx.record("filled_shape", filled_shape.to_vec(), Unit::None)?;
    let x = Tensor::zeros(&filled_shape, DType::F32)?; // 4x8 matrix of all zeros
    cx.record_tensor("x_zeros", &x)?;
    let x = Tensor::ones(&filled_shape, DType::F32)?; // 4x8 matrix of all ones
    cx.record_tensor("x_ones", &x)?;
    let x = Tensor::randn(&filled_shape, DType::F32, &mut cx.rng)?; // iid N(0, 1) samples, seeded
    cx.record_tensor("x_randn", &x)?;

    // `empty` promises memory, not values. Rust never hands out uninitialised memory, so ours
    // holds zeros; do not rely on that, fill it before use.
    let x = Tensor::empty(&filled_shape, DType::F32)?;
    cx.record("x_empty_nbytes", x.nbytes(), Unit::Bytes)?;
    cx.record(
        "x_empty_all_zero",
        x.to_vec_f64()?.iter().all(|&v| v == 0.0),
        Unit::None,
    )?;

    // A truncated normal redraws samples that fall outside [a, b].
    let (a, b) = (-2.0, 2.0);
    let x = Tensor::trunc_normal(&[4, 8], 0.0, 1.0, a, b, DType::F32, &mut cx.rng)?;
    cx.record_tensor("x_trunc_normal", &x)?;
    cx.record("trunc_normal_a", a, Unit::None)?;
    cx.record("trunc_normal_b", b, Unit::None)?;
    cx.record("trunc_normal_min", x.min_all()?.item()?, Unit::None)?;
    cx.record("trunc_normal_max", x.max_all()?.item()?, Unit::None)?;
    Ok(())
}

fn info_json(fmt: &FloatFormat) -> serde_json::Value {
    let i = fmt.info();
    json!({
        "bits": i.bits, "exponent_bits": i.exponent_bits, "mantissa_bits": i.mantissa_bits,
        "eps": i.eps, "min": i.min, "max": i.max,
        "smallest_normal": i.smallest_normal, "smallest_subnormal": i.smallest_subnormal,
        "resolution": i.resolution,
    })
}

/// Memory is (number of values) × (bytes per value). The dtype decides the second factor, and
/// also what can be represented at all.
pub fn tensors_memory(cx: &mut SectionCtx) -> Result<()> {
    // float32 (single precision): 1 sign bit, 8 exponent bits, 23 mantissa bits.
    let shape = [4, 8];
    cx.record("shape", shape.to_vec(), Unit::None)?;
    let x = Tensor::zeros(&shape, DType::F32)?;
    cx.record("dtype", x.dtype().name(), Unit::None)?;
    cx.record("numel", x.numel(), Unit::Count)?;
    cx.record("element_size", x.element_size(), Unit::Bytes)?;
    cx.record("bytes", x.nbytes(), Unit::Bytes)?;

    // One matrix of GPT-3's feed-forward layer, allocated for real.
    let (gpt3_d, gpt3_ffn_multiplier) = (12288, 4);
    cx.record("gpt3_d", gpt3_d, Unit::Count)?;
    cx.record("gpt3_ffn_multiplier", gpt3_ffn_multiplier, Unit::Count)?;
    let w = Tensor::empty(&[gpt3_ffn_multiplier * gpt3_d, gpt3_d], DType::F32)?;
    cx.record("gpt3_ffn_bytes", w.nbytes(), Unit::Bytes)?;
    drop(w);

    // float16 halves the memory, but its range is small: 1e-8 underflows to zero.
    let x = Tensor::zeros(&shape, DType::F16)?;
    cx.record("float16_element_size", x.element_size(), Unit::Bytes)?;
    let test_value = 1e-8;
    cx.record("test_value", test_value, Unit::None)?;
    let x = Tensor::from_data(&[test_value], DType::F16)?;
    cx.record("fp16_1e_8", x.item()?, Unit::None)?;

    // bfloat16 keeps float32's exponent range with fewer mantissa bits: 1e-8 survives, coarsely.
    let x = Tensor::from_data(&[test_value], DType::BF16)?;
    cx.record("bfloat16_element_size", x.element_size(), Unit::Bytes)?;
    cx.record("bf16_1e_8", x.item()?, Unit::None)?;

    // The numbers behind those behaviours, derived from each format's bit layout.
    cx.record("float32_info", info_json(&formats::FLOAT32), Unit::None)?;
    cx.record("float16_info", info_json(&formats::FLOAT16), Unit::None)?;
    cx.record("bfloat16_info", info_json(&formats::BFLOAT16), Unit::None)?;
    // fp8 (H100 tensor cores): E4M3 trades range for precision, E5M2 the other way round.
    cx.record("fp8_e4m3_info", info_json(&formats::FP8_E4M3), Unit::None)?;
    cx.record("fp8_e5m2_info", info_json(&formats::FP8_E5M2), Unit::None)?;
    let layouts: Vec<serde_json::Value> = formats::ALL_FORMATS
        .iter()
        .map(|f| json!({"name": f.name, "sign": 1, "exponent": f.exponent_bits, "mantissa": f.mantissa_bits}))
        .collect();
    cx.record("bit_layouts", serde_json::Value::Array(layouts), Unit::None)?;
    Ok(())
}

/// Tensors start in CPU memory; using a GPU means copying them into its memory, and the
/// allocator's count is how we see what that cost.
pub fn tensors_on_gpus(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::zeros(&[32, 32], DType::F32)?; // on the CPU, like every new tensor
    cx.record("x_device", x.device().to_string(), Unit::None)?;
    cx.record("x_shape", x.shape().to_vec(), Unit::Count)?;
    cx.record("elements", x.numel(), Unit::Count)?;
    cx.record("bytes_per_float", x.element_size(), Unit::Bytes)?;
    // What the allocator should count for x's copy and a second tensor like it.
    let expected_bytes = 2 * x.numel() * x.element_size();
    record!(cx, expected_bytes, Unit::Bytes)?;
    let Some(gpu) = cx.device.cuda().cloned() else {
        cx.record("cuda_available", false, Unit::None)?;
        let reason = cx
            .cuda_unavailable_reason
            .clone()
            .unwrap_or_else(|| "not recorded".into());
        cx.record("cuda_unavailable_reason", reason, Unit::None)?;
        return Ok(());
    };
    cx.record("cuda_available", true, Unit::None)?;
    cx.record("num_gpus", cuda::device_count()?, Unit::Count)?;
    let p = gpu.props();
    let properties = json!({
        "name": p.name, "total_memory": p.total_memory, "multi_processor_count": p.sm_count,
        "compute_capability": format!("{}.{}", p.compute_capability.0, p.compute_capability.1),
        "l2_cache_size": p.l2_cache_bytes,
    });
    record!(cx, properties, Unit::None)?;

    // What the allocator counts (bytes held by live tensors), and what the driver reports free.
    let memory_allocated = gpu.memory_stats().allocated;
    record!(cx, memory_allocated, Unit::Bytes)?;
    let (driver_free_before, _) = gpu.driver_memory()?;

    let y = x.to_device(&cx.device)?; // move the CPU tensor to the GPU (a copy)
    let z = Tensor::zeros_on(&[32, 32], DType::F32, &cx.device)?; // create one directly there
    cx.record("y_device", y.device().to_string(), Unit::None)?;
    cx.record("z_device", z.device().to_string(), Unit::None)?;
    let new_memory_allocated = gpu.memory_stats().allocated;
    record!(cx, new_memory_allocated, Unit::Bytes)?;
    let memory_used = new_memory_allocated - memory_allocated;
    record!(cx, memory_used, Unit::Bytes)?; // 2 x (32 x 32 x 4 bytes)

    // The driver hands out memory in pages (2 MiB), and the stream-ordered pool behind each
    // allocation keeps what it reserved for reuse: its free-memory drop is a different number.
    let (driver_free_after, total) = gpu.driver_memory()?;
    let driver_used = driver_free_before as i64 - driver_free_after as i64;
    cx.record("driver_total_memory", total, Unit::Bytes)?;
    cx.record("driver_memory_used", driver_used, Unit::Bytes)?;
    cx.record(
        "driver_over_allocator",
        driver_used as f64 / memory_used as f64,
        Unit::Ratio,
    )?;
    cx.record("stream_ordered_pool", gpu.context().has_async_alloc(), Unit::None)?;
    drop((y, z));
    cx.record("memory_allocated_after_free", gpu.memory_stats().allocated, Unit::Bytes)?;
    Ok(())
}
