//! The autograd graph behind a value, as a trace value the book draws (`src/book/chart/graph.rs`):
//! each op with its shape, bytes, FLOPs and what it saved for backward; each parameter by name.

use serde_json::{Value, json};

use std::collections::HashSet;

use crate::autograd::{SavedTally, Var};
use crate::tensor::Tensor;

/// What a tensor saved for backward is: a parameter or a data tensor (by name), or an activation.
fn saved_as(t: &Tensor, named: &[(String, Tensor)]) -> String {
    named
        .iter()
        .find(|(_, n)| Tensor::same_storage(n, t))
        .map_or_else(|| "activation".to_string(), |(name, _)| name.clone())
}

/// The graph behind `root`, producers first, as JSON nodes whose `inputs` index this list from
/// `offset` on. `params` names the parameters, `data` the tensors that are not activations; a leaf
/// that is neither (a segment's input, kept by a checkpointed forward pass) is a "kept input".
pub(crate) fn graph_nodes(root: &Var, params: &[(String, Var)], data: &[(&str, &Tensor)], offset: usize) -> Vec<Value> {
    let graph = root.graph();
    let named: Vec<(String, Tensor)> = params
        .iter()
        .map(|(n, p)| (n.clone(), p.value().clone()))
        .chain(data.iter().map(|(n, t)| (n.to_string(), (*t).clone())))
        .collect();
    graph
        .iter()
        .map(|node| {
            let param = params.iter().find(|(_, p)| p.id() == node.id).map(|(n, _)| n.clone());
            let op = match (node.op, &param) {
                (Some(op), _) => op,
                (None, Some(_)) => "parameter",
                (None, None) => "kept input",
            };
            let inputs: Vec<usize> = node
                .inputs
                .iter()
                .filter_map(|id| graph.iter().position(|n| n.id == *id))
                .map(|i| i + offset)
                .collect();
            let saved: Vec<Value> = node
                .saved
                .iter()
                .map(|t| json!({"of": saved_as(t, &named), "shape": t.shape(), "bytes": t.nbytes()}))
                .collect();
            let mut out = json!({
                "op": op,
                "shape": node.shape,
                "bytes": node.bytes,
                "flops": node.flops,
                "inputs": inputs,
                "saved": saved,
            });
            if let Some(name) = param {
                out["name"] = json!(name);
            }
            out
        })
        .collect()
}

/// Bytes of activation the graph behind `root` keeps: saved tensors that are neither parameters,
/// nor the data, nor in `held` (counted by the caller), each storage once. One count for both
/// activation sections.
pub(crate) fn graph_bytes(root: &Var, params: &[Tensor], data: &[Tensor], held: &[Tensor]) -> usize {
    Activations::new(params, data).behind(root, held)
}

/// The count [`graph_bytes`] makes, with the tensors that are not activations (the parameters
/// and the data) gathered once, for a section that counts many graphs of one model.
pub(crate) struct Activations {
    // A set, not a comparison of every saved tensor with every parameter: called after each of
    // 5,000 layers, the comparisons grew with the cube of the depth (174 s estimated).
    left_out: HashSet<usize>,
}

impl Activations {
    pub(crate) fn new(params: &[Tensor], data: &[Tensor]) -> Activations {
        Activations {
            left_out: params.iter().chain(data).map(Tensor::storage_id).collect(),
        }
    }

    /// Bytes of activation the graph behind `root` keeps, leaving out `held`.
    pub(crate) fn behind(&self, root: &Var, held: &[Tensor]) -> usize {
        self.newly_kept(root, &mut SavedTally::default(), held)
    }

    /// Bytes of activation the graph behind `root` saved that `tally` had not seen: the growth of
    /// a graph since the tally last looked, with the graph walked once over all calls.
    pub(crate) fn newly_kept(&self, root: &Var, tally: &mut SavedTally, held: &[Tensor]) -> usize {
        let held: HashSet<usize> = held.iter().map(Tensor::storage_id).collect();
        tally
            .newly_saved(root)
            .iter()
            .map(|s| &s.tensor)
            .filter(|t| !self.left_out.contains(&t.storage_id()) && !held.contains(&t.storage_id()))
            .map(Tensor::nbytes)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::{Activations, graph_bytes};
    use crate::autograd::{SavedTally, Var};
    use crate::error::Result;
    use crate::tensor::{DType, Tensor};

    /// A network read after every layer: what the tally adds each time sums, layer by layer, to
    /// what counting the whole graph behind that layer finds, and nothing is counted twice.
    #[test]
    fn counting_as_the_graph_grows_matches_counting_it_whole() -> Result<()> {
        let mut rng = crate::rng::Rng::seed(3);
        let x = Tensor::randn(&[3, 4], DType::F32, &mut rng)?;
        let weights: Vec<Var> = (0..6)
            .map(|_| Tensor::randn(&[4, 4], DType::F32, &mut rng).map(Var::parameter))
            .collect::<Result<_>>()?;
        let params: Vec<Tensor> = weights.iter().map(|w| w.value().clone()).collect();
        let activations = Activations::new(&params, std::slice::from_ref(&x));
        let mut tally = SavedTally::default();
        let mut h = Var::constant(x.clone());
        let mut so_far = 0;
        for (i, w) in weights.iter().enumerate() {
            h = h.matmul(w)?.relu()?;
            let added = activations.newly_kept(&h, &mut tally, &[]);
            so_far += added;
            let whole = graph_bytes(&h, &params, std::slice::from_ref(&x), &[]);
            assert_eq!(so_far, whole, "after layer {i}");
            // The first layer's product reads the data (not counted); each later one also keeps
            // the ReLU output before it, and every ReLU keeps its input.
            let expected = if i == 0 { 1 } else { 2 } * 3 * 4 * 4;
            assert_eq!(added, expected, "layer {i} adds its own tensors only");
        }
        assert_eq!(
            activations.newly_kept(&h, &mut tally, &[]),
            0,
            "a graph read twice adds nothing"
        );
        Ok(())
    }
}
