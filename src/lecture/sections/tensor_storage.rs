//! Section `tensor_storage`: Tensor storage.

use crate::error::Result;
use crate::lecture::{SectionCtx, check, record};
use crate::tensor::{DType, Tensor};

/// A tensor is a pointer into storage plus strides: how far to jump in storage for one step
/// along each dimension.
pub fn tensor_storage(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::arange(16, DType::F32)?.view(&[4, 4])?;
    record!(cx, computed x)?;
    record!(cx, computed shape = x.shape())?;
    record!(cx, computed stride = x.strides())?;
    // Row-major: a row down skips a whole row, a column right skips one element.
    check!(cx, row_major_strides: x.strides().to_vec() == vec![x.dim(1)?, 1])?;
    // Element (row, column) sits at storage position row·stride[0] + column·stride[1].
    let (row, column) = (1, 2);
    record!(cx, given row)?;
    record!(cx, given column)?;
    let index = row * x.strides()[0] + column * x.strides()[1];
    record!(cx, computed index)?;
    let element = x.get(&[row, column])?;
    record!(cx, computed element)?;
    let element_at_index = Tensor::arange(16, DType::F32)?.get(&[index])?;
    record!(cx, computed element_at_index)?;
    check!(cx, found_both_ways: element == element_at_index)?;
    Ok(())
}
