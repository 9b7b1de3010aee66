//! Section `gradients_basics`: Gradients: the basics.

use crate::autograd::Var;
use crate::error::Result;
use crate::lecture::graph::graph_nodes;
use crate::lecture::{SectionCtx, check, record};
use crate::tensor::{DType, Tensor};

/// Forward: compute a loss. Backward: compute the gradient of the loss with respect to each
/// parameter, by the chain rule, from the loss back to the leaves.
pub fn gradients_basics(cx: &mut SectionCtx) -> Result<()> {
    let (x_data, w_data, target) = ([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], 5.0);
    record!(cx, given x = x_data.to_vec())?;
    record!(cx, given w = w_data.to_vec())?;
    record!(cx, given target)?;
    let x = Var::constant(Tensor::from_data(&x_data, DType::F32)?.to_device(&cx.device)?);
    let w = Var::parameter(Tensor::from_data(&w_data, DType::F32)?.to_device(&cx.device)?); // want a gradient
    let pred_y = x.matmul(&w)?;
    let residual = pred_y.value().item()? - target;
    record!(cx, computed residual)?;
    check!(cx, residual_is_one: residual == 1.0)?;
    let loss = pred_y.sub_scalar(target)?.pow_scalar(2.0)?.mul_scalar(0.5)?;
    record!(cx, computed loss = loss.value().item()?)?;
    // The graph backward is about to walk (backward frees what its ops saved).
    let graph = graph_nodes(&loss, &[("w".into(), w.clone())], &[("x", x.value())], 0);
    record!(cx, computed graph = serde_json::Value::Array(graph))?;

    loss.backward()?;
    // ∂loss/∂w = (x·w − 5)·x = 1·x.
    let w_grad = w.grad();
    match &w_grad {
        Some(g) => record!(cx, computed w_grad = g)?,
        None => record!(cx, computed w_grad = "none")?,
    }
    check!(cx, gradient_is_x: w_grad.map(|g| g.to_vec_f64()).transpose()? == Some(x_data.to_vec()))?;
    // Only leaves that asked for one get a gradient: not the data, not the intermediate.
    let x_grad_is_none = x.grad().is_none();
    record!(cx, computed x_grad_is_none)?;
    let pred_y_grad_is_none = pred_y.grad().is_none();
    record!(cx, computed pred_y_grad_is_none)?;
    check!(cx, only_asked_leaves_get_gradients: x_grad_is_none && pred_y_grad_is_none)?;
    Ok(())
}
