//! The tensor library: autograd, bf16 matmul kernels, errors, properties against a reference, CPU instruction sets, bad inputs, models and optimizers, and the CUDA kernels compiling.
//! One test binary for the topic (each links the whole library once); each module was a binary of
//! its own.

#[path = "../common/mod.rs"]
mod common;

mod autograd;
mod bad_inputs;
mod bf16_matmul;
mod cpu_isa;
mod high_water;
mod kernels_compile;
mod models_optim;
mod tensor_errors;
mod tensor_props;
