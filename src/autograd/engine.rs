//! The backward pass: order the graph so every node comes after all the nodes that use it, then
//! hand each node's gradient to its rule and pass the results on to its inputs.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Node, SavedTensor, Var};
use crate::error::{Error, Result};
use crate::flops::{self, Phase};
use crate::tensor::Tensor;

/// Nodes reachable from `root` through inputs that need gradients, consumers before producers.
/// Iterative depth-first search: deep graphs (many layers, long loops) must not overflow the stack.
pub(super) fn reverse_topological(root: &Arc<Node>) -> Vec<Arc<Node>> {
    reverse_topological_beyond(root, &mut HashSet::new())
}

/// Like [`reverse_topological`], leaving out the nodes in `visited` and everything only they
/// reach, and adding what it walks to `visited`: a graph grown one layer at a time is walked
/// once in all, not once per layer.
fn reverse_topological_beyond(root: &Arc<Node>, visited: &mut HashSet<u64>) -> Vec<Arc<Node>> {
    let mut post_order = Vec::new();
    let mut stack: Vec<(Arc<Node>, bool)> = vec![(Arc::clone(root), false)];
    while let Some((node, children_done)) = stack.pop() {
        if children_done {
            post_order.push(node);
            continue;
        }
        if !visited.insert(node.id) {
            continue;
        }
        stack.push((Arc::clone(&node), true));
        if let Some(f) = &node.grad_fn {
            // Inputs pushed last are walked first and so come last in the order: pushing them in
            // reverse puts a product's weight (its last input) right after the product, so its
            // gradient reaches the leaf at once instead of waiting, with every other layer's, for
            // the walk to end. Waiting held all new gradients beside the accumulated ones, which
            // doubled a gradient-accumulation step's peak (`gradient_accumulation` measured it).
            for input in f.inputs.iter().rev().flatten() {
                if !visited.contains(&input.id) {
                    stack.push((Arc::clone(input), false));
                }
            }
        }
    }
    post_order.reverse();
    post_order
}

pub(super) fn backward(root: &Var) -> Result<()> {
    if !root.requires_grad() {
        return Err(Error::invalid(
            "backward",
            "this value does not depend on anything that requires a gradient",
        ));
    }
    if root.value.numel() != 1 {
        return Err(Error::invalid(
            "backward",
            format!(
                "backward starts from a scalar (a loss); this value has shape {:?}",
                root.shape()
            ),
        ));
    }
    let _phase = flops::enter_phase(Phase::Backward);
    let mut grads: HashMap<u64, Tensor> = HashMap::new();
    grads.insert(root.node.id, root.value.ones_like()?);
    for node in reverse_topological(&root.node) {
        // Every node in the order was reached from the root, so a gradient has arrived.
        let Some(g) = grads.remove(&node.id) else { continue };
        let Some(f) = &node.grad_fn else {
            node.accumulate(g)?;
            continue;
        };
        if node.retain_grad.load(Ordering::Relaxed) {
            node.accumulate(g.clone())?;
        }
        let op = f.op.lock().take().ok_or_else(|| {
            Error::invalid("backward", format!("the graph through `{}` was already used by a backward pass and freed; build it again (run the forward pass) first", f.name))
        })?;
        let needs: Vec<bool> = f.inputs.iter().map(Option::is_some).collect();
        let input_grads = op.backward(&g, &needs)?;
        drop(op); // frees what the op saved, as soon as it is no longer needed
        for (input, grad) in f.inputs.iter().zip(input_grads) {
            let (Some(input), Some(grad)) = (input, grad) else {
                continue;
            };
            let merged = match grads.remove(&input.id) {
                // A value used twice receives the sum of both gradients.
                Some(earlier) => earlier.add(&grad)?,
                None => grad,
            };
            grads.insert(input.id, merged);
        }
    }
    Ok(())
}

pub(super) fn saved_tensors(root: &Var) -> Vec<SavedTensor> {
    SavedTally::default().newly_saved(root)
}

/// What a graph saved for backward, counted as it grows: each call lists only what the nodes
/// not walked before saved, each storage once over all calls. Reading after every layer of a
/// deep network what the graph keeps then costs one walk of the whole graph, where listing the
/// graph behind each layer again cost a walk per layer (5,000 layers of width one: 21 s).
#[derive(Default)]
pub struct SavedTally {
    walked: HashSet<u64>,
    // Storages already listed: a set, not a scan of the output, which made a deep graph's
    // listing quadratic in its depth.
    listed: HashSet<usize>,
}

impl SavedTally {
    /// The tensors the graph behind `root` saved that no earlier call listed.
    pub fn newly_saved(&mut self, root: &Var) -> Vec<SavedTensor> {
        let mut out: Vec<SavedTensor> = Vec::new();
        for node in reverse_topological_beyond(&root.node, &mut self.walked) {
            let Some(f) = &node.grad_fn else { continue };
            if let Some(op) = f.op.lock().as_ref() {
                for t in op.saved() {
                    if self.listed.insert(t.storage_id()) {
                        out.push(SavedTensor {
                            op: f.name,
                            tensor: t.clone(),
                        });
                    }
                }
            }
        }
        out
    }
}
