//! einops-style operations with named axes: `einsum`, `reduce` and `rearrange`, sharing one
//! pattern language (see `pattern`). Naming axes instead of numbering them (`-2`, `-1`) is the
//! lecture's point: the pattern says what each dimension means, and a pattern that does not fit
//! the tensors is an error (`Error::Pattern`) that says which axis and which sizes disagree.

mod einsum;
pub mod pattern;
mod rearrange;
mod strided;

pub use crate::tensor::ReduceOp;
pub use einsum::einsum;
pub use pattern::{Item, Pattern, Side};
pub use rearrange::{rearrange, reduce, reduce_with};
