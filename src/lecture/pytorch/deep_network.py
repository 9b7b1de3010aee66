# The 2026 lecture's deep network: num_layers blocks, each x @ W (D x D) followed by a ReLU.
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

device = "cuda" if torch.cuda.is_available() else "cpu"


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim, dim) / math.sqrt(dim))

    def forward(self, x):
        return F.relu(x @ self.weight)


class DeepNetwork(nn.Module):
    def __init__(self, dim, num_layers):
        super().__init__()
        self.layers = nn.ModuleList([Block(dim) for _ in range(num_layers)])

    def forward(self, x):  # [B, D] -> [B, D]
        for layer in self.layers:
            x = layer(x)
        return x


d = record("d", 8)
num_layers = record("num_layers", 3)
model = DeepNetwork(d, num_layers).to(device)
num_parameters = record("num_parameters", sum(p.numel() for p in model.parameters()))
assert num_parameters == record("expected_num_parameters", d * d * num_layers)  # -> parameters_as_formula

b = record("batch_size", 4)
x = torch.randn(b, d, device=device)  # -> x (random: our RNG is not torch's)
# PyTorch's FLOP counter counts the products only; a ReLU is one FLOP per element here.
with FlopCounterMode(display=False) as counter:
    y = model(x)  # -> y (random weights and inputs)
record("y_shape", y.shape)
zero_fraction = (y == 0).float().mean().item()  # -> zero_fraction (ReLU's zeros; random)
forward_matmul_flops = record("forward_matmul_flops", counter.get_total_flops())
forward_flops = record("forward_flops", forward_matmul_flops + num_layers * b * d)
assert forward_flops == record("formula_forward_flops", num_layers * (2 * b * d * d + b * d))  # -> forward_flops_as_formula

# What autograd keeps for backward: every tensor an op saves, each storage once, less the
# parameters and the data. PyTorch's ReLU keeps its output, which the next product keeps
# anyway, where the Rust's keeps its input (the product): PyTorch keeps num_layers B x D tensors
# where the Rust keeps 2 * num_layers (torch 2.15 on a CPU: 384 bytes against 768 here).
target = torch.randn(b, d, device=device)
saved = {}


def keep(t):
    saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    return t


with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
    loss = F.mse_loss(model(x), target)
held = {t.untyped_storage().data_ptr() for t in [*model.parameters(), x, target]}
activation_bytes = sum(n for ptr, n in saved.items() if ptr not in held)  # -> activation_bytes (PyTorch keeps half the Rust's: see above)
formula_activation_bytes = record("formula_activation_bytes", (num_layers + (num_layers - 1) + 1) * b * d * 4)  # -> activations_as_formula
lecture_activation_bytes = record("lecture_activation_bytes", 2 * num_layers * b * d * 4)

with FlopCounterMode(display=False) as counter:
    loss.backward()
backward_matmul_flops = record("backward_matmul_flops", counter.get_total_flops())
# The first block's input is the data: no gradient, so backward skips that product.
assert backward_matmul_flops == record("formula_backward_matmul_flops", (2 * num_layers - 1) * 2 * b * d * d)  # -> backward_flops_as_formula
record("backward_over_forward", backward_matmul_flops / forward_matmul_flops)
parameter_bytes = record("parameter_bytes", sum(p.numel() * p.element_size() for p in model.parameters()))
gradient_bytes = record("gradient_bytes", sum(p.grad.numel() * p.grad.element_size() for p in model.parameters()))
assert gradient_bytes == parameter_bytes  # -> gradients_as_parameters
