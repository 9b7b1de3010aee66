//! Stanford CS336 Lecture 2 ("PyTorch, resource accounting") as an executable lecture: a small
//! tensor library that counts its bytes and FLOPs, the lecture's sections as functions that run
//! and record what they measured, and a book that shows only recorded numbers.
//!
//! # Where things live
//!
// The map is one file, kept in the book's folder so that the Reference chapter includes it with
// mdBook's `{{#include}}` without reaching outside the book; `tests/architecture.rs` checks that
// every path it names exists.
#![doc = include_str!("../book/src/code_map.md")]

pub mod autograd;
pub mod base;
pub mod bench;
pub mod checkpoint;
pub mod data;
pub mod device;
pub mod error;
pub mod flops;
pub mod lecture;
pub mod nn;
pub mod optim;
pub mod rng;
pub mod tensor;
pub mod timing;

// The two crates below this one, under the names they always had here: `cs336::trace` (plain
// data, and the files and terminal it meets) and `cs336::book` (which reads traces alone).
pub use cs336_book as book;
pub use cs336_trace as trace;
pub use cs336_trace::{atomic_file, console, host, json, outln};

pub use error::{Error, Result};
pub use tensor::{Tensor, einops};
