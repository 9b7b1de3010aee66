# The 2026 lecture's deep network: num_layers blocks, each x @ W (D x D) followed by a ReLU.
import math

import torch
import torch.nn.functional as F
from torch import nn

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
y = model(x)  # -> y (random weights and inputs)
record("y_shape", y.shape)
zero_fraction = (y == 0).float().mean().item()  # -> zero_fraction (ReLU's zeros; random)
