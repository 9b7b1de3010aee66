//! Elementwise operations (the lecture's `pow`, `sqrt`, `rsqrt`, `+`, `*`, `/`, `triu`), with
//! numpy-style broadcasting. Each reports one FLOP per output element to the FLOP counter.

use super::Tensor;
use super::layout::broadcast_shapes;
use crate::device;
use crate::error::{Error, Result};
use crate::flops;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum UnaryOp {
    Neg,
    Sqrt,
    Rsqrt,
    Square,
    Exp,
    Log,
    Abs,
    AddScalar(f64),
    MulScalar(f64),
    DivScalar(f64),
    PowScalar(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Maximum,
}

impl UnaryOp {
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Square => "square",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Abs => "abs",
            UnaryOp::AddScalar(_) => "add_scalar",
            UnaryOp::MulScalar(_) => "mul_scalar",
            UnaryOp::DivScalar(_) => "div_scalar",
            UnaryOp::PowScalar(_) => "pow",
        }
    }

    /// Float arithmetic, in f32 (f16/bf16 inputs are widened, computed, and rounded back once).
    #[inline]
    pub fn apply_f32(self, x: f32) -> f32 {
        match self {
            UnaryOp::Neg => -x,
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => 1.0 / x.sqrt(),
            UnaryOp::Square => x * x,
            UnaryOp::Exp => x.exp(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Abs => x.abs(),
            UnaryOp::AddScalar(s) => x + s as f32,
            UnaryOp::MulScalar(s) => x * s as f32,
            UnaryOp::DivScalar(s) => x / s as f32,
            // Exact special cases, as PyTorch has: x² is one multiply, x^0.5 is sqrt.
            UnaryOp::PowScalar(2.0) => x * x,
            UnaryOp::PowScalar(0.5) => x.sqrt(),
            UnaryOp::PowScalar(p) => x.powf(p as f32),
        }
    }

    /// Integer arithmetic where it stays integral; `None` means the op needs a float dtype.
    #[inline]
    pub fn apply_i64(self, x: i64) -> Option<i64> {
        let integral = |s: f64| (s.fract() == 0.0).then_some(s as i64);
        match self {
            UnaryOp::Neg => Some(x.wrapping_neg()),
            UnaryOp::Square => Some(x.wrapping_mul(x)),
            UnaryOp::Abs => Some(x.wrapping_abs()),
            UnaryOp::AddScalar(s) => integral(s).map(|s| x.wrapping_add(s)),
            UnaryOp::MulScalar(s) => integral(s).map(|s| x.wrapping_mul(s)),
            _ => None,
        }
    }
}

impl BinaryOp {
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Pow => "pow",
            BinaryOp::Maximum => "maximum",
        }
    }

    #[inline]
    pub fn apply_f32(self, a: f32, b: f32) -> f32 {
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Pow => a.powf(b),
            // NaN-propagating, like torch.maximum.
            BinaryOp::Maximum => {
                if a.is_nan() || b.is_nan() {
                    f32::NAN
                } else {
                    a.max(b)
                }
            }
        }
    }

    #[inline]
    pub fn apply_i64(self, a: i64, b: i64) -> Option<i64> {
        match self {
            BinaryOp::Add => Some(a.wrapping_add(b)),
            BinaryOp::Sub => Some(a.wrapping_sub(b)),
            BinaryOp::Mul => Some(a.wrapping_mul(b)),
            BinaryOp::Maximum => Some(a.max(b)),
            BinaryOp::Div | BinaryOp::Pow => None,
        }
    }
}

impl Tensor {
    pub fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        let out = device::unary(op, self)?;
        flops::record(op.name(), out.numel() as u64);
        Ok(out)
    }

    /// Elementwise `op` after broadcasting both operands to a common shape.
    pub fn binary(&self, other: &Tensor, op: BinaryOp) -> Result<Tensor> {
        if self.dtype() != other.dtype() {
            return Err(Error::DTypeMismatch {
                op: op.name(),
                lhs: self.dtype().name(),
                rhs: other.dtype().name(),
            });
        }
        let shape = broadcast_shapes(op.name(), self.shape(), other.shape())?;
        let a = self.with_layout(self.layout().broadcast_to(&shape)?);
        let b = other.with_layout(other.layout().broadcast_to(&shape)?);
        let out = device::binary(op, &a, &b)?;
        flops::record(op.name(), out.numel() as u64);
        Ok(out)
    }

    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(other, BinaryOp::Add)
    }
    pub fn sub(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(other, BinaryOp::Sub)
    }
    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(other, BinaryOp::Mul)
    }
    pub fn div(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(other, BinaryOp::Div)
    }
    pub fn pow(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(other, BinaryOp::Pow)
    }
    pub fn maximum(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(other, BinaryOp::Maximum)
    }

    pub fn add_scalar(&self, s: f64) -> Result<Tensor> {
        self.unary(UnaryOp::AddScalar(s))
    }
    pub fn sub_scalar(&self, s: f64) -> Result<Tensor> {
        self.unary(UnaryOp::AddScalar(-s))
    }
    pub fn mul_scalar(&self, s: f64) -> Result<Tensor> {
        self.unary(UnaryOp::MulScalar(s))
    }
    pub fn div_scalar(&self, s: f64) -> Result<Tensor> {
        self.unary(UnaryOp::DivScalar(s))
    }
    pub fn pow_scalar(&self, p: f64) -> Result<Tensor> {
        self.unary(UnaryOp::PowScalar(p))
    }
    pub fn neg(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Neg)
    }
    pub fn sqrt(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Sqrt)
    }
    pub fn rsqrt(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Rsqrt)
    }
    pub fn square(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Square)
    }
    pub fn exp(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Exp)
    }
    pub fn log(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Log)
    }
    pub fn abs(&self) -> Result<Tensor> {
        self.unary(UnaryOp::Abs)
    }

    /// Upper triangle of the last two dimensions: elements with column ≥ row + `diagonal` are
    /// kept, the rest set to 0 (the causal-mask building block).
    pub fn triu(&self, diagonal: i64) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(Error::invalid(
                "triu",
                format!("needs at least 2 dimensions, got shape {:?}", self.shape()),
            ));
        }
        device::triu(self, diagonal)
    }
}
