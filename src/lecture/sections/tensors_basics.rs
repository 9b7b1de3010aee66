//! Section `tensors_basics`: Tensors: the basics.

use crate::error::Result;
use crate::lecture::{SectionCtx, check, record};
use crate::tensor::{DType, Tensor};

/// Tensors are the basic building block: parameters, gradients, optimizer state, data and
/// activations are all tensors. Here are the ways to make one.
pub fn tensors_basics(cx: &mut SectionCtx) -> Result<()> {
    // What tensors hold, at scale: every parameter of DeepSeek v3.2 (685B on its Hugging Face
    // page: the 671B of the model and the 14B of its multi-token prediction module).
    record!(cx, given deepseek_v3_2_parameters = 685e9, count)?;

    // A tensor's rank is its number of dimensions: a vector, a matrix, and beyond.
    let x = Tensor::zeros(&[4], DType::F32)?; // rank 1: a vector
    record!(cx, computed rank1_rank = x.ndim())?;
    let x = Tensor::zeros(&[4, 8], DType::F32)?; // rank 2: a matrix
    record!(cx, computed rank2_rank = x.ndim())?;
    let x = Tensor::zeros(&[4, 8, 2], DType::F32)?;
    record!(cx, computed rank3_rank = x.ndim())?;
    // A Transformer's attention holds rank 4: batch, sequence, heads, dimension per head.
    let (batch, seq, heads, head_dim) = (32, 16, 16, 64);
    record!(cx, given batch)?;
    record!(cx, given seq)?;
    record!(cx, given heads)?;
    record!(cx, given head_dim)?;
    let x = Tensor::zeros(&[batch, seq, heads, head_dim], DType::F32)?;
    record!(cx, computed rank4_shape = x.shape())?;
    record!(cx, computed rank4_rank = x.ndim())?;
    record!(cx, computed rank4_numel = x.numel(), count)?;
    check!(cx, numel_is_the_product: x.numel() == batch * seq * heads * head_dim)?;

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
    let x_empty_all_zero = x.to_vec_f64()?.iter().all(|&v| v == 0.0);
    record!(cx, computed x_empty_all_zero)?;
    check!(cx, empty_holds_zeros: x_empty_all_zero)?;

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
