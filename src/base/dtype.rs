//! Element types. A tensor's dtype decides how many bytes each element costs, which is the first
//! half of the lecture's memory accounting.

use half::{bf16, f16};

use super::formats::{self, FloatFormat};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F16,
    BF16,
    I32,
    I64,
}

impl DType {
    pub const ALL: [DType; 5] = [DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64];

    /// Bytes per element (`element_size()` in PyTorch).
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::I64 => 8,
        }
    }

    /// PyTorch's names, so readers recognise them.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::I32 => "int32",
            DType::I64 => "int64",
        }
    }

    pub fn parse(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    pub fn is_float(self) -> bool {
        self.float_format().is_some()
    }

    /// Refuses integer dtypes for `op`, an operation whose result is not integral.
    pub fn require_float(self, op: &'static str) -> Result<()> {
        if self.is_float() {
            return Ok(());
        }
        Err(Error::UnsupportedDType {
            op,
            dtype: self.name(),
            why: "this operation needs a floating-point dtype",
        })
    }

    pub fn float_format(self) -> Option<&'static FloatFormat> {
        match self {
            DType::F32 => Some(&formats::FLOAT32),
            DType::F16 => Some(&formats::FLOAT16),
            DType::BF16 => Some(&formats::BFLOAT16),
            DType::I32 | DType::I64 => None,
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that can be a tensor element.
///
/// Arithmetic on f16 and bf16 elements is done in f32 and rounded back once per operation, as
/// PyTorch does on the CPU; integers use wrapping i64 arithmetic.
pub trait Element: Copy + Send + Sync + std::fmt::Debug + PartialOrd + 'static {
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    /// Floats: rounds to nearest, ties to even. Integers: truncates toward zero, saturating.
    fn from_f64(v: f64) -> Self;
    fn to_f32(self) -> f32;
    fn from_f32(v: f32) -> Self;
    /// Integers exactly (f64 holds only 53 bits, so integer arithmetic must not pass through
    /// it); floats truncate toward zero, saturating.
    fn to_i64(self) -> i64;
    /// Integers wrap (two's complement, like PyTorch's integer casts and overflow); floats round
    /// to nearest even (correctly for |v| ≤ 2^53).
    fn from_i64(v: i64) -> Self;
    fn zero() -> Self;
}

/// One element converted between dtypes: integer to integer exactly (wrapping when narrowing),
/// anything involving a float through f64 (floats round to nearest even, integers truncate).
#[inline]
pub fn convert<S: Element, D: Element>(x: S) -> D {
    if S::DTYPE.is_float() || D::DTYPE.is_float() {
        D::from_f64(x.to_f64())
    } else {
        D::from_i64(x.to_i64())
    }
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        // `as` rounds to nearest-even for f64 -> f32.
        v as f32
    }
    fn to_f32(self) -> f32 {
        self
    }
    fn from_f32(v: f32) -> Self {
        v
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn from_i64(v: i64) -> Self {
        v as f32
    }
    fn zero() -> Self {
        0.0
    }
}

macro_rules! half_element {
    ($t:ty, $dt:expr, $fmt:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            fn from_f64(v: f64) -> Self {
                // `half`'s own f64 conversion drops the low 32 mantissa bits before rounding, which
                // can break ties wrongly; rounding in f64 first makes the final conversion exact.
                <$t>::from_f64(formats::round_to_format(v, &$fmt))
            }
            fn to_f32(self) -> f32 {
                <$t>::to_f32(self)
            }
            fn from_f32(v: f32) -> Self {
                // f32 -> f16/bf16 in `half` is correctly rounded (nearest, ties to even).
                <$t>::from_f32(v)
            }
            fn to_i64(self) -> i64 {
                <$t>::to_f32(self) as i64
            }
            fn from_i64(v: i64) -> Self {
                <Self as Element>::from_f64(v as f64)
            }
            fn zero() -> Self {
                <$t>::ZERO
            }
        }
    };
}
half_element!(f16, DType::F16, formats::FLOAT16);
half_element!(bf16, DType::BF16, formats::BFLOAT16);

macro_rules! int_element {
    ($t:ty, $dt:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            fn to_f64(self) -> f64 {
                self as f64
            }
            /// Truncates toward zero and saturates, as PyTorch's float-to-integer casts do.
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn to_f32(self) -> f32 {
                self as f32
            }
            fn from_f32(v: f32) -> Self {
                v as $t
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            /// Keeps the low bits: i32 overflow wraps, as it does in PyTorch.
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            fn zero() -> Self {
                0
            }
        }
    };
}
int_element!(i32, DType::I32);
int_element!(i64, DType::I64);
