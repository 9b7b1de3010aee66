//! Section `tensor_matmul`: Matrix multiplication.

use crate::error::Result;
use crate::lecture::{SectionCtx, record};
use crate::tensor::{DType, Tensor};

/// Matrix multiplication, the bread and butter of deep learning; leading dimensions are batch
/// dimensions and broadcast.
pub fn tensor_matmul(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::ones(&[16, 32], DType::F32)?;
    let w = Tensor::ones(&[32, 2], DType::F32)?;
    record!(cx, given x_shape = x.shape())?;
    record!(cx, given w_shape = w.shape())?;
    let y = x.matmul(&w)?;
    record!(cx, computed y_shape = y.shape())?;
    record!(cx, computed y_0_0 = y.get(&[0, 0])?)?; // a sum of 32 ones

    // For each of 4 batch elements and 8 tokens, a 16x32 by 32x2 product.
    let x = Tensor::ones(&[4, 8, 16, 32], DType::F32)?;
    record!(cx, given batched_x_shape = x.shape())?;
    let y = x.matmul(&w)?;
    record!(cx, computed batched_y_shape = y.shape())?;
    record!(cx, computed batched_y_max = y.max_all()?.item()?)?;
    record!(cx, computed batched_y_min = y.min_all()?.item()?)?;
    Ok(())
}
