//! Reductions over one or more dimensions: `sum`, `mean`, `max`, `min`. Both backends walk the
//! input the same way ([`ReduceOp::walk`]): the layout permuted so that the kept dimensions come
//! first and the reduced ones last, so each output reduces one consecutive run of the walk.
//! Floats round once into the dtype: the CPU adds a contiguous run in f32 lanes of at most 64
//! elements and the lanes' block sums in f64 (`device::cpu::reduce`), other layouts and CUDA add in
//! f64; integers reduce exactly in i64 (sums wrap, as in PyTorch). Autograd differentiates `sum` and `mean` (the gradient spread back over
//! the reduced dimensions); `max` and `min` have no derivative.

use crate::base::{DType, Layout};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Mean,
    Max,
    Min,
}

/// How a reduction walks its input: `outputs` results, each over `run` consecutive elements of
/// `walk`. (Both counts are kept: with an empty run the walk has no elements, yet the kept
/// dimensions still give outputs: a sum over an empty dimension is 0, a mean NaN.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReduceWalk {
    pub walk: Layout,
    pub outputs: usize,
    pub run: usize,
}

impl ReduceOp {
    /// Every op once.
    pub const ALL: &'static [ReduceOp] = &[ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min];

    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Mean => "mean",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }

    /// The CUDA kernel of the first pass (per block: a mean sums), without its dtype suffix; the
    /// second pass is `reduce_finish_<name>`.
    pub fn first_pass_kernel(self) -> &'static str {
        match self {
            ReduceOp::Sum | ReduceOp::Mean => "reduce_sum",
            ReduceOp::Max => "reduce_max",
            ReduceOp::Min => "reduce_min",
        }
    }

    /// Whether integer tensors take this op (a mean of integers is not one).
    pub fn integral(self) -> bool {
        self != ReduceOp::Mean
    }

    /// Whether an empty run has a value (the sum of nothing is 0, its mean NaN; its max is none).
    pub fn has_identity(self) -> bool {
        matches!(self, ReduceOp::Sum | ReduceOp::Mean)
    }

    /// Refuses an integer dtype when the result would not be integral.
    pub fn check_dtype(self, dtype: DType) -> Result<()> {
        if self.integral() {
            return Ok(());
        }
        dtype.require_float(self.name())
    }

    /// FLOPs for `inputs` input elements.
    pub fn flops(self, inputs: usize) -> u64 {
        inputs as u64
    }

    /// The walk over `layout` that reduces `dims` (sorted, distinct), checked against a buffer of
    /// `len` elements. An empty run is refused for ops without an identity.
    pub fn walk(self, layout: &Layout, dims: &[usize], len: usize) -> Result<ReduceWalk> {
        layout.check_bounds(self.name(), len)?;
        let kept: Vec<usize> = (0..layout.ndim()).filter(|d| !dims.contains(d)).collect();
        let outputs: usize = kept.iter().map(|&d| layout.shape[d]).product();
        let run: usize = dims.iter().map(|&d| layout.shape[d]).product();
        if run == 0 && !self.has_identity() {
            return Err(Error::invalid(
                self.name(),
                format!(
                    "cannot take the {} over an empty dimension (shape {:?})",
                    self.name(),
                    layout.shape
                ),
            ));
        }
        let order: Vec<usize> = kept.into_iter().chain(dims.iter().copied()).collect();
        Ok(ReduceWalk {
            walk: layout.permute(&order)?,
            outputs,
            run,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_puts_reduced_dimensions_last() {
        let w = ReduceOp::Sum
            .walk(&Layout::contiguous(&[2, 3, 4]), &[0, 2], 24)
            .expect("walk");
        assert_eq!((w.outputs, w.run), (3, 8));
        assert_eq!(
            (w.walk.shape.clone(), w.walk.strides.clone()),
            (vec![3, 2, 4], vec![4, 12, 1])
        );
        let empty = Layout::contiguous(&[3, 0]);
        let w = ReduceOp::Mean
            .walk(&empty, &[1], 0)
            .expect("a mean over nothing is NaN");
        assert_eq!((w.outputs, w.run), (3, 0));
        assert!(ReduceOp::Max.walk(&empty, &[1], 0).is_err());
        assert!(
            ReduceOp::Sum.walk(&Layout::contiguous(&[4]), &[0], 3).is_err(),
            "out of bounds"
        );
        assert!(ReduceOp::Mean.check_dtype(DType::I32).is_err());
        assert!(ReduceOp::Max.check_dtype(DType::I32).is_ok());
    }
}
