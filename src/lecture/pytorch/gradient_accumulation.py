# Gradient accumulation: the full batch's gradient from k micro-batches, one update.
import math
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

device = "cuda" if torch.cuda.is_available() else "cpu"
on_gpu = device == "cuda"


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim, dim) / math.sqrt(dim))

    def forward(self, x):
        return F.relu(x @ self.weight)


B = record("batch_size", 64 if on_gpu else 512)
D = record("d", 1024 if on_gpu else 128)
L = record("num_layers", 16 if on_gpu else 8)
max_micro_batches = record("max_micro_batches", 8)
lr = record("lr", 0.01)
model = nn.Sequential(*[Block(D) for _ in range(L)]).to(device)
x, y = torch.randn(B, D, device=device), torch.randn(B, D, device=device)
record("parameter_bytes", sum(p.numel() * p.element_size() for p in model.parameters()))
record("formula_activation_bytes", 2 * B * D * L * 4)


def accumulated_step(m, opt, k):
    micro = B // k
    for i in range(k):
        xs, ys = x[i * micro:(i + 1) * micro], y[i * micro:(i + 1) * micro]
        (F.mse_loss(m(xs), ys) / k).backward()  # adds to .grad: no zero_grad in between
    opt.step()


rows, grads = [], {}
k = 1
while k <= max_micro_batches:
    m = nn.Sequential(*[Block(D) for _ in range(L)]).to(device)
    m.load_state_dict(model.state_dict())
    opt = torch.optim.SGD(m.parameters(), lr=lr)
    if on_gpu:
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    with FlopCounterMode(display=False) as counted:
        start = time.perf_counter()
        accumulated_step(m, opt, k)
        seconds = time.perf_counter() - start
    if on_gpu:
        peak_bytes = torch.cuda.max_memory_allocated() - before  # the caching allocator rounds up
    grads[k] = [p.grad.clone() for p in m.parameters()]
    largest = max((a - b).abs().max().item() for a, b in zip(grads[k], grads[1]))
    rows.append({"micro_batches": k, "matmul_flops": counted.get_total_flops(), "seconds_per_sample": seconds / B,
                 "largest_gradient_difference": largest})
    k *= 2
# -> accumulation (times and rounding: not compared), full_batch_peak, accumulated_peak
# The Rust also reads the high-water mark of one micro-batch's forward pass with its graph kept:
# -> full_batch_activation, accumulated_activation, peak_ratio, activation_ratio
time_ratio = rows[-1]["seconds_per_sample"] / rows[0]["seconds_per_sample"]  # -> time_ratio
step_matmul_flops = record("step_matmul_flops", rows[0]["matmul_flops"])
assert all(r["matmul_flops"] == step_matmul_flops for r in rows)  # -> same_flops_for_every_k
largest_gradient_difference = rows[-1]["largest_gradient_difference"]  # -> largest_gradient_difference
record("gradient_bytes", sum(g.numel() * g.element_size() for g in grads[1]))
