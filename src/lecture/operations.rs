//! Tensor operations: storage and strides, views that share memory, copies that do not,
//! elementwise ops and matrix multiplication.

use super::{SectionCtx, record, sections};
use crate::error::Result;
use crate::tensor::{DType, Tensor};

/// A tensor is a pointer into storage plus strides: how far to jump in storage for one step
/// along each dimension.
pub fn tensor_storage(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::arange(16, DType::F32)?.view(&[4, 4])?;
    record!(cx, computed x)?;
    record!(cx, computed shape = x.shape())?;
    record!(cx, computed stride = x.strides())?;
    // Element (row, column) sits at storage position row·stride[0] + column·stride[1].
    let (row, column) = (1, 2);
    record!(cx, given row)?;
    record!(cx, given column)?;
    let index = row * x.strides()[0] + column * x.strides()[1];
    record!(cx, computed index)?;
    record!(cx, computed element = x.get(&[row, column])?)?;
    record!(cx, computed element_at_index = Tensor::arange(16, DType::F32)?.get(&[index])?)?;
    Ok(())
}

/// Many operations only make a new view: no copy, the same storage, new strides.
pub fn tensor_slicing(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::from_data(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], DType::F32)?;
    record!(cx, given x)?;

    let y = x.select(0, 0)?; // row 0: x[0]
    record!(cx, computed row_0 = &y)?;
    record!(cx, computed row_0_same_storage = Tensor::same_storage(&x, &y))?;
    let y = x.select(1, 1)?; // column 1: x[:, 1]
    record!(cx, computed column_1 = &y)?;
    record!(cx, computed column_1_same_storage = Tensor::same_storage(&x, &y))?;
    let y = x.view(&[3, 2])?; // same 6 numbers read as 3x2
    record!(cx, computed view_3_2 = &y)?;
    record!(cx, computed view_3_2_same_storage = Tensor::same_storage(&x, &y))?;
    let y = x.transpose(1, 0)?;
    record!(cx, computed transpose = &y)?;
    record!(cx, computed transpose_same_storage = Tensor::same_storage(&x, &y))?;

    // Writing through x shows up in its transposed view: they are one storage.
    let written = 100.0;
    record!(cx, given written)?;
    x.set(&[0, 0], written)?;
    record!(cx, computed transpose_after_write_0_0 = y.get(&[0, 0])?)?;

    // A transpose is not contiguous: its elements are not in row-major storage order, so a view
    // that merges its dimensions (its 3×2 read as 2×3) has no single stride and fails...
    let x = Tensor::from_data(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], DType::F32)?;
    let y = x.transpose(1, 0)?;
    record!(cx, computed transpose_is_contiguous = y.is_contiguous())?;
    let view_error = y.view(&[2, 3]).err().map(|e| e.to_string()).unwrap_or_default();
    record!(cx, computed view_error)?;
    // ...until `contiguous()` copies it into fresh storage.
    let y = x.transpose(1, 0)?.contiguous()?.view(&[2, 3])?;
    record!(cx, computed contiguous_view_2_3 = &y)?;
    record!(cx, computed contiguous_same_storage = Tensor::same_storage(&x, &y))?;
    Ok(())
}

/// Elementwise operations apply to each element independently; the output has the input's shape.
pub fn tensor_elementwise(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::from_data(&[1.0, 4.0, 9.0], DType::F32)?;
    record!(cx, given x)?;
    record!(cx, computed pow_2 = &x.pow_scalar(2.0)?)?;
    record!(cx, computed sqrt = &x.sqrt()?)?;
    record!(cx, computed rsqrt = &x.rsqrt()?)?; // 1 / sqrt(x)
    record!(cx, computed x_plus_x = &x.add(&x)?)?;
    record!(cx, computed x_times_2 = &x.mul_scalar(2.0)?)?;
    record!(cx, computed x_div_0_5 = &x.div_scalar(0.5)?)?;
    // triu keeps the upper triangle: the building block of a causal attention mask.
    let ones = Tensor::ones(&[3, 3], DType::F32)?;
    record!(cx, given ones_shape = ones.shape())?;
    record!(cx, computed triu = &ones.triu(0)?)?;
    Ok(())
}

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

// The sections of this file, in lecture order, with the titles their chapters have.
sections! {
    tensor_storage => "Tensor storage",
    tensor_slicing => "Slicing and views",
    tensor_elementwise => "Elementwise operations",
    tensor_matmul => "Matrix multiplication",
}
