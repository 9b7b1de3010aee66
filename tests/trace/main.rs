//! The trace files: reading, writing and refusing them, the committed traces against a fresh run, and the formats other tools read.
//! One test binary for the topic (each links the whole library once); each module was a binary of
//! its own.

#[path = "../common/mod.rs"]
mod common;

mod committed_trace;
mod formats;
mod python_interop;
mod trace_io;
mod trace_limits;
