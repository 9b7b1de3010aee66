//! Reverse-mode automatic differentiation over a recorded graph.
//!
//! A `Var` is a tensor value plus a handle on its node in the graph. Every operation on `Var`s
//! computes its value with ordinary tensor ops (which report their FLOPs) and, when any input
//! needs a gradient, records a node: which op, which inputs, and exactly the tensors its backward
//! rule will need (`matmul` keeps `a` only if `b` needs a gradient, and vice versa). `backward`
//! walks the graph from a scalar in reverse topological order inside
//! `flops::enter_phase(Phase::Backward)`, so the FLOP counter splits forward from backward.
//!
//! Choices that shape the numbers the lecture reports:
//! - Gradients are computed only for inputs that need them. A data tensor `x` with
//!   `requires_grad = false` gets no gradient, so the backward pass of `x @ w1` costs one matmul
//!   (for `w1`), not two: the counted backward FLOPs are below the 4·B·P formula by that term.
//! - Leaves that require grad accumulate into `grad` across backward calls (as in PyTorch) until
//!   `zero_grad`; intermediates keep theirs only after `retain_grad`.
//! - Backward releases what each node saved (PyTorch's default `retain_graph=False`); running it
//!   twice through the same graph is an error, not a silent wrong answer.
//! - The node does not hold its own value: only saved tensors stay alive, so the memory the graph
//!   holds is what backward needs (see `saved_tensors`), not every intermediate.

mod check;
mod engine;
mod graph;
mod ops;
mod rules;

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

pub use check::{GradCheck, gradcheck};
pub use engine::SavedTally;
pub use graph::GraphNode;
pub use ops::mse_loss;
use rules::Op;

use crate::error::Result;
use crate::tensor::Tensor;

/// A value in a differentiable computation.
#[derive(Clone)]
pub struct Var {
    value: Tensor,
    node: Arc<Node>,
}

pub(crate) struct Node {
    id: u64,
    /// The value's shape and bytes, for listing the graph (`graph`): the node does not keep the
    /// value itself.
    shape: Vec<usize>,
    bytes: usize,
    requires_grad: bool,
    retain_grad: AtomicBool,
    grad: Mutex<Option<Tensor>>,
    grad_fn: Option<GradFn>,
    /// Run on a leaf's gradient slot each time backward has added to it (`post_accumulate`).
    hooks: Mutex<Vec<GradHook>>,
}

/// What `Var::on_grad_accumulated` runs: it gets the leaf's gradient slot, and may take the
/// gradient out (an optimizer that has used it frees it).
pub type GradHook = Arc<dyn Fn(&mut Option<Tensor>) -> Result<()> + Send + Sync>;

/// How a non-leaf node was made.
pub(crate) struct GradFn {
    /// One per input; `None` where that input needs no gradient (backward never visits it).
    inputs: Vec<Option<Arc<Node>>>,
    /// The op and its saved tensors; taken (and so freed) by backward.
    op: Mutex<Option<Op>>,
    name: &'static str,
}

/// Dropping a graph frees its nodes one after another, not one inside another: the default drop
/// of a chain of `Arc<Node>` recurses once per op, and a deep model (a hundred thousand layers of
/// width one) overflowed the stack and aborted there. Each input this node was the last owner of
/// is unlinked into a worklist, emptied of its own inputs, and only then dropped.
impl Drop for GradFn {
    fn drop(&mut self) {
        let mut pending: Vec<Arc<Node>> = std::mem::take(&mut self.inputs).into_iter().flatten().collect();
        while let Some(node) = pending.pop() {
            // Someone else still holds it: it stays alive, and so does what it links to.
            let Some(mut node) = Arc::into_inner(node) else {
                continue;
            };
            if let Some(f) = node.grad_fn.as_mut() {
                pending.extend(std::mem::take(&mut f.inputs).into_iter().flatten());
            }
            // `node` drops here with no inputs left: its own drop does not recurse.
        }
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// While alive, operations on this thread record no graph (evaluation, finite differences).
pub struct NoGradGuard {
    previous: bool,
    _not_send: std::marker::PhantomData<*const ()>,
}

pub fn no_grad() -> NoGradGuard {
    let previous = GRAD_ENABLED.with(|g| g.replace(false));
    NoGradGuard {
        previous,
        _not_send: std::marker::PhantomData,
    }
}

impl Drop for NoGradGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.previous));
    }
}

fn grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

/// A tensor the graph saved for backward, and the op that saved it.
#[derive(Debug, Clone)]
pub struct SavedTensor {
    pub op: &'static str,
    pub tensor: Tensor,
}

impl Node {
    fn new(value: &Tensor, requires_grad: bool, grad_fn: Option<GradFn>) -> Arc<Node> {
        Arc::new(Node {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            shape: value.shape().to_vec(),
            bytes: value.nbytes(),
            requires_grad,
            retain_grad: AtomicBool::new(false),
            grad: Mutex::new(None),
            grad_fn,
            hooks: Mutex::new(Vec::new()),
        })
    }

    /// Adds `g` to the stored gradient (stored contiguous, so optimizers can read it directly).
    fn accumulate(&self, g: Tensor) -> Result<()> {
        let mut slot = self.grad.lock();
        let new = match slot.take() {
            None => g.contiguous()?,
            Some(old) => old.add(&g)?,
        };
        *slot = Some(new);
        // Cloned out, so a hook may register or remove hooks without deadlocking.
        let hooks = self.hooks.lock().clone();
        for hook in hooks {
            hook(&mut slot)?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for Var {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = self.node.grad_fn.as_ref().map(|g| g.name);
        f.debug_struct("Var")
            .field("value", &self.value)
            .field("requires_grad", &self.node.requires_grad)
            .field("op", &op)
            .finish()
    }
}

impl Var {
    /// A leaf: data (`requires_grad = false`) or a parameter (`true`).
    pub fn leaf(value: Tensor, requires_grad: bool) -> Var {
        let node = Node::new(&value, requires_grad, None);
        Var { value, node }
    }

    /// A leaf that needs no gradient.
    pub fn constant(value: Tensor) -> Var {
        Var::leaf(value, false)
    }

    /// A leaf whose gradient backward computes.
    pub fn parameter(value: Tensor) -> Var {
        Var::leaf(value, true)
    }

    /// The result of `op` on `inputs`. Records a node only if some input needs a gradient and
    /// grad mode is on; otherwise the op (and what it saved) is dropped at once.
    pub(crate) fn from_op(value: Tensor, name: &'static str, inputs: &[&Var], op: impl FnOnce(&[bool]) -> Op) -> Var {
        let needs: Vec<bool> = inputs.iter().map(|v| v.requires_grad()).collect();
        if !grad_enabled() || !needs.iter().any(|&n| n) {
            return Var::constant(value);
        }
        let op = op(&needs);
        let inputs = inputs
            .iter()
            .map(|v| v.requires_grad().then(|| Arc::clone(&v.node)))
            .collect();
        let node = Node::new(
            &value,
            true,
            Some(GradFn {
                inputs,
                op: Mutex::new(Some(op)),
                name,
            }),
        );
        Var { value, node }
    }

    pub fn value(&self) -> &Tensor {
        &self.value
    }

    pub fn shape(&self) -> &[usize] {
        self.value.shape()
    }

    pub fn requires_grad(&self) -> bool {
        self.node.requires_grad
    }

    /// A leaf: made directly, not by an op.
    pub fn is_leaf(&self) -> bool {
        self.node.grad_fn.is_none()
    }

    /// The accumulated gradient, if backward has produced one for this value.
    pub fn grad(&self) -> Option<Tensor> {
        self.node.grad.lock().clone()
    }

    /// Keep this intermediate's gradient when backward passes through it.
    /// Runs `hook` on this leaf's gradient slot each time a backward pass has added to it: the
    /// gradient is complete there (every use of the leaf has contributed), so an optimizer can
    /// update the parameter at once, while the gradient is still in cache, and free it (PyTorch's
    /// `register_post_accumulate_grad_hook`). Only leaves that require a gradient have one. The
    /// hook runs with the slot locked: it reads the gradient from its argument, never through
    /// this `Var` (`grad()` would wait for the lock it holds).
    pub fn on_grad_accumulated(&self, hook: GradHook) -> Result<()> {
        if !self.is_leaf() || !self.requires_grad() {
            return Err(crate::error::Error::invalid(
                "on_grad_accumulated",
                "only a leaf that requires a gradient (a parameter) accumulates one",
            ));
        }
        self.node.hooks.lock().push(hook);
        Ok(())
    }

    /// Removes every hook `on_grad_accumulated` added to this value.
    pub fn clear_grad_hooks(&self) {
        self.node.hooks.lock().clear();
    }

    pub fn retain_grad(&self) {
        self.node.retain_grad.store(true, Ordering::Relaxed);
    }

    /// Forgets the gradient (PyTorch's `zero_grad(set_to_none=True)`): its memory is freed.
    pub fn zero_grad(&self) {
        *self.node.grad.lock() = None;
    }

    /// Reverse-mode differentiation from this scalar: every leaf that requires grad (and every
    /// intermediate with `retain_grad`) on the way gets `∂self/∂leaf` added to its gradient.
    pub fn backward(&self) -> Result<()> {
        engine::backward(self)
    }

    /// The tensors the graph behind this value holds for backward (before backward frees them),
    /// each storage listed once.
    pub fn saved_tensors(&self) -> Vec<SavedTensor> {
        engine::saved_tensors(self)
    }
}

#[cfg(test)]
mod deep_graph_tests {
    use super::Var;
    use crate::tensor::{DType, Tensor};

    /// A chain far deeper than a test thread's 2 MiB stack allows one frame per op: backward walks
    /// it, and both a used and an unused graph drop, without recursing per op.
    #[test]
    fn a_chain_of_two_hundred_thousand_ops_backpropagates_and_drops() -> crate::error::Result<()> {
        const DEPTH: usize = 200_000;
        let w = Var::parameter(Tensor::ones(&[1], DType::F32)?);
        let mut x = w.clone();
        for _ in 0..DEPTH {
            x = x.mul(&w)?;
        }
        let unused = x.sum_all()?;
        x.sum_all()?.backward()?;
        // d(w^(DEPTH+1))/dw at w = 1 is DEPTH + 1.
        let g = w.grad().map(|g| g.to_vec_f64()).transpose()?;
        assert_eq!(g, Some(vec![(DEPTH + 1) as f64]));
        drop(x);
        drop(unused);
        Ok(())
    }
}
