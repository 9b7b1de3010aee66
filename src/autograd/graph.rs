//! The graph behind a value, listed for drawing: each op that made it, the parameters it reads,
//! and what each op saved for backward. The list is what backward would walk, read before it
//! runs (backward frees what the ops saved).

use super::{Var, engine};
use crate::tensor::Tensor;

/// One node of the graph: an op's result, or a parameter.
#[derive(Debug, Clone)]
pub struct GraphNode {
    /// Unique in this process: [`Var::id`] of the value this node belongs to.
    pub id: u64,
    /// The op that made it (`matmul`, `relu`, …), or `None` for a leaf that requires a gradient.
    pub op: Option<&'static str>,
    pub shape: Vec<usize>,
    /// Bytes of its value.
    pub bytes: usize,
    /// The nodes it was made from that need a gradient, by `id` (an input that needs none, such
    /// as the data, is no node: backward never visits it).
    pub inputs: Vec<u64>,
    /// FLOPs of the forward op, as the FLOP counter counts them (`crate::flops`).
    pub flops: u64,
    /// What the op saved for backward.
    pub saved: Vec<Tensor>,
}

impl Var {
    /// This value's node in the graph: the id [`GraphNode::id`] and [`GraphNode::inputs`] use.
    pub fn id(&self) -> u64 {
        self.node.id
    }

    /// The graph behind this value, producers before consumers, as backward would walk it (in
    /// reverse). Empty once backward has run: what the ops saved is freed by then, and so is
    /// the record of it.
    pub fn graph(&self) -> Vec<GraphNode> {
        let mut order = engine::reverse_topological(&self.node);
        order.reverse();
        order
            .iter()
            .filter_map(|node| {
                let (op, inputs, flops, saved) = match &node.grad_fn {
                    None => (None, Vec::new(), 0, Vec::new()),
                    Some(f) => {
                        let guard = f.op.lock();
                        // Backward has taken the op: nothing is left to list.
                        let op = guard.as_ref()?;
                        let inputs = f.inputs.iter().flatten().map(|n| n.id).collect();
                        let outputs = node.shape.iter().product();
                        let saved = op.saved().into_iter().cloned().collect();
                        (Some(f.name), inputs, op.forward_flops(outputs), saved)
                    }
                };
                Some(GraphNode {
                    id: node.id,
                    op,
                    shape: node.shape.clone(),
                    bytes: node.bytes,
                    inputs,
                    flops,
                    saved,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::autograd::{Var, mse_loss};
    use crate::error::Result;
    use crate::flops::FlopCounter;
    use crate::tensor::{DType, Tensor};

    /// A two-layer ReLU network: every op and parameter is listed once, producers first, with
    /// its shape and bytes, and the FLOPs the nodes declare add up to what the counter counted.
    #[test]
    fn the_graph_lists_each_op_with_the_counters_flops() -> Result<()> {
        let mut rng = crate::rng::Rng::seed(1);
        let x = Var::constant(Tensor::randn(&[8, 4], DType::F32, &mut rng)?);
        let w1 = Var::parameter(Tensor::randn(&[4, 6], DType::F32, &mut rng)?);
        let w2 = Var::parameter(Tensor::randn(&[6, 3], DType::F32, &mut rng)?);
        let y = Var::constant(Tensor::randn(&[8, 3], DType::F32, &mut rng)?);
        let counter = FlopCounter::start();
        let loss = mse_loss(&x.matmul(&w1)?.relu()?.matmul(&w2)?, &y)?;
        let counted = counter.finish();
        let graph = loss.graph();
        let ops: Vec<Option<&str>> = graph.iter().map(|n| n.op).collect();
        assert_eq!(ops.len(), 6, "{ops:?}");
        assert_eq!(ops.iter().filter(|o| o.is_none()).count(), 2, "two parameters: {ops:?}");
        for op in ["matmul", "relu", "mse_loss"] {
            assert!(ops.contains(&Some(op)), "{op} in {ops:?}");
        }
        assert_eq!(graph.last().map(|n| n.id), Some(loss.id()), "the loss comes last");
        // Producers before consumers.
        for (i, n) in graph.iter().enumerate() {
            for input in &n.inputs {
                let at = graph.iter().position(|m| m.id == *input).expect("an input is listed");
                assert!(at < i, "{:?} before {:?}", graph[at].op, n.op);
            }
        }
        let first = graph.iter().find(|n| n.op == Some("matmul")).expect("a product");
        assert_eq!(
            (first.shape.clone(), first.bytes, first.flops),
            (vec![8, 6], 8 * 6 * 4, 2 * 8 * 6 * 4)
        );
        assert_eq!(first.inputs, vec![w1.id()], "the data is no node");
        assert_eq!(graph.iter().map(|n| n.flops).sum::<u64>(), counted.forward);
        // What backward needs: x (for w1's gradient), relu's output (for w2's, and relu's own
        // backward), w2 (for the gradient at relu's output), and the loss's differences.
        let saved: usize = graph.iter().map(|n| n.saved.len()).sum();
        assert!(saved >= 4, "{saved} saved tensors");
        loss.backward()?;
        assert!(loss.graph().len() <= 2, "after backward only leaves are left to list");
        Ok(())
    }
}
