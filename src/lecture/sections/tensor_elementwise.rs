//! Section `tensor_elementwise`: Elementwise operations.

use crate::error::Result;
use crate::lecture::{SectionCtx, check, record};
use crate::tensor::{DType, Tensor};

/// Elementwise operations apply to each element independently; the output has the input's shape.
pub fn tensor_elementwise(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::from_data(&[1.0, 4.0, 9.0], DType::F32)?;
    record!(cx, given x)?;
    record!(cx, computed pow_2 = &x.pow_scalar(2.0)?)?;
    record!(cx, computed sqrt = &x.sqrt()?)?;
    let rsqrt = x.rsqrt()?; // 1 / sqrt(x)
    record!(cx, computed rsqrt)?;
    // One over the square root of 9, in float32: a third has no exact float32 form, so it is the
    // nearest float32, within float32's relative precision.
    let one_third = rsqrt.get(&[2])?;
    check!(cx, a_third_is_not_exact: one_third != 1.0 / 3.0)?;
    check!(cx, a_third_to_float32_precision: (one_third * 3.0 - 1.0).abs() < 1e-6)?;
    record!(cx, computed x_plus_x = &x.add(&x)?)?;
    record!(cx, computed x_times_2 = &x.mul_scalar(2.0)?)?;
    record!(cx, computed x_div_0_5 = &x.div_scalar(0.5)?)?;
    // triu keeps the upper triangle: the building block of a causal attention mask.
    let ones = Tensor::ones(&[3, 3], DType::F32)?;
    record!(cx, given ones_shape = ones.shape())?;
    record!(cx, computed triu = &ones.triu(0)?)?;
    Ok(())
}
