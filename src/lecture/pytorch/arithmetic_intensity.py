# Arithmetic intensity: FLOPs per byte moved, for ReLU, GeLU, a dot product, a matrix-vector and a
# matrix-matrix product in bf16, and how long each takes against the two rates that bound it.
import time

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

device = "cuda" if torch.cuda.is_available() else "cpu"
# An H100 by its datasheet: dense bf16 FLOP/s, HBM bytes/s, and the FLOPs per byte it needs.
h100_flop_per_sec = record("h100_flop_per_sec", 989.5e12)
h100_bytes_per_sec = record("h100_bytes_per_sec", 3.35e12)
h100_accelerator_intensity = record("h100_accelerator_intensity", h100_flop_per_sec / h100_bytes_per_sec)

# This device's two rates: its bf16 peak (a datasheet's on a GPU; the Rust times an FMA loop on a
# CPU) and its memory's speed, from copying a buffer far larger than any cache.
if device == "cuda":
    peak_flop_per_sec = 989.5e12  # -> peak_flop_per_sec (on a GPU), peak_source (on a GPU)
else:
    peak_flop_per_sec = None  # PyTorch has no peak loop; the Rust times its own:
    # -> peak_flop_per_sec (on a CPU), peak_source (on a CPU), accelerator_intensity (on a CPU)
big = torch.empty(64 * 1024 * 1024, device=device)  # 256 MB; the Rust also measures L2 and the LLC
big.fill_(1.0)  # its pages touched before timing
start = time.perf_counter()
copied = big.clone()
(torch.cuda.synchronize if device == "cuda" else (lambda: None))()
memory_bytes_per_sec = 2 * big.numel() * 4 / (time.perf_counter() - start)  # -> memory_roofs, memory_bytes_per_sec
if peak_flop_per_sec:
    accelerator_intensity = peak_flop_per_sec / memory_bytes_per_sec  # -> accelerator_intensity (on a GPU)

element_bytes = record("element_bytes", torch.tensor([], dtype=torch.bfloat16).element_size())
n = record("n", 1024 * 1024)  # elements of each vector
m = record("matrix_n", 1024)  # rows and columns of each matrix
x, y = torch.randn(n, device=device, dtype=torch.bfloat16), torch.randn(n, device=device, dtype=torch.bfloat16)
a, b = torch.randn(m, m, device=device, dtype=torch.bfloat16), torch.randn(m, m, device=device, dtype=torch.bfloat16)
v = torch.randn(m, device=device, dtype=torch.bfloat16)
ops = {
    "relu": (lambda: torch.relu(x), [x]),
    "gelu": (lambda: F.gelu(x), [x]),
    "dot": (lambda: x @ y, [x, y]),
    "matvec": (lambda: a @ v, [a, v]),
    "matmul": (lambda: a @ b, [a, b]),
}


def nbytes(t):
    return t.numel() * t.element_size()


# Bytes read and written. PyTorch's FLOP counter counts only matrix products; the lecture counts
# ReLU as 1 FLOP per element and GeLU as about 20, as our counter does.
elementwise_flops = {"relu": n, "gelu": 20 * n}
counts = {}
for name, (f, inputs) in ops.items():
    with FlopCounterMode(display=False) as counter:
        out = f()
    flops = elementwise_flops.get(name, counter.get_total_flops())
    bytes_moved = sum(nbytes(t) for t in inputs) + nbytes(out)
    counts[name] = (bytes_moved, flops, flops / bytes_moved)  # -> op_counts
# Every operation but the matrix product does a few FLOPs per byte at most, whatever its size.
highest_other_intensity = max(i for name, (_, _, i) in counts.items() if name != "matmul")
assert 50 * highest_other_intensity < h100_accelerator_intensity  # -> others_below_a_fiftieth

sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
# Each op timed in turns with the others (two warm-up rounds), the median kept.
times = {name: [] for name in ops}
for rep in range(2 + 30):
    for name, (f, _) in ops.items():
        sync()
        start = time.perf_counter()
        f()
        sync()
        if rep >= 2:
            times[name].append(time.perf_counter() - start)
for name, (bytes_moved, flops, intensity) in counts.items():
    median = torch.tensor(times[name]).median().item()  # -> op_time_spreads
    print(f"{name}: {intensity:.3g} FLOP/byte, {median * 1e6:.1f} µs, {bytes_moved / median / 1e9:.1f} GB/s")  # -> op_timings
# The lecture's "GeLU is no slower than ReLU" on this device.
gelu_over_relu_time = torch.tensor(times["gelu"]).median() / torch.tensor(times["relu"]).median()  # -> gelu_over_relu_time

# Square bf16 products from small to large: intensity n/3 walks up the roofline's slope.
for k in [16, 32, 64, 128, 256, 512, 1024] if device == "cpu" else [256, 512, 1024, 2048, 4096, 8192]:
    p, q = torch.randn(k, k, device=device, dtype=torch.bfloat16), torch.randn(k, k, device=device, dtype=torch.bfloat16)
    sync()
    start = time.perf_counter()
    p @ q
    sync()
    print(k, 2 * k**3 / (time.perf_counter() - start))  # -> matmul_sweep
