# The lecture's Cruncher, as the custom_model panel builds it, shared by the panels that train it.
import math

import torch
from torch import nn


class Linear(nn.Module):  # x @ W, W of shape in_dim × out_dim (nn.Linear keeps out × in), no bias
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_dim, out_dim) / math.sqrt(in_dim))

    def forward(self, x):
        return x @ self.weight


class Cruncher(nn.Module):  # num_layers D×D layers, then a D×1 head; [B, D] -> [B]
    def __init__(self, dim, num_layers):
        super().__init__()
        self.layers = nn.ModuleList([Linear(dim, dim) for _ in range(num_layers)])
        self.final = Linear(dim, 1)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.final(x).squeeze(-1)
