//! Section `tensor_slicing`: Slicing and views.

use crate::error::Result;
use crate::lecture::{SectionCtx, check, record};
use crate::tensor::{DType, Tensor};

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
    let transpose_same_storage = Tensor::same_storage(&x, &y);
    record!(cx, computed transpose_same_storage)?;
    check!(cx, transpose_is_a_view: transpose_same_storage)?;

    // Writing through x shows up in its transposed view: they are one storage.
    let written = 100.0;
    record!(cx, given written)?;
    x.set(&[0, 0], written)?;
    let transpose_after_write_0_0 = y.get(&[0, 0])?;
    record!(cx, computed transpose_after_write_0_0)?;
    check!(cx, write_shows_through: transpose_after_write_0_0 == written)?;

    // A transpose is not contiguous: its elements are not in row-major storage order, so a view
    // that merges its dimensions (its 3×2 read as 2×3) has no single stride and fails...
    let x = Tensor::from_data(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], DType::F32)?;
    let y = x.transpose(1, 0)?;
    let transpose_is_contiguous = y.is_contiguous();
    record!(cx, computed transpose_is_contiguous)?;
    check!(cx, transpose_not_contiguous: !transpose_is_contiguous)?;
    let view_error = y.view(&[2, 3]).err().map(|e| e.to_string()).unwrap_or_default();
    record!(cx, computed view_error)?;
    // ...until `contiguous()` copies it into fresh storage.
    let y = x.transpose(1, 0)?.contiguous()?.view(&[2, 3])?;
    record!(cx, computed contiguous_view_2_3 = &y)?;
    let contiguous_same_storage = Tensor::same_storage(&x, &y);
    record!(cx, computed contiguous_same_storage)?;
    check!(cx, contiguous_copies: !contiguous_same_storage)?;
    Ok(())
}
