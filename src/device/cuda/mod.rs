//! The CUDA backend (cudarc): a context and stream on one GPU, an allocator that counts bytes,
//! cuBLAS for matmul and the NVRTC-compiled kernels from `kernels/` for everything else.

pub mod kernels;
