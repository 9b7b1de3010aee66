//! Which unit a product's precision asks for: a leaf both the peaks (`peaks`) and the CPU's measured
//! peak loops (`cpu::measured_peak`) name, so that neither imports the other for it.

use crate::base::DType;

/// Matmul precision, which on GPUs decides the unit that does the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MathMode {
    Fp32,
    /// FP32 inputs on tensor cores with 10-bit mantissas (NVIDIA TF32).
    Tf32,
    Bf16,
    Fp16,
}

impl MathMode {
    pub fn for_dtype(dtype: DType) -> Option<MathMode> {
        match dtype {
            DType::F32 => Some(MathMode::Fp32),
            DType::BF16 => Some(MathMode::Bf16),
            DType::F16 => Some(MathMode::Fp16),
            DType::I32 | DType::I64 => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            MathMode::Fp32 => "fp32",
            MathMode::Tf32 => "tf32",
            MathMode::Bf16 => "bf16",
            MathMode::Fp16 => "fp16",
        }
    }
}
