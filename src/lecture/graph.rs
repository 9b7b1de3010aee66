//! The autograd graph behind a value, as a trace value the book draws (`src/book/chart/graph.rs`):
//! each op with its shape, bytes, FLOPs and what it saved for backward; each parameter by name.

use serde_json::{Value, json};

use crate::autograd::Var;
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
    // A set, not a comparison of every saved tensor with every parameter: called after each of
    // 5,000 layers, the comparisons grew with the cube of the depth (174 s estimated).
    let left_out: std::collections::HashSet<usize> =
        params.iter().chain(data).chain(held).map(Tensor::storage_id).collect();
    root.saved_tensors()
        .iter()
        .map(|s| &s.tensor)
        .filter(|t| !left_out.contains(&t.storage_id()))
        .map(Tensor::nbytes)
        .sum()
}
