# Forward: compute a loss. Backward: the gradient of the loss for each leaf that asked for one.
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.tensor(record("x", [1.0, 2.0, 3.0]), device=device)
w = torch.tensor(record("w", [1.0, 1.0, 1.0]), device=device, requires_grad=True)  # want a gradient
target = record("target", 5.0)
pred_y = x @ w
residual = record("residual", pred_y.item() - target)
assert residual == 1  # -> residual_is_one
loss = 0.5 * (pred_y - target) ** 2
record("loss", loss.item())

# The graph backward will walk starts at loss.grad_fn; each node's next_functions are its inputs'
# (AccumulateGrad for a leaf that wants a gradient, None for the data). PyTorch names the nodes by
# their backward (MulBackward0, PowBackward0, …) where the Rust names the forward op.
ops, todo = [], [loss.grad_fn]
while todo:
    node = todo.pop()
    ops.append(type(node).__name__)
    todo.extend(f for f, _ in node.next_functions if f is not None)
graph = ops  # -> graph (named differently, so not compared)

loss.backward()
record("w_grad", w.grad)  # ∂loss/∂w = (x·w − 5)·x = 1·x
assert torch.equal(w.grad, x)  # -> gradient_is_x
# Only leaves that asked for one get a gradient: not the data, not the intermediate (PyTorch
# warns when you read .grad of a non-leaf; pred_y.retain_grad() before backward would keep it).
x_grad_is_none = record("x_grad_is_none", x.grad is None)
pred_y_grad_is_none = record("pred_y_grad_is_none", pred_y.grad is None)
assert x_grad_is_none and pred_y_grad_is_none  # -> only_asked_leaves_get_gradients
