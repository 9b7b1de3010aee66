//! The backward rule of every differentiable op. Each op saves exactly what its rule needs, and
//! each rule computes input gradients only where `needs` says an input wants one.
//!
//! With `g` the gradient arriving at the op's output:
//! - `c = a @ b`: `∂a = g @ bᵀ`, `∂b = aᵀ @ g` (2·m·n·k FLOPs each), summed over batch
//!   dimensions that were broadcast;
//! - elementwise ops: the derivative declared with the op (`base::op`), for a binary op summed
//!   back to each operand's shape;
//! - `sum`/`mean`: `g` spread back (divided by the count for the mean);
//! - views (`reshape`, `transpose`, `squeeze`, `unsqueeze`) and casts: the inverse view or cast;
//! - `mse(pred, target) = mean((pred − target)²)`: `∂pred = 2·(pred − target)/n · g`.

use crate::base::op::Gradient;
use crate::base::{BinaryOp, ReduceOp, UnaryOp};
use crate::error::Result;
use crate::tensor::{DType, Tensor};

pub(crate) enum Op {
    /// `a` is saved only if `b` needs a gradient, and `b` only if `a` does.
    MatMul {
        a: Option<Tensor>,
        b: Option<Tensor>,
        a_shape: Vec<usize>,
        b_shape: Vec<usize>,
    },
    /// `saved`: the input or output the derivative reads, if it reads one.
    Unary {
        op: UnaryOp,
        saved: Option<Tensor>,
    },
    /// An operand is saved only if a wanted gradient reads it.
    Binary {
        op: BinaryOp,
        a: Option<Tensor>,
        b: Option<Tensor>,
        a_shape: Vec<usize>,
        b_shape: Vec<usize>,
    },
    Sum {
        in_shape: Vec<usize>,
        dims: Vec<usize>,
        keepdim: bool,
    },
    Mean {
        in_shape: Vec<usize>,
        dims: Vec<usize>,
        keepdim: bool,
        count: usize,
    },
    Reshape {
        in_shape: Vec<usize>,
    },
    Transpose(usize, usize),
    Squeeze(usize),
    Unsqueeze(usize),
    Cast {
        from: DType,
    },
    MseLoss {
        diff: Tensor,
    },
}

type Grads = Vec<Option<Tensor>>;

impl Op {
    /// What this op keeps alive for backward.
    /// The FLOPs the forward op that made a node of `outputs` elements counted, by the FLOP
    /// counter's conventions (`crate::flops`): what the graph's listing says each op cost.
    pub(crate) fn forward_flops(&self, outputs: usize) -> u64 {
        match self {
            Op::MatMul { a_shape, .. } => 2 * outputs as u64 * a_shape.last().copied().unwrap_or(1) as u64,
            Op::Unary { op, .. } => op.flops(outputs),
            Op::Binary { op, .. } => op.flops(outputs),
            Op::Sum { in_shape, .. } => ReduceOp::Sum.flops(in_shape.iter().product()),
            Op::Mean { in_shape, .. } => ReduceOp::Mean.flops(in_shape.iter().product()),
            // pred − target, its square, their mean.
            Op::MseLoss { diff } => {
                let n = diff.numel();
                BinaryOp::Sub.flops(n) + UnaryOp::Square.flops(n) + ReduceOp::Mean.flops(n)
            }
            _ => 0,
        }
    }

    pub(crate) fn saved(&self) -> Vec<&Tensor> {
        match self {
            Op::MatMul { a, b, .. } | Op::Binary { a, b, .. } => a.iter().chain(b.iter()).collect(),
            Op::Unary { saved, .. } => saved.iter().collect(),
            Op::MseLoss { diff } => vec![diff],
            _ => Vec::new(),
        }
    }

    /// Input gradients for output gradient `g`; `needs[i]` says whether input `i` wants one.
    pub(crate) fn backward(&self, g: &Tensor, needs: &[bool]) -> Result<Grads> {
        let need = |i: usize| needs.get(i).copied().unwrap_or(false);
        Ok(match self {
            Op::MatMul { a, b, a_shape, b_shape } => {
                matmul_backward(g, a.as_ref(), b.as_ref(), a_shape, b_shape, need(0), need(1))?
            }
            Op::Unary { op, saved } => vec![Some(op.derivative(g, saved.as_ref())?)],
            Op::Binary {
                op,
                a,
                b,
                a_shape,
                b_shape,
            } => {
                let [da, db] = op.derivatives(g, a.as_ref(), b.as_ref(), [need(0), need(1)])?;
                vec![
                    da.map(|d| d.sum_to_shape(a_shape)).transpose()?,
                    db.map(|d| d.sum_to_shape(b_shape)).transpose()?,
                ]
            }
            Op::Sum {
                in_shape,
                dims,
                keepdim,
            } => vec![Some(spread(g, in_shape, dims, *keepdim)?)],
            Op::Mean {
                in_shape,
                dims,
                keepdim,
                count,
            } => {
                // Divide the (small) incoming gradient before spreading it over the (large) input.
                vec![Some(spread(&g.div_scalar(*count as f64)?, in_shape, dims, *keepdim)?)]
            }
            Op::Reshape { in_shape } => vec![Some(g.reshape(in_shape)?)],
            Op::Transpose(d0, d1) => vec![Some(g.transpose(*d0 as isize, *d1 as isize)?)],
            Op::Squeeze(d) => vec![Some(g.unsqueeze(*d)?)],
            Op::Unsqueeze(d) => vec![Some(g.squeeze(*d)?)],
            Op::Cast { from } => vec![Some(g.to_dtype(*from)?)],
            Op::MseLoss { diff } => {
                let d_pred = diff.mul_scalar(2.0 / diff.numel().max(1) as f64)?.mul(g)?;
                let d_target = if need(1) { Some(d_pred.neg()?) } else { None };
                vec![need(0).then_some(d_pred), d_target]
            }
        })
    }
}

/// The table's derivatives run on tensors (`UnaryOp::derivative`, `BinaryOp::derivatives`).
impl Gradient for Tensor {
    fn neg(&self) -> Result<Tensor> {
        Tensor::neg(self)
    }
    fn mul(&self, other: &Tensor) -> Result<Tensor> {
        Tensor::mul(self, other)
    }
    fn div(&self, other: &Tensor) -> Result<Tensor> {
        Tensor::div(self, other)
    }
    fn mul_scalar(&self, s: f64) -> Result<Tensor> {
        Tensor::mul_scalar(self, s)
    }
    fn div_scalar(&self, s: f64) -> Result<Tensor> {
        Tensor::div_scalar(self, s)
    }
    fn square(&self) -> Result<Tensor> {
        Tensor::square(self)
    }
    fn exp(&self) -> Result<Tensor> {
        Tensor::exp(self)
    }
    fn pow_scalar(&self, p: f64) -> Result<Tensor> {
        Tensor::pow_scalar(self, p)
    }
    fn relu_backward(&self, x: &Tensor) -> Result<Tensor> {
        Tensor::relu_backward(self, x)
    }
    fn gelu_backward(&self, x: &Tensor) -> Result<Tensor> {
        Tensor::gelu_backward(self, x)
    }
    fn gelu_tanh_backward(&self, x: &Tensor) -> Result<Tensor> {
        Tensor::gelu_tanh_backward(self, x)
    }
}

fn when(need: bool, f: impl FnOnce() -> Result<Tensor>) -> Result<Option<Tensor>> {
    if need { f().map(Some) } else { Ok(None) }
}

fn saved(t: Option<&Tensor>) -> Result<&Tensor> {
    t.ok_or_else(|| crate::error::Error::invalid("backward", "a tensor the rule needs was not saved (internal error)"))
}

/// The gradient of a reduction: `g` broadcast back over the reduced dimensions (a view).
fn spread(g: &Tensor, in_shape: &[usize], dims: &[usize], keepdim: bool) -> Result<Tensor> {
    let mut g = g.clone();
    if !keepdim {
        for &d in dims {
            g = g.unsqueeze(d)?;
        }
    }
    g.broadcast_to(in_shape)
}

/// `c = a @ b` with PyTorch's rules (1-D operands promoted, batch dimensions broadcast).
fn matmul_backward(
    g: &Tensor,
    a: Option<&Tensor>,
    b: Option<&Tensor>,
    a_shape: &[usize],
    b_shape: &[usize],
    need_a: bool,
    need_b: bool,
) -> Result<Grads> {
    let (a_vec, b_vec) = (a_shape.len() == 1, b_shape.len() == 1);
    // Undo the forward's squeezes so g is [batch…, m, n].
    let mut g2 = g.clone();
    if a_vec {
        g2 = g2.unsqueeze(if b_vec { g2.ndim() } else { g2.ndim() - 1 })?;
    }
    if b_vec {
        g2 = g2.unsqueeze(g2.ndim())?;
    }
    let promote_a = |a: &Tensor| if a_vec { a.unsqueeze(0) } else { Ok(a.clone()) };
    let promote_b = |b: &Tensor| if b_vec { b.unsqueeze(1) } else { Ok(b.clone()) };
    let grad_a = when(need_a, || {
        let b2 = promote_b(saved(b)?)?;
        let a2_shape: Vec<usize> = if a_vec { vec![1, a_shape[0]] } else { a_shape.to_vec() };
        g2.matmul(&b2.t()?)?.sum_to_shape(&a2_shape)?.reshape(a_shape)
    })?;
    let grad_b = when(need_b, || {
        let a2 = promote_a(saved(a)?)?;
        let b2_shape: Vec<usize> = if b_vec { vec![b_shape[0], 1] } else { b_shape.to_vec() };
        let (k, n) = (b2_shape[b2_shape.len() - 2], b2_shape[b2_shape.len() - 1]);
        let db = if b2_shape.len() == 2 && g2.ndim() > 2 {
            // b was shared by every batch element: fold the batch into the rows and do one
            // (k × rows)·(rows × n) product instead of many products and a sum.
            let rows = g2.numel() / n;
            a2.broadcast_to(&[&g2.shape()[..g2.ndim() - 2], &[g2.shape()[g2.ndim() - 2], k]].concat())?
                .reshape(&[rows, k])?
                .t()?
                .matmul(&g2.reshape(&[rows, n])?)?
        } else {
            a2.t()?.matmul(&g2)?.sum_to_shape(&b2_shape)?
        };
        db.reshape(b_shape)
    })?;
    Ok(vec![grad_a, grad_b])
}
