//! Tensor operations: storage and strides, views that share memory, copies that do not,
//! elementwise ops and matrix multiplication.

use super::{SectionCtx, record};
use crate::error::Result;
use crate::tensor::{DType, Tensor};
use crate::trace::Unit;

/// A tensor is a pointer into storage plus strides: how far to jump in storage for one step
/// along each dimension.
pub fn tensor_storage(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::arange(16, DType::F32)?.view(&[4, 4])?;
    record!(cx, x)?;
    cx.record("shape", x.shape().to_vec(), Unit::Count)?;
    cx.record("stride", x.strides().to_vec(), Unit::Count)?;
    // Element (row, column) sits at storage position row·stride[0] + column·stride[1].
    let (row, column) = (1, 2);
    record!(cx, row, Unit::Count)?;
    record!(cx, column, Unit::Count)?;
    let index = row * x.strides()[0] + column * x.strides()[1];
    record!(cx, index, Unit::Count)?;
    cx.record("element", x.get(&[row, column])?, Unit::None)?;
    cx.record(
        "element_at_index",
        Tensor::arange(16, DType::F32)?.get(&[index])?,
        Unit::None,
    )?;
    Ok(())
}

/// Many operations only make a new view: no copy, the same storage, new strides.
pub fn tensor_slicing(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::from_data(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], DType::F32)?;
    record!(cx, x)?;

    let y = x.select(0, 0)?; // row 0: x[0]
    cx.record_tensor("row_0", &y)?;
    cx.record("row_0_same_storage", Tensor::same_storage(&x, &y), Unit::None)?;
    let y = x.select(1, 1)?; // column 1: x[:, 1]
    cx.record_tensor("column_1", &y)?;
    cx.record("column_1_same_storage", Tensor::same_storage(&x, &y), Unit::None)?;
    let y = x.view(&[3, 2])?; // same 6 numbers read as 3x2
    cx.record_tensor("view_3_2", &y)?;
    cx.record("view_3_2_same_storage", Tensor::same_storage(&x, &y), Unit::None)?;
    let y = x.transpose(1, 0)?;
    cx.record_tensor("transpose", &y)?;
    cx.record("transpose_same_storage", Tensor::same_storage(&x, &y), Unit::None)?;

    // Writing through x shows up in its transposed view: they are one storage.
    let written = 100.0;
    record!(cx, written, Unit::None)?;
    x.set(&[0, 0], written)?;
    cx.record("transpose_after_write_0_0", y.get(&[0, 0])?, Unit::None)?;

    // A transpose is not contiguous: its elements are not in row-major storage order, so a view
    // that merges its dimensions (its 3×2 read as 2×3) has no single stride and fails...
    let x = Tensor::from_data(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], DType::F32)?;
    let y = x.transpose(1, 0)?;
    cx.record("transpose_is_contiguous", y.is_contiguous(), Unit::None)?;
    let err = y.view(&[2, 3]).err().map(|e| e.to_string()).unwrap_or_default();
    cx.record("view_error", err, Unit::None)?;
    // ...until `contiguous()` copies it into fresh storage.
    let y = x.transpose(1, 0)?.contiguous()?.view(&[2, 3])?;
    cx.record_tensor("contiguous_view_2_3", &y)?;
    cx.record("contiguous_same_storage", Tensor::same_storage(&x, &y), Unit::None)?;
    Ok(())
}

/// Elementwise operations apply to each element independently; the output has the input's shape.
pub fn tensor_elementwise(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::from_data(&[1.0, 4.0, 9.0], DType::F32)?;
    record!(cx, x)?;
    cx.record_tensor("pow_2", &x.pow_scalar(2.0)?)?;
    cx.record_tensor("sqrt", &x.sqrt()?)?;
    cx.record_tensor("rsqrt", &x.rsqrt()?)?; // 1 / sqrt(x)
    cx.record_tensor("x_plus_x", &x.add(&x)?)?;
    cx.record_tensor("x_times_2", &x.mul_scalar(2.0)?)?;
    cx.record_tensor("x_div_0_5", &x.div_scalar(0.5)?)?;
    // triu keeps the upper triangle: the building block of a causal attention mask.
    let ones = Tensor::ones(&[3, 3], DType::F32)?;
    cx.record("ones_shape", ones.shape().to_vec(), Unit::Count)?;
    cx.record_tensor("triu", &ones.triu(0)?)?;
    Ok(())
}

/// Matrix multiplication, the bread and butter of deep learning; leading dimensions are batch
/// dimensions and broadcast.
pub fn tensor_matmul(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::ones(&[16, 32], DType::F32)?;
    let w = Tensor::ones(&[32, 2], DType::F32)?;
    cx.record("x_shape", x.shape().to_vec(), Unit::Count)?;
    cx.record("w_shape", w.shape().to_vec(), Unit::Count)?;
    let y = x.matmul(&w)?;
    cx.record("y_shape", y.shape().to_vec(), Unit::None)?;
    cx.record("y_0_0", y.get(&[0, 0])?, Unit::None)?; // a sum of 32 ones

    // For each of 4 batch elements and 8 tokens, a 16x32 by 32x2 product.
    let x = Tensor::ones(&[4, 8, 16, 32], DType::F32)?;
    cx.record("batched_x_shape", x.shape().to_vec(), Unit::Count)?;
    let y = x.matmul(&w)?;
    cx.record("batched_y_shape", y.shape().to_vec(), Unit::None)?;
    cx.record("batched_y_max", y.max_all()?.item()?, Unit::None)?;
    cx.record("batched_y_min", y.min_all()?.item()?, Unit::None)?;
    Ok(())
}
