//! einops and jaxtyping: naming dimensions instead of counting them. `x @ y.transpose(-2, -1)`
//! works, but nothing in it says which dimension is which; named patterns say it, and here the
//! names are checked when the code runs.

use super::{SectionCtx, record, sections};
use crate::error::{Error, Result};
use crate::flops::FlopCounter;
use crate::tensor::einops::{ReduceOp, einsum, rearrange, reduce};
use crate::tensor::named::{Dims, NamedTensor};
use crate::tensor::{DType, Tensor};

/// The old way: dimensions by position. Which of -2 and -1 is "seq" and which is "hidden" lives
/// only in comments.
pub fn einops_motivation(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::ones(&[2, 2, 3], DType::F32)?; // batch seq hidden
    let y = Tensor::ones(&[2, 2, 3], DType::F32)?; // batch seq hidden
    record!(cx, given x_shape = x.shape())?;
    let z = x.matmul(&y.transpose(-2, -1)?)?; // batch seq seq
    record!(cx, computed z)?; // each entry sums 3 products of ones
    Ok(())
}

/// jaxtyping writes the names into the type annotation; here a `Dims` context checks them: the
/// first tensor binds each name to a size, every later one must agree.
pub fn jaxtyping_basics(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::ones(&[2, 2, 1, 3], DType::F32)?; // old way: batch seq heads hidden, in a comment
    let mut dims = Dims::new();
    dims.check(&x, "batch seq heads hidden")?; // new way: the names are checked
    let bound: serde_json::Map<String, serde_json::Value> =
        dims.iter().map(|(n, s)| (n.to_string(), s.into())).collect();
    record!(cx, computed dims = serde_json::Value::Object(bound))?;

    // A tensor whose hidden size disagrees is caught where it appears, not three ops later.
    let y = Tensor::ones(&[2, 2, 1, 4], DType::F32)?;
    record!(cx, computed mismatch_error = expect_error(dims.check(&y, "batch seq heads hidden"))?)?;
    let y = Tensor::ones(&[2, 2, 3], DType::F32)?;
    record!(cx, computed ndim_error = expect_error(dims.check(&y, "batch seq heads hidden"))?)?;

    // A tensor can carry its names: size by name instead of by position.
    let x = NamedTensor::new(x, "batch seq heads hidden")?;
    record!(cx, computed hidden = x.size("hidden")?)?;
    Ok(())
}

/// einsum: name every dimension of the inputs and say which survive; the others are summed.
pub fn einops_einsum(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::ones(&[2, 3, 4], DType::F32)?; // batch seq1 hidden
    let y = Tensor::ones(&[2, 3, 4], DType::F32)?; // batch seq2 hidden
    record!(cx, given x_shape = x.shape())?;
    let z_matmul = x.matmul(&y.transpose(-2, -1)?)?; // old way
    let counter = FlopCounter::start();
    let z = einsum("batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2", &[&x, &y])?; // new way
    let flops = counter.finish();
    record!(cx, computed z)?; // hidden is not in the output: summed over, 4 ones
    record!(cx, computed z_equals_matmul = z.to_vec_f64()? == z_matmul.to_vec_f64()?)?;
    // It runs as one batched matmul, so it costs what the matmul costs: 2 · batch · seq1 · seq2 · hidden.
    record!(cx, computed z_flops = flops.total(), flop)?;
    let (batch, seq1, hidden, seq2) = (x.dim(0)?, x.dim(1)?, x.dim(2)?, y.dim(1)?);
    record!(cx, computed z_flops_formula = 2 * batch * seq1 * seq2 * hidden, flop)?;

    // `...` stands for any number of leading dimensions: batch, or batch1 batch2, or none.
    let z_ellipsis = einsum("... seq1 hidden, ... seq2 hidden -> ... seq1 seq2", &[&x, &y])?;
    record!(cx, computed z_ellipsis)?;
    record!(cx, computed z_ellipsis_equals_z = z_ellipsis.to_vec_f64()? == z.to_vec_f64()?)?;
    let x4 = Tensor::ones(&[5, 2, 3, 4], DType::F32)?; // batch1 batch2 seq1 hidden
    record!(cx, given x_broadcast_shape = x4.shape())?;
    let z = einsum("... seq1 hidden, ... seq2 hidden -> ... seq1 seq2", &[&x4, &y])?; // y broadcasts
    record!(cx, computed z_ellipsis_broadcast_shape = z.shape())?;

    // A pattern that does not fit is an error that names the axis.
    let unknown = einsum("batch seq1 hidden, batch seq2 hidden -> batch seq1 seq3", &[&x, &y]);
    record!(cx, computed unknown_axis_error = expect_error(unknown)?)?;
    let y5 = Tensor::ones(&[2, 3, 5], DType::F32)?;
    let sizes = einsum("batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2", &[&x, &y5]);
    record!(cx, computed axis_size_error = expect_error(sizes)?)?;
    Ok(())
}

/// reduce: the axes missing from the output are aggregated (sum, mean, max, min).
pub fn einops_reduce(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::ones(&[2, 3, 4], DType::F32)?; // batch seq hidden
    record!(cx, given x_shape = x.shape())?;
    let y_old = x.mean(&[-1], false)?; // old way
    let y = reduce(&x, "... hidden -> ...", ReduceOp::Mean)?; // new way
    record!(cx, computed y_mean = &y)?;
    record!(cx, computed y_mean_equals_old_way = y.to_vec_f64()? == y_old.to_vec_f64()?)?;
    let y = reduce(&x, "... hidden -> ...", ReduceOp::Sum)?;
    record!(cx, computed y_sum = &y)?; // 4 ones per row
    Ok(())
}

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
    record!(cx, computed x_split_same_storage = Tensor::same_storage(&x, &x_split))?; // a view

    let x_heads = einsum("... hidden1, hidden1 hidden2 -> ... hidden2", &[&x_split, &w])?;
    record!(cx, computed x_transformed = &x_heads)?; // sums of 4 ones

    // The inverse: the two dimensions grouped back into one.
    let x_merged = rearrange(&x_heads, "... heads hidden2 -> ... (heads hidden2)", &[])?;
    record!(cx, computed x_merged_shape = x_merged.shape())?;
    record!(cx, computed x_merged)?;

    // Bad patterns: 8 is not 3 × anything, and a pattern for 2 dimensions on a 3-dimensional tensor.
    let wrong_split = rearrange(&x, "... (heads hidden1) -> ... heads hidden1", &[("heads", 3)]);
    record!(cx, computed wrong_split_error = expect_error(wrong_split)?)?;
    let mismatch = rearrange(&x, "batch (heads hidden1) -> batch heads hidden1", &[("heads", 2)]);
    record!(cx, computed shape_mismatch_error = expect_error(mismatch)?)?;
    let unknown = rearrange(&x, "... (heads hidden1) -> ... heads hidden2", &[("heads", 2)]);
    record!(cx, computed unknown_axis_error = expect_error(unknown)?)?;
    Ok(())
}

/// The message of an error the section provokes on purpose; succeeding would be the bug.
fn expect_error<T>(result: Result<T>) -> Result<String> {
    match result {
        Ok(_) => Err(Error::invalid("section", "a call that must fail succeeded")),
        Err(e) => Ok(e.to_string()),
    }
}

// The sections of this file, in lecture order, with the titles their chapters have.
sections! {
    einops_motivation => "einops: why name dimensions",
    jaxtyping_basics => "Named dimensions, checked",
    einops_einsum => "einops: einsum",
    einops_reduce => "einops: reduce",
    einops_rearrange => "einops: rearrange",
}
