//! Memory accounting: what a tensor is, what each element costs, and where it lives.

use serde_json::json;

use crate::error::Result;
use crate::tensor::formats::{self, FloatFormat};
use crate::tensor::{DType, Tensor};
use crate::trace::{SectionCtx, Unit};

/// Tensors are the basic building block: parameters, gradients, optimizer state, data and
/// activations are all tensors. Here are the ways to make one.
pub fn tensors_basics(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::from_data(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], DType::F32)?;
    cx.record_tensor("x_from_data", &x)?;
    let x = Tensor::zeros(&[4, 8], DType::F32)?; // 4x8 matrix of all zeros
    cx.record_tensor("x_zeros", &x)?;
    let x = Tensor::ones(&[4, 8], DType::F32)?; // 4x8 matrix of all ones
    cx.record_tensor("x_ones", &x)?;
    let x = Tensor::randn(&[4, 8], DType::F32, &mut cx.rng)?; // iid N(0, 1) samples, seeded
    cx.record_tensor("x_randn", &x)?;

    // `empty` promises memory, not values. Rust never hands out uninitialised memory, so ours
    // holds zeros; do not rely on that, fill it before use.
    let x = Tensor::empty(&[4, 8], DType::F32)?;
    cx.record("x_empty_nbytes", x.nbytes(), Unit::Bytes)?;
    cx.record("x_empty_all_zero", x.to_vec_f64()?.iter().all(|&v| v == 0.0), Unit::None)?;

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
    let x = Tensor::zeros(&[4, 8], DType::F32)?;
    cx.record("dtype", x.dtype().name(), Unit::None)?;
    cx.record("numel", x.numel(), Unit::Count)?;
    cx.record("element_size", x.element_size(), Unit::Bytes)?;
    cx.record("bytes", x.nbytes(), Unit::Bytes)?;

    // One matrix of GPT-3's feed-forward layer, allocated for real.
    let w = Tensor::empty(&[4 * 12288, 12288], DType::F32)?;
    cx.record("gpt3_ffn_bytes", w.nbytes(), Unit::Bytes)?;
    drop(w);

    // float16 halves the memory, but its range is small: 1e-8 underflows to zero.
    let x = Tensor::zeros(&[4, 8], DType::F16)?;
    cx.record("float16_element_size", x.element_size(), Unit::Bytes)?;
    let x = Tensor::from_data(&[1e-8], DType::F16)?;
    cx.record("fp16_1e_8", x.item()?, Unit::None)?;

    // bfloat16 keeps float32's exponent range with fewer mantissa bits: 1e-8 survives, coarsely.
    let x = Tensor::from_data(&[1e-8], DType::BF16)?;
    cx.record("bfloat16_element_size", x.element_size(), Unit::Bytes)?;
    cx.record("bf16_1e_8", x.item()?, Unit::None)?;

    // The numbers behind those behaviours, derived from each format's bit layout.
    cx.record("float32_info", info_json(&formats::FLOAT32), Unit::None)?;
    cx.record("float16_info", info_json(&formats::FLOAT16), Unit::None)?;
    cx.record("bfloat16_info", info_json(&formats::BFLOAT16), Unit::None)?;
    // fp8 (H100 tensor cores): E4M3 trades range for precision, E5M2 the other way round.
    cx.record("fp8_e4m3_info", info_json(&formats::FP8_E4M3), Unit::None)?;
    cx.record("fp8_e5m2_info", info_json(&formats::FP8_E5M2), Unit::None)?;
    let layouts: Vec<serde_json::Value> =
        formats::ALL_FORMATS.iter().map(|f| json!({"name": f.name, "sign": 1, "exponent": f.exponent_bits, "mantissa": f.mantissa_bits})).collect();
    cx.record("bit_layouts", serde_json::Value::Array(layouts), Unit::None)?;
    Ok(())
}

/// Tensors start in CPU memory; using a GPU means copying them into its memory, and the
/// allocator's count is how we see what that cost.
pub fn tensors_on_gpus(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::zeros(&[32, 32], DType::F32)?;
    cx.record("x_device", x.device().to_string(), Unit::None)?;
    let on_gpu = !cx.device.is_cpu();
    cx.record("cuda_available", on_gpu, Unit::None)?;
    if !on_gpu {
        let reason = cx.cuda_unavailable_reason.clone().unwrap_or_else(|| "not recorded".into());
        cx.record("cuda_unavailable_reason", reason, Unit::None)?;
    }
    Ok(())
}
