//! What every layer above shares and nothing here depends on: element types (`DType`, `Element`)
//! and the floating-point formats behind them, layouts (shape, strides, offset), and the
//! declaration of every op (its name, kernel, integer behaviour, derivative and FLOP cost).
//!
//! The layers point one way: `base` ← `device` (the CPU and CUDA backends see buffers and
//! layouts, never tensors) ← `tensor` (`Tensor`, and the routing of each op to the backend that
//! holds its data) ← `autograd` ← `nn`, `optim` ← `lecture`.

pub(crate) mod dtype;
pub mod formats;
pub mod layout;
pub mod math;
pub mod nvfp4;
pub mod op;

pub(crate) use dtype::{DType, Element};
pub use layout::Layout;
pub use op::{Accuracy, BinaryOp, ReduceOp, UnaryOp};
