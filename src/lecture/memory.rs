//! Memory accounting: what a tensor is, what each element costs, and where it lives.

use serde_json::json;

use super::{SectionCtx, record, sections};
use crate::device::cuda;
use crate::error::Result;
use crate::tensor::formats::{self, FloatFormat};
use crate::tensor::{DType, Tensor};

/// Tensors are the basic building block: parameters, gradients, optimizer state, data and
/// activations are all tensors. Here are the ways to make one.
pub fn tensors_basics(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::from_data(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], DType::F32)?;
    record!(cx, given x_from_data = &x)?;
    record!(cx, computed x_from_data_shape = x.shape())?;
    let filled_shape = [4, 8];
    record!(cx, given filled_shape = filled_shape.as_slice())?;
    let x = Tensor::zeros(&filled_shape, DType::F32)?; // 4x8 matrix of all zeros
    record!(cx, computed x_zeros = &x)?;
    let x = Tensor::ones(&filled_shape, DType::F32)?; // 4x8 matrix of all ones
    record!(cx, computed x_ones = &x)?;
    let x = Tensor::randn(&filled_shape, DType::F32, &mut cx.rng)?; // iid N(0, 1) samples, seeded
    record!(cx, computed x_randn = &x)?;

    // `empty` promises memory, not values. Rust never hands out uninitialised memory, so ours
    // holds zeros; do not rely on that, fill it before use.
    let x = Tensor::empty(&filled_shape, DType::F32)?;
    record!(cx, computed x_empty_nbytes = x.nbytes(), bytes)?;
    record!(cx, computed x_empty_all_zero = x.to_vec_f64()?.iter().all(|&v| v == 0.0))?;

    // A truncated normal redraws samples that fall outside [a, b].
    let (a, b) = (-2.0, 2.0);
    let x = Tensor::trunc_normal(&[4, 8], 0.0, 1.0, a, b, DType::F32, &mut cx.rng)?;
    record!(cx, computed x_trunc_normal = &x)?;
    record!(cx, given trunc_normal_a = a)?;
    record!(cx, given trunc_normal_b = b)?;
    record!(cx, computed trunc_normal_min = x.min_all()?.item()?)?;
    record!(cx, computed trunc_normal_max = x.max_all()?.item()?)?;
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
    record!(cx, given shape = shape.as_slice())?;
    let x = Tensor::zeros(&shape, DType::F32)?;
    record!(cx, computed dtype = x.dtype().name())?;
    record!(cx, computed numel = x.numel())?;
    record!(cx, computed element_size = x.element_size(), bytes)?;
    record!(cx, computed bytes = x.nbytes(), bytes)?;

    // One matrix of GPT-3's feed-forward layer, allocated for real.
    let (gpt3_d, gpt3_ffn_multiplier) = (12288, 4);
    record!(cx, given gpt3_d)?;
    record!(cx, given gpt3_ffn_multiplier)?;
    let w = Tensor::empty(&[gpt3_ffn_multiplier * gpt3_d, gpt3_d], DType::F32)?;
    record!(cx, computed gpt3_ffn_bytes = w.nbytes(), bytes)?;
    drop(w);

    // float16 halves the memory, but its range is small: 1e-8 underflows to zero.
    let x = Tensor::zeros(&shape, DType::F16)?;
    record!(cx, computed float16_element_size = x.element_size(), bytes)?;
    let test_value = 1e-8;
    record!(cx, given test_value)?;
    let x = Tensor::from_data(&[test_value], DType::F16)?;
    record!(cx, computed fp16_1e_8 = x.item()?)?;

    // bfloat16 keeps float32's exponent range with fewer mantissa bits: 1e-8 survives, coarsely.
    let x = Tensor::from_data(&[test_value], DType::BF16)?;
    record!(cx, computed bfloat16_element_size = x.element_size(), bytes)?;
    record!(cx, computed bf16_1e_8 = x.item()?)?;

    // The numbers behind those behaviours, derived from each format's bit layout.
    record!(cx, computed float32_info = info_json(&formats::FLOAT32))?;
    record!(cx, computed float16_info = info_json(&formats::FLOAT16))?;
    record!(cx, computed bfloat16_info = info_json(&formats::BFLOAT16))?;
    // fp8 (H100 tensor cores): E4M3 trades range for precision, E5M2 the other way round.
    record!(cx, computed fp8_e4m3_info = info_json(&formats::FP8_E4M3))?;
    record!(cx, computed fp8_e5m2_info = info_json(&formats::FP8_E5M2))?;
    let layouts: Vec<serde_json::Value> = formats::ALL_FORMATS
        .iter()
        .map(|f| json!({"name": f.name, "sign": 1, "exponent": f.exponent_bits, "mantissa": f.mantissa_bits}))
        .collect();
    record!(cx, given bit_layouts = serde_json::Value::Array(layouts))?;
    Ok(())
}

/// Tensors start in CPU memory; using a GPU means copying them into its memory, and the
/// allocator's count is how we see what that cost.
pub fn tensors_on_gpus(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::zeros(&[32, 32], DType::F32)?; // on the CPU, like every new tensor
    record!(cx, computed x_device = x.device().to_string())?;
    record!(cx, given x_shape = x.shape())?;
    record!(cx, computed elements = x.numel())?;
    record!(cx, computed bytes_per_float = x.element_size(), bytes)?;
    // What the allocator should count for x's copy and a second tensor like it.
    let expected_bytes = 2 * x.numel() * x.element_size();
    record!(cx, computed expected_bytes, bytes)?;
    let Some(gpu) = cx.device.cuda().cloned() else {
        record!(cx, device cuda_available = false)?;
        let cuda_unavailable_reason = cx
            .cuda_unavailable_reason
            .clone()
            .unwrap_or_else(|| "not recorded".into());
        record!(cx, device cuda_unavailable_reason)?;
        return Ok(());
    };
    record!(cx, device cuda_available = true)?;
    record!(cx, device num_gpus = cuda::device_count()?)?;
    let p = gpu.props();
    let properties = json!({
        "name": p.name, "total_memory": p.total_memory, "multi_processor_count": p.sm_count,
        "compute_capability": format!("{}.{}", p.compute_capability.0, p.compute_capability.1),
        "l2_cache_size": p.l2_cache_bytes,
    });
    record!(cx, device properties)?;

    // What the allocator counts (bytes held by live tensors), and what the driver reports free.
    let memory_allocated = gpu.memory_stats().allocated;
    record!(cx, computed memory_allocated, bytes)?;
    let (driver_free_before, _) = gpu.driver_memory()?;

    let y = x.to_device(&cx.device)?; // move the CPU tensor to the GPU (a copy)
    let z = Tensor::zeros_on(&[32, 32], DType::F32, &cx.device)?; // create one directly there
    record!(cx, computed y_device = y.device().to_string())?;
    record!(cx, computed z_device = z.device().to_string())?;
    let new_memory_allocated = gpu.memory_stats().allocated;
    record!(cx, computed new_memory_allocated, bytes)?;
    let memory_used = new_memory_allocated - memory_allocated;
    record!(cx, computed memory_used, bytes)?; // 2 x (32 x 32 x 4 bytes)

    // The driver hands out memory in pages (2 MiB), and the stream-ordered pool behind each
    // allocation keeps what it reserved for reuse: its free-memory drop is a different number.
    let (driver_free_after, total) = gpu.driver_memory()?;
    let driver_used = driver_free_before as i64 - driver_free_after as i64;
    record!(cx, device driver_total_memory = total, bytes)?;
    record!(cx, device driver_memory_used = driver_used, bytes)?;
    record!(cx, device driver_over_allocator = driver_used as f64 / memory_used as f64, ratio)?;
    record!(cx, device stream_ordered_pool = gpu.context().has_async_alloc())?;
    drop((y, z));
    record!(cx, computed memory_allocated_after_free = gpu.memory_stats().allocated, bytes)?;
    Ok(())
}

// The sections of this file, in lecture order, with the titles their chapters have.
sections! {
    tensors_basics => "Tensors: the basics",
    tensors_memory => "Tensors: memory",
    tensors_on_gpus => "Tensors on GPUs",
}
