//! Section `einops_motivation`: einops: why name dimensions.

use crate::error::Result;
use crate::lecture::{SectionCtx, check, record};
use crate::tensor::{DType, Tensor};

/// The old way: dimensions by position. Which of -2 and -1 is "seq" and which is "hidden" lives
/// only in comments.
pub fn einops_motivation(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::ones(&[2, 2, 3], DType::F32)?; // batch seq hidden
    let y = Tensor::ones(&[2, 2, 3], DType::F32)?; // batch seq hidden
    record!(cx, given x_shape = x.shape())?;
    let z = x.matmul(&y.transpose(-2, -1)?)?; // batch seq seq
    record!(cx, computed z)?; // each entry sums 3 products of ones
    let hidden = x.dim(2)? as f64;
    check!(cx, entries_count_hidden: z.to_vec_f64()?.iter().all(|&entry| entry == hidden))?;
    Ok(())
}
