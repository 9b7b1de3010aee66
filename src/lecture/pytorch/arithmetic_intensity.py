# Arithmetic intensity: FLOPs per byte moved, for ReLU, GeLU, a dot product, a matrix-vector and a
# matrix-matrix product in bf16, and how long each takes against the two rates that bound it.
import math
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
# CPU, one per precision route) and its memory's speed, from copying a buffer far larger than any
# cache.
# -> compute_ceilings
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

# The memory hierarchy: STREAM's copy, scale, add and triad and a read, each size timed as a
# throughput (repeated until 8 MiB have moved), from 4 KiB to 64 MiB here. The Rust goes on to four
# times the largest cache, on one thread and on all, and finds the levels where the curve falls,
# beside the caches /sys reports.
# -> reported_caches, memory_levels_one_thread, hierarchy_agreement
kernels = {
    "copy": (2, lambda a, b, c: c.copy_(a)),
    "scale": (2, lambda a, b, c: torch.mul(c, 0.5, out=b)),
    "add": (3, lambda a, b, c: torch.add(a, b, out=c)),
    "triad": (3, lambda a, b, c: torch.add(b, c, alpha=0.5, out=a)),
    "read": (1, lambda a, b, c: a.sum()),
}
hierarchy_threads = torch.get_num_threads()  # -> hierarchy_threads
hierarchy = {name: [] for name in kernels}  # -> hierarchy_all_threads, hierarchy_one_thread
size = 4096
while size <= 64 << 20:
    for name, (arrays, kernel) in kernels.items():
        k = size // 4 // arrays
        a_, b_, c_ = (torch.ones(k, device=device) for _ in range(3))
        kernel(a_, b_, c_)  # brings them into the level being measured
        reps = max(1, (8 << 20) // size)
        sync()
        start = time.perf_counter()
        for _ in range(reps):
            kernel(a_, b_, c_)
        sync()
        hierarchy[name].append((4 * k * arrays, 4 * k * arrays * reps / (time.perf_counter() - start)))
    size *= 2

# Each operation from about a thousand elements up, one call at a time: the call's own cost at
# small sizes, then the caches, then memory. Far above both predictions is overhead-bound (the Rust
# says so where the fastest call took more than twice the longer one).
# -> overhead_factor
sweep_ops = {
    "relu": lambda k: (torch.relu, [torch.full((k,), 0.5, device=device, dtype=torch.bfloat16)]),
    "gelu": lambda k: (F.gelu, [torch.full((k,), 0.5, device=device, dtype=torch.bfloat16)]),
    "add": lambda k: (torch.add, [torch.full((k,), 0.5, device=device, dtype=torch.bfloat16)] * 2),
    "dot": lambda k: (torch.dot, [torch.full((k,), 0.5, device=device, dtype=torch.bfloat16)] * 2),
    "matvec": lambda k: (torch.mv, [torch.full((int(k**0.5),) * 2, 0.5, device=device, dtype=torch.bfloat16),
                                    torch.full((int(k**0.5),), 0.5, device=device, dtype=torch.bfloat16)]),
}
op_sweeps = {name: [] for name in sweep_ops}  # -> op_sweeps, op_bound_from
for name, make in sweep_ops.items():
    k = 1024
    while k <= 4 << 20:
        f, inputs = make(k)
        out = f(*inputs)
        sync()
        start = time.perf_counter()
        f(*inputs)
        sync()
        op_sweeps[name].append((sum(nbytes(t) for t in inputs) + nbytes(out), time.perf_counter() - start))
        k *= 4

# Fusion: GeLU as one op against PyTorch's naive form of it, five ops that each read and write the
# whole tensor (11 tensors' worth of bytes against 2), at a working set beyond the last cache
# (256 MiB here; the Rust takes its sweeps' largest, and the memory's bandwidth there).
def composed_gelu(t):
    return 0.5 * t * (1 + torch.erf(t / math.sqrt(2)))


big_x = torch.randn(64 << 20, device=device, dtype=torch.bfloat16)
fusion_times = {"fused": [], "composed": []}
for rep in range(1 + 5):
    for name, f in [("fused", F.gelu), ("composed", composed_gelu)]:
        sync()
        start = time.perf_counter()
        f(big_x)
        sync()
        if rep >= 1:
            fusion_times[name].append(time.perf_counter() - start)
fusion = {name: torch.tensor(t).median().item() for name, t in fusion_times.items()}  # -> fusion
sample = torch.randn(1 << 16, device=device, dtype=torch.bfloat16)
print(
    f"composed/fused: {fusion['composed'] / fusion['fused']:.2f}x the time, {11 / 2:.1f}x the bytes,",
    f"results {(F.gelu(sample) - composed_gelu(sample)).abs().max().item()} apart",
)
