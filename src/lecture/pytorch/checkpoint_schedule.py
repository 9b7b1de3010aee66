# The checkpointing schedule: keep every layer's input, every few, every sqrt(L), or none, for
# networks of growing depth; what each keeps and what it computes again.
import math

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

device = "cuda" if torch.cuda.is_available() else "cpu"
on_gpu = device == "cuda"
B = record("batch_size", 1024 if on_gpu else 256)
D = record("d", 1024 if on_gpu else 128)
max_num_layers = record("max_num_layers", 256)
segment_layers = record("segment_layers", 4)
depths = record("depths", [4**p for p in range(1, 10) if 4**p <= max_num_layers])
layer_flops = record("layer_flops", 2 * B * D * D)
# Scaled so that no activation or gradient of the deepest network falls below float32's smallest
# normal number (each ReLU block halves the variance), as the Rust does: the same bytes and FLOPs.
x, y = torch.randn(B, D, device=device) * 2.0**60, torch.randn(B, D, device=device) * 2.0**30


def forward(weights, h):
    for w in weights:
        h = F.relu(h @ w)
    return h


def step(weights, segment, keep):
    """One forward and backward, one segment of layers at a time, last first, as the Rust does:
    each segment's input is kept by a forward pass without a graph, or (keep=False) computed
    again from the data."""
    segments = [weights[i:i + segment] for i in range(0, len(weights), segment)]
    kept = [x]
    if keep:
        with torch.no_grad():
            for s in segments[:-1]:
                kept.append(forward(s, kept[-1]))
    upstream = None
    for s in reversed(range(len(segments))):
        if s < len(kept):
            start = kept[s]
        else:
            with torch.no_grad():
                start = forward(weights[:s * segment], x)
        start = start.detach().requires_grad_(s > 0)  # the data needs no gradient
        h = forward(segments[s], start)
        if upstream is None:
            F.mse_loss(h, y).backward()
        else:
            h.backward(upstream)  # the gradient that arrived at this segment's output
        del kept[max(s, 1):]
        upstream = start.grad


recomputed = {}
same_gradients = True
for L in depths:
    weights = [torch.randn(D, D, device=device) / math.sqrt(D) for _ in range(L)]
    schedules = {"all": (L, True), "every": (segment_layers, True), "sqrt": (math.isqrt(L), True), "none": (1, False)}
    plain_grads = None
    for name, (segment, keep) in schedules.items():
        ws = [w.clone().requires_grad_() for w in weights]
        with FlopCounterMode(display=False) as counted:
            step(ws, segment, keep)
        if plain_grads is None:
            plain_flops, plain_grads = counted.get_total_flops(), [w.grad for w in ws]
        same_gradients &= all(torch.equal(a, w.grad) for a, w in zip(plain_grads, ws))
        recomputed.setdefault(name, []).append(counted.get_total_flops() - plain_flops)
        # The Rust reads the peak with its allocator's high-water mark (on a GPU,
        # torch.cuda.max_memory_allocated() is the same) and counts the kept tensors.
        # -> schedules (peaks measured by the Rust's allocator), deepest_peak_all, deepest_peak_sqrt, deepest_peak_none
record("same_gradients", same_gradients)
# The Rust also lists the graph of each segment it rebuilt, for the shallowest network keeping
# every sqrt(L) layers, and the book draws it:
# -> checkpoint_graph
# Every schedule but "all" computes some layers' forward products twice; keeping none computes
# layer i's input again from the data for every i: L(L - 1)/2 layers.
assert recomputed["none"][-1] == layer_flops * depths[-1] * (depths[-1] - 1) // 2
assert recomputed["all"] == [0] * len(depths)
record("deepest_recomputed_layers_sqrt", recomputed["sqrt"][-1] // layer_flops)
record("deepest_recomputed_layers_none", recomputed["none"][-1] // layer_flops)
record("deepest_none_forward_passes", recomputed["none"][-1] / layer_flops / depths[-1])


def slope(values):  # the exponent p of L^p between the two deepest networks
    return math.log(values[-1] / values[-2]) / math.log(depths[-1] / depths[-2])


record("recompute_slope_every", slope(recomputed["every"]))
record("recompute_slope_sqrt", slope(recomputed["sqrt"]))
record("recompute_slope_none", slope(recomputed["none"]))
# The Rust reads these from its measured peaks, and from the high-water mark beyond the counted
# tensors (on a GPU: torch.cuda.max_memory_allocated() less the saved tensors' bytes):
# -> peak_slope_all, peak_slope_every, peak_slope_sqrt, peak_slope_none
# -> largest_working_set, smallest_working_set
