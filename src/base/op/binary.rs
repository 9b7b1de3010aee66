//! The binary elementwise ops (`+`, `-`, `*`, `/`), one table entry each, with the fields of a
//! unary entry (see `unary.rs`) for two operands `a` and `b`, and one derivative per operand:
//! `grad_a` and `grad_b` name the operands they read after `g` (autograd keeps an operand only
//! when a gradient that is wanted reads it). Operands are broadcast to one shape first; autograd
//! sums each gradient back to its operand's shape.

use super::{Accuracy, GELU_FLOPS_PER_ELEMENT, Gradient, operand, reads};
use crate::base::DType;
use crate::error::Error;
use crate::error::Result;

/// The table; `$then` is a macro that receives every entry.
macro_rules! binary_op_table {
    ($then:ident) => {
        $then! {
            /// `a + b`.
            Add => add {
                name: "add",
                f32: |a, b| a + b,
                i64: |a, b| Some(a.wrapping_add(b)),
                exact: |a, b| a + b,
                accuracy: CorrectlyRounded,
                grad_a: |g| Ok(g.clone()),
                grad_b: |g| Ok(g.clone()),
            }
            /// `a - b`.
            Sub => sub {
                name: "sub",
                f32: |a, b| a - b,
                i64: |a, b| Some(a.wrapping_sub(b)),
                exact: |a, b| a - b,
                accuracy: CorrectlyRounded,
                grad_a: |g| Ok(g.clone()),
                grad_b: |g| g.neg(),
            }
            /// `a · b`.
            Mul => mul {
                name: "mul",
                f32: |a, b| a * b,
                i64: |a, b| Some(a.wrapping_mul(b)),
                exact: |a, b| a * b,
                accuracy: CorrectlyRounded,
                grad_a: |g, b| g.mul(b),
                grad_b: |g, a| g.mul(a),
            }
            /// `a / b`.
            Div => div {
                name: "div",
                f32: |a, b| a / b,
                i64: |_a, _b| None,
                exact: |a, b| a / b,
                accuracy: CorrectlyRounded,
                grad_a: |g, b| g.div(b),
                grad_b: |g, a, b| g.div(b)?.mul(a)?.div(b)?.neg(),
            }
            /// ReLU's backward, `g` where `x > 0` and 0 elsewhere (PyTorch's `threshold_backward`):
            /// `a` is the output's gradient, `b` ReLU's input. Counted as 1 FLOP per element.
            /// Its derivative in `x` is 0 wherever it exists.
            ReluBackward => relu_backward {
                name: "relu_backward",
                f32: |g, x| if x <= 0.0 { 0.0 } else { g },
                i64: |g, x| Some(if x > 0 { g } else { 0 }),
                exact: |g, x| if x <= 0.0 { 0.0 } else { g },
                accuracy: CorrectlyRounded,
                grad_a: |g, b| g.relu_backward(b),
                grad_b: |g| g.mul_scalar(0.0),
            }
            /// GeLU's backward, `g · gelu'(x)`. Counted as 20 FLOPs per element. Differentiable in
            /// `g` only: a second derivative of GeLU is not declared (see `BinaryOp::is_backward`).
            GeluBackward => gelu_backward {
                name: "gelu_backward",
                f32: |g, x| g * crate::base::math::gelu_derivative(x),
                i64: |_g, _x| None,
                exact: |g, x| g * crate::base::math::exact::gelu_derivative(x),
                accuracy: Approximation,
                grad_a: |g, b| g.gelu_backward(b),
                grad_b: |_g| Err(crate::base::op::binary::no_second_derivative("gelu_backward")),
            }
            /// The tanh form's backward, `g · gelu_tanh'(x)`, likewise.
            GeluTanhBackward => gelu_tanh_backward {
                name: "gelu_tanh_backward",
                f32: |g, x| g * crate::base::math::gelu_tanh_derivative(x),
                i64: |_g, _x| None,
                exact: |g, x| g * crate::base::math::exact::gelu_tanh_derivative(x),
                accuracy: Approximation,
                grad_a: |g, b| g.gelu_tanh_backward(b),
                grad_b: |_g| Err(crate::base::op::binary::no_second_derivative("gelu_tanh_backward")),
            }
        }
    };
}
pub(crate) use binary_op_table;

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
macro_rules! define_binary_ops {
    ($(
        $(#[$meta:meta])*
        $variant:ident => $method:ident {
            name: $name:literal,
            $(kernel: $kernel:literal,)?
            f32: |$fa:ident, $fb:ident| $f32:expr,
            i64: |$ia:ident, $ib:ident| $i64:expr,
            exact: |$ea:ident, $eb:ident| $exact:expr,
            accuracy: $accuracy:ident,
            grad_a: |$ga:ident $(, $gas:ident)*| $grad_a:expr,
            grad_b: |$gb:ident $(, $gbs:ident)*| $grad_b:expr $(,)?
        }
    )*) => {
        /// A binary elementwise op.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum BinaryOp {
            $($(#[$meta])* $variant,)*
        }

        impl BinaryOp {
            /// Every op once.
            pub const ALL: &'static [BinaryOp] = &[$(BinaryOp::$variant),*];

            pub fn name(self) -> &'static str {
                match self {
                    $(BinaryOp::$variant => $name,)*
                }
            }

            /// The CUDA kernel, without its dtype suffix.
            pub fn kernel(self) -> &'static str {
                match self {
                    $(BinaryOp::$variant => kernel_name!($name $($kernel)?),)*
                }
            }

            /// The arithmetic on floats, in f32.
            #[inline]
            pub fn apply_f32(self, a: f32, b: f32) -> f32 {
                match self {
                    $(BinaryOp::$variant => {
                        let ($fa, $fb) = (a, b);
                        $f32
                    })*
                }
            }

            /// Hands `body` this op's f32 arithmetic as a closure of its own type (see
            /// `UnaryOp::with_f32`).
            #[inline]
            pub fn with_f32<B: BinaryBody>(self, body: B) -> B::Output {
                match self {
                    $(BinaryOp::$variant => body.run(move |$fa: f32, $fb: f32| -> f32 { $f32 }),)*
                }
            }

            /// The arithmetic on integers, exact and wrapping; `None` when the op needs a float
            /// dtype (which does not depend on the elements).
            #[inline]
            pub fn apply_i64(self, a: i64, b: i64) -> Option<i64> {
                match self {
                    $(BinaryOp::$variant => {
                        let ($ia, $ib) = (a, b);
                        $i64
                    })*
                }
            }

            /// The exact value `apply_f32` approximates.
            pub fn exact(self, a: f64, b: f64) -> f64 {
                match self {
                    $(BinaryOp::$variant => {
                        let ($ea, $eb) = (a, b);
                        $exact
                    })*
                }
            }

            pub fn accuracy(self) -> Accuracy {
                match self {
                    $(BinaryOp::$variant => Accuracy::$accuracy,)*
                }
            }

            /// Which operands autograd keeps, given which gradients are wanted: an operand is kept
            /// when a wanted gradient reads it.
            pub fn saves(self, need: [bool; 2]) -> [bool; 2] {
                match self {
                    $(BinaryOp::$variant => [
                        (need[0] && reads!(a: $($gas)*)) || (need[1] && reads!(a: $($gbs)*)),
                        (need[0] && reads!(b: $($gas)*)) || (need[1] && reads!(b: $($gbs)*)),
                    ],)*
                }
            }

            /// The gradients of the operands wanted in `need` (before summing back to their
            /// shapes), given the output's gradient `g` and the operands [`Self::saves`] kept,
            /// by the derivatives declared with the op.
            pub fn derivatives<T: Gradient>(
                self,
                g: &T,
                a: Option<&T>,
                b: Option<&T>,
                need: [bool; 2],
            ) -> Result<[Option<T>; 2]> {
                Ok(match self {
                    $(BinaryOp::$variant => [
                        if need[0] {
                            let $ga = g;
                            $(let $gas = operand!($gas, a, b);)*
                            let d: Result<T> = $grad_a;
                            Some(d?)
                        } else {
                            None
                        },
                        if need[1] {
                            let $gb = g;
                            $(let $gbs = operand!($gbs, a, b);)*
                            let d: Result<T> = $grad_b;
                            Some(d?)
                        } else {
                            None
                        },
                    ],)*
                })
            }
        }
    };
}

binary_op_table!(define_binary_ops);

/// What runs a binary op's f32 arithmetic, given as a closure ([`BinaryOp::with_f32`]).
pub trait BinaryBody {
    type Output;
    fn run<F: Fn(f32, f32) -> f32 + Copy + Send + Sync>(self, f: F) -> Self::Output;
}

impl BinaryOp {
    /// Whether integer tensors take this op (the result stays integral).
    pub fn integral(self) -> bool {
        self.apply_i64(1, 1).is_some()
    }

    /// Refuses an integer dtype when the result would not be integral.
    pub fn check_dtype(self, dtype: DType) -> Result<()> {
        if self.integral() {
            return Ok(());
        }
        dtype.require_float(self.name())
    }

    /// FLOPs for `outputs` output elements: one each, but 20 for GeLU's backward.
    pub fn flops(self, outputs: usize) -> u64 {
        let per_element = match self {
            BinaryOp::GeluBackward | BinaryOp::GeluTanhBackward => GELU_FLOPS_PER_ELEMENT,
            _ => 1,
        };
        super::elementwise_flops(outputs, per_element)
    }

    /// Whether this op is another op's backward (`a` the gradient, `b` the forward's input).
    /// Those are differentiable in `a`; GeLU's are not in `b` (its second derivative, which
    /// only a double backward needs, is not declared), and ReLU's is 0 there.
    pub fn is_backward(self) -> bool {
        matches!(
            self,
            BinaryOp::ReluBackward | BinaryOp::GeluBackward | BinaryOp::GeluTanhBackward
        )
    }
}

/// The error a GeLU backward's derivative in its input gives.
pub(crate) fn no_second_derivative(op: &'static str) -> Error {
    Error::invalid(
        op,
        "has no derivative in GeLU's input declared (a second derivative of GeLU, which only a double backward needs)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_are_kept_only_for_the_gradients_that_read_them() {
        assert_eq!(BinaryOp::Add.saves([true, true]), [false, false]);
        assert_eq!(BinaryOp::Mul.saves([true, false]), [false, true]);
        assert_eq!(BinaryOp::Mul.saves([false, true]), [true, false]);
        assert_eq!(BinaryOp::Div.saves([true, false]), [false, true]);
        assert_eq!(BinaryOp::Div.saves([false, true]), [true, true]);
    }

    #[test]
    fn names_and_kernels_are_distinct() {
        for (i, a) in BinaryOp::ALL.iter().enumerate() {
            for b in &BinaryOp::ALL[i + 1..] {
                assert!(a.name() != b.name() && a.kernel() != b.kernel(), "{a:?} and {b:?}");
            }
        }
    }

    #[test]
    fn division_is_for_floats() {
        assert!(BinaryOp::Div.check_dtype(DType::I32).is_err());
        assert!(BinaryOp::Div.check_dtype(DType::F16).is_ok());
        assert!(BinaryOp::Mul.check_dtype(DType::I64).is_ok());
        assert_eq!(BinaryOp::Sub.apply_i64(i64::MIN, 1), Some(i64::MAX));
    }
}
