//! The unary elementwise ops (the lecture's `pow`, `sqrt`, `rsqrt`, scaling and shifting by a
//! scalar), one table entry each. An entry holds:
//! - `name` (errors, the FLOP counter) and `kernel`, when the CUDA kernel's name differs: the GPU
//!   runs `<kernel>_<dtype>` from `kernels/elementwise.cu`;
//! - `f32`: the arithmetic on floats. f16 and bf16 elements are widened to f32, computed, and
//!   rounded back once, as PyTorch does on the CPU; the CUDA kernel computes the same;
//! - `i64`: the arithmetic on integers (exact, wrapping) where the result stays integral, `None`
//!   where the op needs a float dtype;
//! - `exact`: the value `f32` approximates, in f64, and `accuracy`: how closely (tests hold every
//!   op to it);
//! - `grad`: the gradient of the input, given the output's gradient `g` and, when it needs one,
//!   the input `x` or the output `y` (autograd keeps that one for backward). It is expanded in the
//!   autograd layer, where `g`, `x` and `y` are tensors.
//!
//! The order of the fields is fixed. A scalar op names its scalar after the variant (`s`, `p`).

use super::{Accuracy, GELU_FLOPS_PER_ELEMENT, Gradient, Saves, integral, saves};
use crate::base::DType;
use crate::error::Result;

/// The table; `$then` is a macro that receives every entry (see the module docs).
macro_rules! unary_op_table {
    ($then:ident) => {
        $then! {
            /// `-x`.
            Neg => neg {
                name: "neg",
                f32: |x| -x,
                i64: |x| Some(x.wrapping_neg()),
                exact: |x| -x,
                accuracy: CorrectlyRounded,
                grad: |g| g.neg(),
            }
            /// `√x`.
            Sqrt => sqrt {
                name: "sqrt",
                f32: |x| x.sqrt(),
                i64: |_x| None,
                exact: |x| x.sqrt(),
                accuracy: CorrectlyRounded,
                grad: |g, y| g.div(&y.mul_scalar(2.0)?),
            }
            /// `1 / √x`.
            Rsqrt => rsqrt {
                name: "rsqrt",
                f32: |x| 1.0 / x.sqrt(),
                i64: |_x| None,
                exact: |x| 1.0 / x.sqrt(),
                accuracy: TwoRoundings,
                grad: |g, y| y.square()?.mul(y)?.mul_scalar(-0.5)?.mul(g),
            }
            /// `x²`.
            Square => square {
                name: "square",
                f32: |x| x * x,
                i64: |x| Some(x.wrapping_mul(x)),
                exact: |x| x * x,
                accuracy: CorrectlyRounded,
                grad: |g, x| x.mul_scalar(2.0)?.mul(g),
            }
            /// `x + s` (the scalar is rounded to f32 first, as PyTorch does for a Python number).
            AddScalar(s) => add_scalar {
                name: "add_scalar",
                f32: |x| x + s as f32,
                i64: |x| integral(s).map(|s| x.wrapping_add(s)),
                exact: |x| x + s as f32 as f64,
                accuracy: CorrectlyRounded,
                grad: |g| Ok(g.clone()),
            }
            /// `x · s`.
            MulScalar(s) => mul_scalar {
                name: "mul_scalar",
                f32: |x| x * s as f32,
                i64: |x| integral(s).map(|s| x.wrapping_mul(s)),
                exact: |x| x * s as f32 as f64,
                accuracy: CorrectlyRounded,
                grad: |g| g.mul_scalar(s),
            }
            /// `x / s`.
            DivScalar(s) => div_scalar {
                name: "div_scalar",
                f32: |x| x / s as f32,
                i64: |_x| None,
                exact: |x| x / s as f32 as f64,
                accuracy: CorrectlyRounded,
                grad: |g| g.div_scalar(s),
            }
            /// ReLU, `max(x, 0)` (NaN stays NaN, as in PyTorch). Counted as 1 FLOP per element.
            Relu => relu {
                name: "relu",
                f32: |x| crate::base::math::relu(x),
                i64: |x| Some(x.max(0)),
                exact: |x| if x > 0.0 || x.is_nan() { x } else { 0.0 },
                accuracy: CorrectlyRounded,
                grad: |g, x| g.relu_backward(x),
            }
            /// GeLU, `x·Φ(x)` with `Φ` from `erfc` (`math::normal_cdf`; PyTorch's `F.gelu`,
            /// `approximate='none'`). Counted as 20 FLOPs per element, the lecture's convention
            /// (`GELU_FLOPS_PER_ELEMENT`).
            Gelu => gelu {
                name: "gelu",
                f32: |x| crate::base::math::gelu(x),
                i64: |_x| None,
                exact: |x| crate::base::math::exact::gelu(x),
                accuracy: Approximation,
                grad: |g, x| g.gelu_backward(x),
            }
            /// GeLU through `tanh` (`approximate='tanh'`). Counted as 20 FLOPs per element.
            GeluTanh => gelu_tanh {
                name: "gelu_tanh",
                f32: |x| crate::base::math::gelu_tanh(x),
                i64: |_x| None,
                exact: |x| crate::base::math::exact::gelu_tanh(x),
                accuracy: Approximation,
                grad: |g, x| g.gelu_tanh_backward(x),
            }
            /// The error function, `erf x` (`math::erf`, a polynomial that stays accurate relative
            /// to itself near 0): the piece of GeLU that the lecture's unfused form,
            /// `0.5·x·(1 + erf(x/√2))`, runs as an op of its own. Counted as 1 FLOP per element,
            /// as every op but GeLU.
            Erf => erf {
                name: "erf",
                f32: |x| crate::base::math::erf(x),
                i64: |_x| None,
                exact: |x| libm::erf(x),
                accuracy: Approximation,
                grad: |g, x| x.square()?.neg()?.exp()?.mul_scalar(std::f64::consts::FRAC_2_SQRT_PI)?.mul(g),
            }
            /// `eˣ` (the math library's `expf`; erf's derivative needs it).
            Exp => exp {
                name: "exp",
                f32: |x| x.exp(),
                i64: |_x| None,
                exact: |x| x.exp(),
                accuracy: MathLibrary,
                grad: |g, y| g.mul(y),
            }
            /// `xᵖ` elementwise (`p` = 2 and 0.5 run as `square` and `sqrt`: see
            /// [`UnaryOp::simplified`]).
            PowScalar(p) => pow_scalar {
                name: "pow",
                kernel: "pow_scalar",
                f32: |x| x.powf(p as f32),
                i64: |_x| None,
                exact: |x| x.powf(p as f32 as f64),
                accuracy: MathLibrary,
                grad: |g, x| x.pow_scalar(p - 1.0)?.mul_scalar(p)?.mul(g),
            }
        }
    };
}
pub(crate) use unary_op_table;

/// `f64` for a scalar named in the table.
macro_rules! scalar_type {
    ($s:ident) => {
        f64
    };
}

/// A placeholder scalar for `UnaryOp::ALL`.
macro_rules! placeholder {
    ($s:ident) => {
        1.0
    };
}

/// `Some(scalar)` for a scalar op, `None` otherwise.
macro_rules! scalar_of {
    () => {
        None
    };
    ($s:ident) => {
        Some($s)
    };
}

/// The kernel's name: the declared one, else the op's name.
macro_rules! kernel_name {
    ($name:literal $kernel:literal) => {
        $kernel
    };
    ($name:literal) => {
        $name
    };
}

/// Everything the ops themselves are, from the table.
macro_rules! define_unary_ops {
    ($(
        $(#[$meta:meta])*
        $variant:ident $(($s:ident))? => $method:ident {
            name: $name:literal,
            $(kernel: $kernel:literal,)?
            f32: |$fx:ident| $f32:expr,
            i64: |$ix:ident| $i64:expr,
            exact: |$ex:ident| $exact:expr,
            accuracy: $accuracy:ident,
            grad: |$g:ident $(, $gs:ident)?| $grad:expr $(,)?
        }
    )*) => {
        /// A unary elementwise op; a scalar op carries its scalar.
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub enum UnaryOp {
            $($(#[$meta])* $variant $((scalar_type!($s)))?,)*
        }

        #[allow(unused_variables)]
        impl UnaryOp {
            /// Every op once (scalar ops with a placeholder scalar: see [`UnaryOp::with_scalar`]).
            pub const ALL: &'static [UnaryOp] = &[$(UnaryOp::$variant $((placeholder!($s)))?),*];

            pub fn name(self) -> &'static str {
                match self {
                    $(UnaryOp::$variant $(($s))? => $name,)*
                }
            }

            /// The CUDA kernel, without its dtype suffix.
            pub fn kernel(self) -> &'static str {
                match self {
                    $(UnaryOp::$variant $(($s))? => kernel_name!($name $($kernel)?),)*
                }
            }

            /// The scalar of a scalar op.
            pub fn scalar(self) -> Option<f64> {
                match self {
                    $(UnaryOp::$variant $(($s))? => scalar_of!($($s)?),)*
                }
            }

            /// The same op with another scalar (ops without one are returned as they are).
            pub fn with_scalar(self, value: f64) -> UnaryOp {
                match self {
                    $(UnaryOp::$variant $(($s))? => {
                        $(let $s = value;)?
                        UnaryOp::$variant $(($s))?
                    })*
                }
            }

            /// The arithmetic on floats, in f32.
            #[inline]
            pub fn apply_f32(self, x: f32) -> f32 {
                match self {
                    $(UnaryOp::$variant $(($s))? => {
                        let $fx = x;
                        $f32
                    })*
                }
            }

            /// Hands `body` this op's f32 arithmetic as a closure of its own type: a loop over
            /// many elements is then compiled, and vectorised, once per op, instead of matching
            /// the op at every element. The CPU backend's loops take their body this way.
            #[inline]
            pub fn with_f32<B: UnaryBody>(self, body: B) -> B::Output {
                match self {
                    $(UnaryOp::$variant $(($s))? => body.run(move |$fx: f32| -> f32 { $f32 }),)*
                }
            }

            /// The arithmetic on integers, exact and wrapping; `None` when the op needs a float
            /// dtype (which does not depend on the element).
            #[inline]
            pub fn apply_i64(self, x: i64) -> Option<i64> {
                match self {
                    $(UnaryOp::$variant $(($s))? => {
                        let $ix = x;
                        $i64
                    })*
                }
            }

            /// The exact value `apply_f32` approximates.
            pub fn exact(self, x: f64) -> f64 {
                match self {
                    $(UnaryOp::$variant $(($s))? => {
                        let $ex = x;
                        $exact
                    })*
                }
            }

            pub fn accuracy(self) -> Accuracy {
                match self {
                    $(UnaryOp::$variant $(($s))? => Accuracy::$accuracy,)*
                }
            }

            /// The gradient of the input, given the output's gradient `g` and the tensor
            /// [`Self::saves`] names (`saved`), by the derivative declared with the op.
            pub fn derivative<T: Gradient>(self, g: &T, saved: Option<&T>) -> Result<T> {
                match self {
                    $(UnaryOp::$variant $(($s))? => {
                        let $g = g;
                        $(let $gs = saved.ok_or_else(super::not_saved)?;)?
                        $grad
                    })*
                }
            }

            /// What the derivative reads, and so what autograd keeps.
            pub fn saves(self) -> Saves {
                match self {
                    $(UnaryOp::$variant $(($s))? => saves!($($gs)?),)*
                }
            }
        }
    };
}

unary_op_table!(define_unary_ops);

/// What runs a unary op's f32 arithmetic, given as a closure ([`UnaryOp::with_f32`]).
pub trait UnaryBody {
    type Output;
    fn run<F: Fn(f32) -> f32 + Copy + Send + Sync>(self, f: F) -> Self::Output;
}

impl UnaryOp {
    /// Whether integer tensors take this op (the result stays integral).
    pub fn integral(self) -> bool {
        self.apply_i64(0).is_some()
    }

    /// Refuses an integer dtype when the result would not be integral.
    pub fn check_dtype(self, dtype: DType) -> Result<()> {
        if self.integral() {
            return Ok(());
        }
        dtype.require_float(self.name())
    }

    /// The op a float backend runs: `pow` with 2 and 0.5 are exactly `square` and `sqrt`, as in
    /// PyTorch (`powf` is not correctly rounded). Integer dtypes refuse `pow` whatever `p` is.
    pub fn simplified(self) -> UnaryOp {
        match self {
            UnaryOp::PowScalar(2.0) => UnaryOp::Square,
            UnaryOp::PowScalar(0.5) => UnaryOp::Sqrt,
            op => op,
        }
    }

    /// FLOPs for `outputs` output elements: one each, but 20 for GeLU (the lecture's count).
    pub fn flops(self, outputs: usize) -> u64 {
        let per_element = match self {
            UnaryOp::Gelu | UnaryOp::GeluTanh => GELU_FLOPS_PER_ELEMENT,
            _ => 1,
        };
        super::elementwise_flops(outputs, per_element)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_kernels_and_scalars_come_from_the_table() {
        assert_eq!(UnaryOp::PowScalar(3.0).name(), "pow");
        assert_eq!(UnaryOp::PowScalar(3.0).kernel(), "pow_scalar");
        assert_eq!(UnaryOp::Sqrt.kernel(), "sqrt");
        assert_eq!(UnaryOp::AddScalar(1.0).with_scalar(2.5), UnaryOp::AddScalar(2.5));
        assert_eq!(UnaryOp::Neg.with_scalar(2.5), UnaryOp::Neg);
        assert_eq!(UnaryOp::MulScalar(-3.0).scalar(), Some(-3.0));
        assert_eq!(UnaryOp::Sqrt.scalar(), None);
        for (i, a) in UnaryOp::ALL.iter().enumerate() {
            for b in &UnaryOp::ALL[i + 1..] {
                assert!(a.name() != b.name() && a.kernel() != b.kernel(), "{a:?} and {b:?}");
            }
        }
    }

    #[test]
    fn integer_tensors_take_only_integral_ops() {
        assert!(UnaryOp::AddScalar(2.0).check_dtype(DType::I32).is_ok());
        assert!(UnaryOp::AddScalar(0.5).check_dtype(DType::I32).is_err());
        assert!(UnaryOp::AddScalar(0.5).check_dtype(DType::BF16).is_ok());
        assert!(UnaryOp::Sqrt.check_dtype(DType::I64).is_err());
        assert!(UnaryOp::PowScalar(2.0).check_dtype(DType::I64).is_err());
        assert_eq!(
            UnaryOp::MulScalar(3.0).apply_i64(i64::MAX),
            Some(i64::MAX.wrapping_mul(3))
        );
    }

    #[test]
    fn pow_with_two_and_one_half_is_exact() {
        assert_eq!(UnaryOp::PowScalar(2.0).simplified(), UnaryOp::Square);
        assert_eq!(UnaryOp::PowScalar(0.5).simplified(), UnaryOp::Sqrt);
        assert_eq!(UnaryOp::PowScalar(3.0).simplified(), UnaryOp::PowScalar(3.0));
        assert_eq!(UnaryOp::Rsqrt.apply_f32(4.0), 0.5);
        assert_eq!(UnaryOp::DivScalar(0.5).apply_f32(3.0), 6.0);
    }
}
