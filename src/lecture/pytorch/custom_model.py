# A custom model, the lecture's Cruncher: num_layers D×D linear layers, then a D×1 head.
import math

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"


class Linear(nn.Module):
    """y = x @ W with W of shape in_dim × out_dim and no bias. (nn.Linear(in_dim, out_dim,
    bias=False) stores W as out_dim × in_dim and computes x @ W.T: same maths, other shapes.)"""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_dim, out_dim) / math.sqrt(in_dim))

    def forward(self, x):
        return x @ self.weight


class Cruncher(nn.Module):
    def __init__(self, dim, num_layers):
        super().__init__()
        self.layers = nn.ModuleList([Linear(dim, dim) for _ in range(num_layers)])
        self.final = Linear(dim, 1)

    def forward(self, x):  # [B, D] -> [B]
        for layer in self.layers:
            x = layer(x)
        return self.final(x).squeeze(-1)


d = record("d", 64)
num_layers = record("num_layers", 2)
model = Cruncher(d, num_layers)
record("param_sizes", [{"name": name, "shape": p.shape, "numel": p.numel()} for name, p in model.named_parameters()])
record("num_parameters", sum(p.numel() for p in model.parameters()))
record("expected_num_parameters", d * d * num_layers + d)

# Move it to the run's device and run a batch through it.
model = model.to(device)
weights_device = model.final.weight.device  # -> device ("cpu" or "cuda:0")
b = record("batch_size", 8)
x = torch.randn(b, d, device=device)
y = model(x)  # -> y (random weights and inputs: our RNG is not torch's)
record("y_shape", y.shape)
