# A two-layer linear model x →w1→ h1 →w2→ h2, loss = mean(h2²): forward 2 FLOPs per
# (data point, parameter), backward 4.
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

device = "cuda" if torch.cuda.is_available() else "cpu"
# The lecture's sizes on a GPU; on a CPU, sizes that keep the run short.
B, D, K = (16384, 32768, 8192) if device == "cuda" else (1024, 256, 64)
record("B", B)
record("D", D)
record("K", K)
# Random data (torch's draws, not the Rust RNG's), made on the device.
x = torch.randn(B, D, device=device)
w1 = torch.randn(D, D, device=device, requires_grad=True)
w2 = torch.randn(D, K, device=device, requires_grad=True)


def forward(x):
    h1 = x @ w1
    h2 = h1 @ w2
    return (h2**2).mean()


# Forward: two matmuls, each 2 FLOPs (a multiply and an add) per multiply-add.
flop_per_multiply_add = record("flop_per_multiply_add", 2)
num_forward_flops = record("num_forward_flops", flop_per_multiply_add * B * D * D + flop_per_multiply_add * B * D * K)
num_parameters = D * D + D * K
record("forward_flop_per_parameter_datum", num_forward_flops // (B * num_parameters))
# FlopCounterMode counts matmuls (and convolutions, attention) only. The Rust counter also counts
# the square and the mean, one FLOP per element of h2 each; PyTorch has no formula for them.
with FlopCounterMode(display=False) as counter:
    loss = forward(x)  # -> counted_forward_flops_all_ops
counted_forward_flops = record("counted_forward_flops", counter.get_total_flops())
assert counted_forward_flops == num_forward_flops  # -> forward_counter_agrees

# Backward, by the chain rule, one matmul per gradient, added up term by term.
num_backward_flops = record("num_backward_flops", 0)
num_backward_flops = record("num_backward_flops", num_backward_flops + flop_per_multiply_add * B * D * K)  # w2.grad = h1ᵀ @ h2.grad
num_backward_flops = record("num_backward_flops", num_backward_flops + flop_per_multiply_add * B * D * K)  # h1.grad = h2.grad @ w2ᵀ
num_backward_flops = record("num_backward_flops", num_backward_flops + flop_per_multiply_add * B * D * D)  # w1.grad = xᵀ @ h1.grad
num_backward_flops = record("num_backward_flops", num_backward_flops + flop_per_multiply_add * B * D * D)  # x.grad = h1.grad @ w1ᵀ
record("backward_flop_per_parameter_datum", num_backward_flops // (B * num_parameters))
record("step_flop_per_parameter_datum", (num_forward_flops + num_backward_flops) // (B * num_parameters))
record("backward_to_forward_ratio", num_backward_flops / num_forward_flops)
assert num_backward_flops == 2 * num_forward_flops  # -> backward_twice_forward

# (The Rust's count of all ops adds the backward of the square and the mean, as above.)
with FlopCounterMode(display=False) as counter:
    loss.backward()  # -> counted_backward_flops_all_ops
# x is data: nothing asked for its gradient, so autograd never runs the last matmul.
counted_backward_flops = record("counted_backward_flops", counter.get_total_flops())
backward_flops_skipped = record("backward_flops_skipped", num_backward_flops - counted_backward_flops)
assert backward_flops_skipped == flop_per_multiply_add * B * D * D  # -> skipped_is_x_grad
record("skipped_explanation", "x needs no gradient, so backward skips x.grad = h1.grad @ w1ᵀ (2·B·D·D FLOPs)")

# With x requiring a gradient the count meets the formula.
w1.grad = w2.grad = None
loss = forward(x.detach().requires_grad_())
with FlopCounterMode(display=False) as counter:
    loss.backward()
counted_backward_flops_x_requires_grad = record("counted_backward_flops_x_requires_grad", counter.get_total_flops())
assert counted_backward_flops_x_requires_grad == num_backward_flops  # -> backward_counter_agrees

# The chain rule by hand against autograd, on the second layer h2 = h1 @ w2.
w2.grad = None
h1 = x @ w1
h1.retain_grad()
h2 = h1 @ w2
h2.retain_grad()
(h2**2).mean().backward()
h1_grad_by_hand = h2.grad @ w2.detach().T
w2_grad_by_hand = h1.detach().T @ h2.grad
assert torch.allclose(h1.grad, h1_grad_by_hand) and torch.allclose(w2.grad, w2_grad_by_hand)
# Random data (torch's draws): named, not compared.
h1_grad_autograd = h1.grad[:2, :4]  # -> h1_grad_autograd  (a corner of each)
h1_grad_by_hand = h1_grad_by_hand[:2, :4]  # -> h1_grad_by_hand
w2_grad_autograd = w2.grad[:2, :4]  # -> w2_grad_autograd
w2_grad_by_hand = w2_grad_by_hand[:2, :4]  # -> w2_grad_by_hand
h1_grad_max_difference = (h1.grad - (h2.grad @ w2.detach().T)).abs().max().item()  # -> h1_grad_max_difference
w2_grad_max_difference = (w2.grad - (h1.detach().T @ h2.grad)).abs().max().item()  # -> w2_grad_max_difference
h1_grad_max_abs = h1.grad.abs().max().item()  # -> h1_grad_max_abs
w2_grad_max_abs = w2.grad.abs().max().item()  # -> w2_grad_max_abs
assert 1e6 * h1_grad_max_difference <= h1_grad_max_abs  # -> h1_by_hand_agrees
assert 1e6 * w2_grad_max_difference <= w2_grad_max_abs  # -> w2_by_hand_agrees

# Time both passes in turns, so a busy moment slows both; the backward needs a fresh graph each
# time, built untimed, and fresh gradients (no accumulation timed). The Rust times for a fixed
# budget with warm-up; here a few untimed rounds, then a fixed number.
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
# Beside them, the products backward runs, on plain tensors outside any graph (the same
# transposed views; h1 and h1 @ w2 stand for the gradients, which have their shapes).
h1 = (x @ w1).detach()
h2 = h1 @ w2.detach()
forward_times, backward_times, products_times = [], [], []
for i in range(13):
    sync()
    start = time.perf_counter()
    forward(x)
    sync()
    forward_times.append(time.perf_counter() - start)
    w1.grad = w2.grad = None
    loss = forward(x)
    sync()
    start = time.perf_counter()
    loss.backward()
    sync()
    backward_times.append(time.perf_counter() - start)
    sync()
    start = time.perf_counter()
    h1.T @ h2, h2 @ w2.detach().T, x.T @ h1  # w2.grad, h1.grad, w1.grad
    sync()
    products_times.append(time.perf_counter() - start)
quartiles = torch.tensor([0.0, 0.25, 0.5, 0.75, 1.0], dtype=torch.float64)
forward_time_spread = torch.tensor(forward_times[3:], dtype=torch.float64).quantile(quartiles)  # -> forward_time_spread
forward_time = forward_time_spread[2].item()  # -> forward_time
backward_time_spread = torch.tensor(backward_times[3:], dtype=torch.float64).quantile(quartiles)  # -> backward_time_spread
backward_time = backward_time_spread[2].item()  # -> backward_time
measured_backward_to_forward_ratio = backward_time / forward_time  # -> measured_backward_to_forward_ratio
backward_products_time_spread = torch.tensor(products_times[3:], dtype=torch.float64).quantile(quartiles)  # -> backward_products_time_spread
backward_products_time = backward_products_time_spread[2].item()  # -> backward_products_time
backward_products_share = backward_products_time / backward_time  # -> backward_products_share
# Matrix products' FLOPs (the counters' above) over each time.
forward_flop_per_sec = (2 * B * D * D + 2 * B * D * K) / forward_time  # -> forward_flop_per_sec
backward_products_flop_per_sec = (2 * B * D * K * 2 + 2 * B * D * D) / backward_products_time  # -> backward_products_flop_per_sec
