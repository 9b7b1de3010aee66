//! Section `einops_rearrange`: einops: rearrange.

use crate::error::Result;
use crate::lecture::caught::expect_error;
use crate::lecture::{SectionCtx, check, record};
use crate::tensor::einops::{einsum, rearrange};
use crate::tensor::{DType, Tensor};

/// rearrange: one dimension often holds several (heads × hidden per head). Split it, work on the
/// part you need, merge it back. Like `view`, but the names say how.
pub fn einops_rearrange(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::ones(&[2, 3, 8], DType::F32)?; // batch seq total_hidden
    let w = Tensor::ones(&[4, 4], DType::F32)?; // hidden1 hidden2
    record!(cx, given x_shape = x.shape())?;
    record!(cx, given w_shape = w.shape())?;

    // total_hidden is heads × hidden1; the pattern cannot know how to split 8, so heads=2 says it.
    let heads = 2;
    record!(cx, given heads)?;
    let x_split = rearrange(&x, "... (heads hidden1) -> ... heads hidden1", &[("heads", heads)])?;
    record!(cx, computed x_split_shape = x_split.shape())?;
    let x_split_same_storage = Tensor::same_storage(&x, &x_split);
    record!(cx, computed x_split_same_storage)?;
    check!(cx, split_is_a_view: x_split_same_storage)?;

    let x_heads = einsum("... hidden1, hidden1 hidden2 -> ... hidden2", &[&x_split, &w])?;
    record!(cx, computed x_transformed = &x_heads)?; // sums of 4 ones
    let hidden1 = w.dim(0)? as f64;
    check!(cx, entries_count_hidden1: x_heads.to_vec_f64()?.iter().all(|&entry| entry == hidden1))?;

    // The inverse: the two dimensions grouped back into one.
    let x_merged = rearrange(&x_heads, "... heads hidden2 -> ... (heads hidden2)", &[])?;
    record!(cx, computed x_merged_shape = x_merged.shape())?;
    record!(cx, computed x_merged)?;
    check!(cx, merge_restores_width: x_merged.dim(2)? == x.dim(2)?)?;

    // Bad patterns: 8 is not 3 × anything, and a pattern for 2 dimensions on a 3-dimensional tensor.
    let wrong_split = rearrange(&x, "... (heads hidden1) -> ... heads hidden1", &[("heads", 3)]);
    record!(cx, computed wrong_split_error = expect_error(wrong_split)?)?;
    let mismatch = rearrange(&x, "batch (heads hidden1) -> batch heads hidden1", &[("heads", 2)]);
    record!(cx, computed shape_mismatch_error = expect_error(mismatch)?)?;
    let unknown = rearrange(&x, "... (heads hidden1) -> ... heads hidden2", &[("heads", 2)]);
    record!(cx, computed unknown_axis_error = expect_error(unknown)?)?;
    Ok(())
}
