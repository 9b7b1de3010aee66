//! Stanford CS336 Lecture 2 ("PyTorch, resource accounting") as an executable lecture: a small
//! tensor library that counts its bytes and FLOPs, the lecture's sections as functions that run
//! and record what they measured, and a book that shows only recorded numbers.

pub mod atomic_file;
pub mod autograd;
pub mod base;
pub mod bench;
pub mod book;
pub mod checkpoint;
pub mod console;
pub mod data;
pub mod device;
pub mod error;
pub mod flops;
pub mod host;
pub mod json;
pub mod lecture;
pub mod nn;
pub mod optim;
pub mod rng;
pub mod tensor;
pub mod timing;
pub mod trace;

pub use error::{Error, Result};
pub use tensor::{DType, Tensor, einops};
