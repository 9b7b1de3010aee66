# Parameters and their initialisation: unit-variance weights blow outputs up by √input_dim.
import math

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "cpu"
input_dim = record("input_dim", 16384)
output_dim = record("output_dim", 32)
x = torch.randn(input_dim, device=device)  # our RNG is not torch's: random values differ

# w ~ N(0, 1): outputs of size about √input_dim = 128.
w = nn.Parameter(torch.randn(input_dim, output_dim, device=device))
output = x @ w  # -> output
output_std = output.std(correction=0).item()  # -> output_std (population std as in the Rust)
expected_output_std = record("expected_output_std", math.sqrt(input_dim))

# w ~ N(0, 1/input_dim) (Xavier, up to a constant): outputs O(1).
w = nn.Parameter(torch.randn(input_dim, output_dim, device=device) / math.sqrt(input_dim))
output = x @ w  # -> xavier_output
xavier_output_std = output.std(correction=0).item()  # -> xavier_output_std

# Truncated at ±3σ. trunc_normal_'s a and b are absolute bounds: pass ±3σ, not ±3.
sigma = record("sigma", 1 / math.sqrt(input_dim))
truncation_sigmas = record("truncation_sigmas", 3.0)
truncation_bound = record("truncation_bound", truncation_sigmas * sigma)
w = nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=sigma, a=-truncation_bound, b=truncation_bound)
truncated_min = w.min().item()  # -> truncated_min
truncated_max = w.max().item()  # -> truncated_max
assert max(abs(truncated_min), abs(truncated_max)) <= truncation_bound  # -> within_the_bound
output = x @ nn.Parameter(w.to(device))
truncated_output_std = output.std(correction=0).item()  # -> truncated_output_std
# The original's trunc_normal_(std=1/√input_dim, a=-3, b=3): 3 is 384σ, so nothing is cut.
absolute_bound = record("absolute_bound", 3.0)
absolute_bound_in_sigmas = record("absolute_bound_in_sigmas", absolute_bound / sigma)
untruncated = torch.randn(input_dim, output_dim) / math.sqrt(input_dim)
# A weight beyond 384σ never happens in practice, so this count is 0 for any draw.
record("weights_beyond_absolute_3", (untruncated.abs() > absolute_bound).sum().item())
weights_beyond_3_sigma = (untruncated.abs() > truncation_sigmas * sigma).sum().item()  # -> weights_beyond_3_sigma
record("num_weights", untruncated.numel())

# For the chart: output std against input_dim, 64 inputs × 32 outputs per point.
output_std_vs_input_dim = []  # -> output_std_vs_input_dim
for dim in [16, 64, 256, 1024, 4096, 16384]:
    x = torch.randn(64, dim)
    normal = x @ torch.randn(dim, 32)
    xavier = x @ (torch.randn(dim, 32) / math.sqrt(dim))
    output_std_vs_input_dim.append({"input_dim": dim, "normal_std": normal.std(correction=0).item(),
                                    "xavier_std": xavier.std(correction=0).item(), "sqrt_input_dim": math.sqrt(dim)})
