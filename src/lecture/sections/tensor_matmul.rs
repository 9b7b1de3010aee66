//! Section `tensor_matmul`: Matrix multiplication.

use crate::error::Result;
use crate::lecture::{SectionCtx, check, record};
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
    let y_0_0 = y.get(&[0, 0])?;
    record!(cx, computed y_0_0)?; // a sum of 32 ones
    check!(cx, entry_counts_inner: y_0_0 == x.dim(1)? as f64)?;

    // For each of 4 batch elements and 8 tokens, a 16x32 by 32x2 product.
    let x = Tensor::ones(&[4, 8, 16, 32], DType::F32)?;
    record!(cx, given batched_x_shape = x.shape())?;
    let y = x.matmul(&w)?;
    record!(cx, computed batched_y_shape = y.shape())?;
    let batched_y_max = y.max_all()?.item()?;
    record!(cx, computed batched_y_max)?;
    let batched_y_min = y.min_all()?.item()?;
    record!(cx, computed batched_y_min)?;
    // Every entry sums the 32 products of one row and one column, whatever batch it is in.
    let inner = x.dim(3)? as f64;
    check!(cx, every_entry_counts_inner: (batched_y_min, batched_y_max) == (inner, inner))?;
    Ok(())
}
