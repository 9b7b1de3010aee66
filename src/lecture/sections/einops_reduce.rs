//! Section `einops_reduce`: einops: reduce.

use crate::error::Result;
use crate::lecture::{SectionCtx, check, record};
use crate::tensor::einops::{ReduceOp, reduce};
use crate::tensor::{DType, Tensor};

/// reduce: the axes missing from the output are aggregated (sum, mean, max, min).
pub fn einops_reduce(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::ones(&[2, 3, 4], DType::F32)?; // batch seq hidden
    record!(cx, given x_shape = x.shape())?;
    let y_old = x.mean(&[-1], false)?; // old way
    let y = reduce(&x, "... hidden -> ...", ReduceOp::Mean)?; // new way
    record!(cx, computed y_mean = &y)?;
    let y_mean_equals_old_way = y.to_vec_f64()? == y_old.to_vec_f64()?;
    record!(cx, computed y_mean_equals_old_way)?;
    check!(cx, reduce_is_the_mean: y_mean_equals_old_way)?;
    let y = reduce(&x, "... hidden -> ...", ReduceOp::Sum)?;
    record!(cx, computed y_sum = &y)?; // 4 ones per row
    Ok(())
}
