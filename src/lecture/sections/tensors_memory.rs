//! Section `tensors_memory`: Tensors: memory.

use serde_json::json;

use crate::device::Device;
use crate::error::Result;
use crate::lecture::trainer::{Batches, LinearData, Precision, train};
use crate::lecture::{SectionCtx, check, record};
use crate::nn::Cruncher;
use crate::optim::Sgd;
use crate::tensor::formats::{self, FloatFormat};
use crate::tensor::{DType, Tensor, nvfp4};

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
    let float16_element_size = x.element_size();
    record!(cx, computed float16_element_size, bytes)?;
    check!(cx, float16_is_half_float32: 2 * float16_element_size == formats::FLOAT32.bits() as usize / 8)?;
    let test_value = 1e-8;
    record!(cx, given test_value)?;
    let x = Tensor::from_data(&[test_value], DType::F16)?;
    let fp16_1e_8 = x.item()?;
    record!(cx, computed fp16_1e_8)?;
    check!(cx, fp16_underflows: fp16_1e_8 == 0.0)?;

    // bfloat16 keeps float32's exponent range with fewer mantissa bits: 1e-8 survives, coarsely.
    let x = Tensor::from_data(&[test_value], DType::BF16)?;
    record!(cx, computed bfloat16_element_size = x.element_size(), bytes)?;
    let bf16_1e_8 = x.item()?;
    record!(cx, computed bf16_1e_8)?;
    check!(cx, bf16_keeps_it: bf16_1e_8 > 0.0)?;

    // The numbers behind those behaviours, derived from each format's bit layout.
    record!(cx, computed float32_info = info_json(&formats::FLOAT32))?;
    record!(cx, computed float16_info = info_json(&formats::FLOAT16))?;
    record!(cx, computed bfloat16_info = info_json(&formats::BFLOAT16))?;
    check!(cx, bf16_has_float32_exponent: formats::BFLOAT16.exponent_bits == formats::FLOAT32.exponent_bits)?;
    check!(cx, bf16_as_wide_as_float16: formats::BFLOAT16.bits() == formats::FLOAT16.bits())?;
    // fp8 (H100 tensor cores): E4M3 trades range for precision, E5M2 the other way round.
    record!(cx, computed fp8_e4m3_info = info_json(&formats::FP8_E4M3))?;
    record!(cx, computed fp8_e5m2_info = info_json(&formats::FP8_E5M2))?;
    let layouts: Vec<serde_json::Value> = formats::ALL_FORMATS
        .iter()
        .map(|f| json!({"name": f.name, "sign": 1, "exponent": f.exponent_bits, "mantissa": f.mantissa_bits}))
        .collect();
    record!(cx, given bit_layouts = serde_json::Value::Array(layouts))?;

    // fp4 (Blackwell, NVFP4): E2M1 has 15 values, listed here from its 16 bit patterns.
    record!(cx, computed fp4_e2m1_info = info_json(&formats::FP4_E2M1))?;
    let fp4_values = formats::FP4_E2M1.finite_values().unwrap_or_default();
    record!(cx, computed fp4_values)?;
    // Rounding into it: to the nearest value, a tie to the even mantissa, past 6 to 6.
    let fp4_rounding_inputs = vec![0.25, 0.75, 1.25, 1.75, 2.5, 2.6, 3.5, 5.0, 7.0, -0.3];
    record!(cx, given fp4_rounding_inputs = fp4_rounding_inputs.clone())?;
    let fp4_rounded: Vec<f64> = fp4_rounding_inputs
        .iter()
        .map(|&x| formats::round_to_format(x, &formats::FP4_E2M1))
        .collect();
    record!(cx, computed fp4_rounded)?;
    // NVFP4 makes them usable with two scales: an E4M3 one per block of 16, a float32 one per
    // tensor. Put to work on a real tensor: the first layer of the Cruncher the mixed-precision
    // chapter trains, trained the same way (float32, SGD), as a weight a checkpoint would keep.
    let trained = trained_cruncher_layer(cx)?;
    record!(cx, computed trained_layer_shape = trained.shape())?;
    let w = trained.to_vec_f64()?;
    record!(cx, given nvfp4_block = nvfp4::BLOCK)?;
    let q = nvfp4::quantize(&w)?;
    let nvfp4_bits_per_parameter = q.bits_per_value();
    record!(cx, computed nvfp4_bits_per_parameter)?;
    record!(cx, computed nvfp4_relative_error = nvfp4::relative_error(&w, &q.dequantize()))?;
    // fp8 E4M3 with one float32 scale for the tensor, and bf16 as it is (no scale).
    let (fp8, _) = nvfp4::per_tensor_round_trip(&w, &formats::FP8_E4M3)?;
    let fp8_bits_per_parameter = (formats::FP8_E4M3.bits() as usize * w.len() + 32) as f64 / w.len() as f64;
    record!(cx, computed fp8_bits_per_parameter)?;
    record!(cx, computed fp8_relative_error = nvfp4::relative_error(&w, &fp8))?;
    let bf16: Vec<f64> = trained.to_dtype(DType::BF16)?.to_vec_f64()?;
    let bf16_bits_per_parameter = (8 * DType::BF16.size_in_bytes()) as f64;
    record!(cx, computed bf16_bits_per_parameter)?;
    check!(cx, nvfp4_fewer_bits_than_fp8: nvfp4_bits_per_parameter < fp8_bits_per_parameter)?;
    check!(cx, fp8_fewer_bits_than_bf16: fp8_bits_per_parameter < bf16_bits_per_parameter)?;
    record!(cx, computed bf16_relative_error = nvfp4::relative_error(&w, &bf16))?;
    Ok(())
}

/// The mixed-precision chapter's model (32 wide, two layers) trained as it trains it in float32:
/// 300 SGD steps at 0.01 on batches of 32 from a random linear function. Its first layer's weight.
fn trained_cruncher_layer(cx: &mut SectionCtx) -> Result<Tensor> {
    let (d, num_layers, batch_size, steps, lr) = (32, 2, 32, 300, 0.01);
    let true_w = Tensor::randn(&[d], DType::F32, &mut cx.rng)?.div_scalar((d as f64).sqrt())?;
    let data = LinearData {
        true_w,
        device: Device::Cpu,
        batch_size,
    };
    let model = Cruncher::new(d, num_layers, &mut cx.rng.fork())?;
    let mut optimizer = Sgd::new(&model, lr)?;
    let mut batches = Batches::copy_of(&cx.rng.fork());
    train(&model, &mut optimizer, &data, &mut batches, 0..steps, Precision::Fp32)?;
    Ok(model.layers[0].weight.value().clone())
}
