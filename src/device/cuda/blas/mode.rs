//! How a cuBLAS matmul does its arithmetic ([`GemmMode`]), and the float32 setting that picks the
//! mode for float32 tensors ([`F32Matmul`]); see the parent module for what each mode means.

use cudarc::cublas::sys as blas_sys;

use crate::base::DType;
use crate::error::{Error, Result};

/// How the arithmetic is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GemmMode {
    /// FP32 inputs and output, FP32 arithmetic in every step (CUBLAS_COMPUTE_32F_PEDANTIC).
    Fp32,
    /// FP32 inputs and output, FP32 arithmetic (no TF32) with cuBLAS free to split reductions.
    Fp32Default,
    /// FP32 inputs and output, TF32 tensor-core arithmetic with FP32 accumulation.
    Tf32,
    /// BF16 inputs and output, FP32 accumulation.
    Bf16,
    /// BF16 inputs, FP32 output, FP32 accumulation.
    Bf16F32Out,
    /// FP16 inputs and output, FP32 accumulation.
    Fp16,
}

impl GemmMode {
    pub fn name(self) -> &'static str {
        match self {
            GemmMode::Fp32 => "fp32",
            GemmMode::Fp32Default => "fp32_default",
            GemmMode::Tf32 => "tf32",
            GemmMode::Bf16 => "bf16",
            GemmMode::Bf16F32Out => "bf16_f32_out",
            GemmMode::Fp16 => "fp16",
        }
    }

    /// The mode a matmul of `dtype` tensors uses, float32 ones as `f32` says.
    pub fn for_dtype(dtype: DType, f32: F32Matmul) -> Result<GemmMode> {
        match dtype {
            DType::F32 => Ok(match f32 {
                F32Matmul::Default => GemmMode::Fp32Default,
                F32Matmul::Pedantic => GemmMode::Fp32,
                F32Matmul::Tf32 => GemmMode::Tf32,
            }),
            DType::BF16 => Ok(GemmMode::Bf16),
            DType::F16 => Ok(GemmMode::Fp16),
            d => Err(Error::UnsupportedDType {
                op: "matmul",
                dtype: d.name(),
                why: "matmul needs float32, float16 or bfloat16",
            }),
        }
    }

    pub fn input_dtype(self) -> DType {
        match self {
            GemmMode::Fp32 | GemmMode::Fp32Default | GemmMode::Tf32 => DType::F32,
            GemmMode::Bf16 | GemmMode::Bf16F32Out => DType::BF16,
            GemmMode::Fp16 => DType::F16,
        }
    }

    pub fn output_dtype(self) -> DType {
        match self {
            GemmMode::Fp32 | GemmMode::Fp32Default | GemmMode::Tf32 | GemmMode::Bf16F32Out => DType::F32,
            GemmMode::Bf16 => DType::BF16,
            GemmMode::Fp16 => DType::F16,
        }
    }

    pub fn compute_type(self) -> blas_sys::cublasComputeType_t {
        use blas_sys::cublasComputeType_t::*;
        match self {
            GemmMode::Fp32 => CUBLAS_COMPUTE_32F_PEDANTIC,
            GemmMode::Tf32 => CUBLAS_COMPUTE_32F_FAST_TF32,
            GemmMode::Fp32Default | GemmMode::Bf16 | GemmMode::Bf16F32Out | GemmMode::Fp16 => CUBLAS_COMPUTE_32F,
        }
    }

    /// The handle's math mode for this call: the default everywhere (a pedantic compute type
    /// needs no help, and TF32 comes from the compute type), which leaves cuBLAS free to reduce
    /// partial sums in a 16-bit output type.
    pub fn math_mode(self) -> blas_sys::cublasMath_t {
        blas_sys::cublasMath_t::CUBLAS_DEFAULT_MATH
    }

    /// Whether partial sums may be reduced in a precision below float32 (only possible when the
    /// output itself is 16-bit, and only when the math mode does not forbid it).
    pub fn reduced_precision_reduction(self) -> bool {
        let disallowed = self.math_mode() as u32
            & blas_sys::cublasMath_t::CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION as u32
            != 0;
        self.output_dtype().size_in_bytes() < 4
            && self.compute_type() != blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_PEDANTIC
            && !disallowed
    }
}

/// How float32 matmuls are done on a GPU, like `torch.set_float32_matmul_precision`: `Default`
/// is PyTorch's "highest" (FP32 arithmetic, no TF32), `Tf32` its "high", and `Pedantic` asks for
/// FP32 in every step including the order of reductions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum F32Matmul {
    #[default]
    Default,
    Pedantic,
    Tf32,
}

impl F32Matmul {
    pub(crate) fn to_u8(self) -> u8 {
        self as u8
    }

    pub(crate) fn from_u8(v: u8) -> F32Matmul {
        match v {
            1 => F32Matmul::Pedantic,
            2 => F32Matmul::Tf32,
            _ => F32Matmul::Default,
        }
    }
}

/// cuBLAS's name for an element type.
pub(super) fn data_type(dtype: DType) -> blas_sys::cudaDataType {
    match dtype {
        DType::BF16 => blas_sys::cudaDataType::CUDA_R_16BF,
        DType::F16 => blas_sys::cudaDataType::CUDA_R_16F,
        _ => blas_sys::cudaDataType::CUDA_R_32F,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_follow_dtype_and_the_f32_setting() {
        assert_eq!(
            GemmMode::for_dtype(DType::F32, F32Matmul::Default).expect("f32"),
            GemmMode::Fp32Default
        );
        assert_eq!(
            GemmMode::for_dtype(DType::F32, F32Matmul::Pedantic).expect("f32"),
            GemmMode::Fp32
        );
        assert_eq!(
            GemmMode::for_dtype(DType::F32, F32Matmul::Tf32).expect("f32"),
            GemmMode::Tf32
        );
        assert_eq!(
            GemmMode::for_dtype(DType::BF16, F32Matmul::Tf32).expect("bf16"),
            GemmMode::Bf16
        );
        assert!(GemmMode::for_dtype(DType::I32, F32Matmul::Default).is_err());
        assert_eq!(GemmMode::Bf16F32Out.output_dtype(), DType::F32);
        for mode in [F32Matmul::Default, F32Matmul::Pedantic, F32Matmul::Tf32] {
            assert_eq!(F32Matmul::from_u8(mode.to_u8()), mode);
        }
    }

    #[test]
    fn compute_types_and_reductions_per_mode() {
        use blas_sys::cublasComputeType_t::*;
        // The lecture's fp32 row is pedantic; the default-mode row is the one PyTorch runs.
        assert_eq!(GemmMode::Fp32.compute_type(), CUBLAS_COMPUTE_32F_PEDANTIC);
        assert_eq!(GemmMode::Fp32Default.compute_type(), CUBLAS_COMPUTE_32F);
        assert_eq!(GemmMode::Tf32.compute_type(), CUBLAS_COMPUTE_32F_FAST_TF32);
        assert_eq!(GemmMode::Bf16.compute_type(), CUBLAS_COMPUTE_32F);
        // Reduced-precision reductions: only where the output is 16-bit.
        assert!(GemmMode::Bf16.reduced_precision_reduction());
        assert!(GemmMode::Fp16.reduced_precision_reduction());
        for mode in [
            GemmMode::Fp32,
            GemmMode::Fp32Default,
            GemmMode::Tf32,
            GemmMode::Bf16F32Out,
        ] {
            assert!(!mode.reduced_precision_reduction(), "{}", mode.name());
        }
    }
}
