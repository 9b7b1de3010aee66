//! Section `einops_einsum`: einops: einsum.

use crate::error::Result;
use crate::flops::FlopCounter;
use crate::lecture::caught::expect_error;
use crate::lecture::{SectionCtx, check, record};
use crate::tensor::einops::einsum;
use crate::tensor::{DType, Tensor};

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
    let hidden_ones = x.dim(2)? as f64;
    check!(cx, entries_count_hidden: z.to_vec_f64()?.iter().all(|&entry| entry == hidden_ones))?;
    let z_equals_matmul = z.to_vec_f64()? == z_matmul.to_vec_f64()?;
    record!(cx, computed z_equals_matmul)?;
    check!(cx, einsum_is_the_matmul: z_equals_matmul)?;
    // It runs as one batched matmul, so it costs what the matmul costs: 2 · batch · seq1 · seq2 · hidden.
    let z_flops = flops.total();
    record!(cx, computed z_flops, flop)?;
    let (batch, seq1, hidden, seq2) = (x.dim(0)?, x.dim(1)?, x.dim(2)?, y.dim(1)?);
    let z_flops_formula = 2 * batch * seq1 * seq2 * hidden;
    record!(cx, computed z_flops_formula, flop)?;
    check!(cx, z_flops_as_formula: z_flops == z_flops_formula as u64)?;

    // `...` stands for any number of leading dimensions: batch, or batch1 batch2, or none.
    let z_ellipsis = einsum("... seq1 hidden, ... seq2 hidden -> ... seq1 seq2", &[&x, &y])?;
    record!(cx, computed z_ellipsis)?;
    let z_ellipsis_equals_z = z_ellipsis.to_vec_f64()? == z.to_vec_f64()?;
    record!(cx, computed z_ellipsis_equals_z)?;
    check!(cx, ellipsis_is_the_same: z_ellipsis_equals_z)?;
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
