# Counting FLOPs: totals and rates for scale, the FLOPs of a matmul, and how fast it runs (MFU).
import os
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

device = "cuda" if torch.cuda.is_available() else "cpu"
# Reference points (totals): GPT-3, GPT-4 (an estimate), the 2023 US executive order's threshold.
record("gpt3_flops", 3.14e23)
record("gpt4_flops", 2e25)
record("reporting_threshold_flops", 1e26)
record("eu_ai_act_threshold_flops", 1e25)  # the EU AI Act's "systemic risk" line
# Speeds, from datasheets (dense bf16): A100 and H100 SXM.
a100_flop_per_sec = record("a100_flop_per_sec", 312e12)
h100_flop_per_sec = record("h100_flop_per_sec", 989.5e12)
# The B200 (NVIDIA's Blackwell datasheet): float32, and bf16 dense (half the sparse 4.5e15).
b200_fp32_flop_per_sec = record("b200_fp32_flop_per_sec", 75e12)
b200_flop_per_sec = record("b200_flop_per_sec", 4.5e15 / 2)
assert b200_flop_per_sec > h100_flop_per_sec  # -> b200_beats_h100
assert 10 * b200_fp32_flop_per_sec < b200_flop_per_sec  # -> b200_fp32_far_below_bf16

# 8 H100s running flat out for one week, and for two.
num_h100s = record("num_h100s", 8)
one_week_seconds = record("one_week_seconds", 60 * 60 * 24 * 7)
total_flops = record("total_flops", num_h100s * one_week_seconds * h100_flop_per_sec)
two_weeks_total_flops = record("two_weeks_total_flops", num_h100s * 2 * one_week_seconds * h100_flop_per_sec)
assert two_weeks_total_flops == 2 * total_flops  # -> two_weeks_twice_one

# A linear model y = x @ w: B points of dimension D mapped to K outputs. The lecture's sizes on a
# GPU; on a CPU, sizes that keep the run short.
B, D, K = (16384, 32768, 8192) if device == "cuda" else (1024, 256, 64)
record("B", B)
record("D", D)
record("K", K)
# Random data, never zeros (a GPU multiplies zeros faster), made on the device (torch's draws).
x = torch.randn(B, D, device=device)
w = torch.randn(D, K, device=device)
# One multiply and one add for each (i, j, k) triple.
flop_per_multiply_add = record("flop_per_multiply_add", 2)
actual_num_flops = record("actual_num_flops", flop_per_multiply_add * B * D * K)
with FlopCounterMode(display=False) as counter:
    y = x @ w
counted_num_flops = record("counted_num_flops", counter.get_total_flops())
assert counted_num_flops == actual_num_flops  # -> counter_agrees
record("y_shape", y.shape)

sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)


def time_in_turns(products, reps):
    """min, q1, median, q3, max seconds of each a @ b, timed in turns after two warm-up rounds;
    tf32 switches TF32 on for that product's calls only. (The Rust times for a budget, 1 s each
    for the headline product, not a fixed count.)"""
    times = [[] for _ in products]
    for rep in range(2 + reps):
        for i, (a, b, tf32) in enumerate(products):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            sync()
            start = time.perf_counter()
            a @ b
            sync()
            if rep >= 2:
                times[i].append(time.perf_counter() - start)
    torch.backends.cuda.matmul.allow_tf32 = False
    quartiles = torch.tensor([0.0, 0.25, 0.5, 0.75, 1.0], dtype=torch.float64)
    return [torch.tensor(t, dtype=torch.float64).quantile(quartiles) for t in times]


# The peak an MFU divides by, dense, per dtype: a GPU's datasheet (these are the H100 SXM's and
# H200's; look up yours). A CPU has no datasheet figure: the Rust times its own FMA loop (see the
# appendix on the CPU's peak), which PyTorch has no counterpart for, so here it gets no MFU.
datasheet = {"fp32": 67e12, "tf32": 494.7e12, "bf16": 989.5e12} if device == "cuda" else {}

# float32, bfloat16, and on a GPU float32 on the tensor cores as TF32, timed in turns. PyTorch's
# float32 matmul on a GPU is cuBLAS's default (the Rust's fp32_default row): PyTorch has no switch
# for the Rust's pedantic float32 row, so on a GPU the actual_* values below are those of the default.
x16, w16 = x.bfloat16(), w.bfloat16()
products = [(x, w, False), (x16, w16, False)] + ([(x, w, True)] if device == "cuda" else [])
spreads = time_in_turns(products, reps=10 if device == "cuda" else 50)

actual_time_spread = spreads[0]  # -> actual_time_spread
actual_time = actual_time_spread[2].item()  # -> actual_time
actual_flop_per_sec = actual_num_flops / actual_time  # -> actual_flop_per_sec
bf16_actual_time_spread = spreads[1]  # -> bf16_actual_time_spread
bf16_actual_time = bf16_actual_time_spread[2].item()  # -> bf16_actual_time
bf16_actual_flop_per_sec = actual_num_flops / bf16_actual_time  # -> bf16_actual_flop_per_sec

if device == "cuda":
    # MFU: achieved over the datasheet's dense figure.
    peak_flop_per_sec = datasheet["fp32"]  # -> peak_flop_per_sec (on a GPU)
    peak_source = "datasheet"  # -> peak_source (on a GPU)
    mfu = actual_flop_per_sec / peak_flop_per_sec  # -> mfu (on a GPU)
    bf16_peak_flop_per_sec = datasheet["bf16"]  # -> bf16_peak_flop_per_sec (on a GPU)
    bf16_peak_source = "datasheet"  # -> bf16_peak_source (on a GPU)
    bf16_mfu = bf16_actual_flop_per_sec / bf16_peak_flop_per_sec  # -> bf16_mfu (on a GPU)
else:
    # A CPU has no datasheet figure, and PyTorch no peak loop: the Rust times its own FMA loop
    # (float32) and bf16 dot-product loop (the appendix on the CPU's peak) and divides by those.
    # -> peak_flop_per_sec (on a CPU), peak_source (on a CPU), peak_loop, mfu (on a CPU)
    # -> bf16_peak_flop_per_sec (on a CPU), bf16_peak_source (on a CPU), bf16_peak_loop, bf16_mfu (on a CPU)
    pass

if device == "cuda":
    # PyTorch's float32 is cuBLAS's default: the row above.
    fp32_default_actual_time_spread = actual_time_spread  # -> fp32_default_actual_time_spread
    fp32_default_actual_time = actual_time  # -> fp32_default_actual_time
    fp32_default_actual_flop_per_sec = actual_flop_per_sec  # -> fp32_default_actual_flop_per_sec
    fp32_default_peak_flop_per_sec = datasheet["fp32"]  # -> fp32_default_peak_flop_per_sec
    fp32_default_peak_source = "datasheet"  # -> fp32_default_peak_source
    fp32_default_mfu = mfu  # -> fp32_default_mfu
    # TF32: inputs rounded to 10-bit mantissas, float32 accumulation (allow_tf32 = True).
    tf32_actual_time_spread = spreads[2]  # -> tf32_actual_time_spread
    tf32_actual_time = tf32_actual_time_spread[2].item()  # -> tf32_actual_time
    tf32_actual_flop_per_sec = actual_num_flops / tf32_actual_time  # -> tf32_actual_flop_per_sec
    tf32_peak_flop_per_sec = datasheet["tf32"]  # -> tf32_peak_flop_per_sec
    tf32_peak_source = "datasheet"  # -> tf32_peak_source
    tf32_mfu = tf32_actual_flop_per_sec / tf32_peak_flop_per_sec  # -> tf32_mfu
    # Which library runs a bfloat16 product: PyTorch picks between cuBLAS and cuBLASLt by its own
    # heuristics (the bf16_* row above), or takes the one it is told. The Rust's headline goes
    # through cuBLASLt (heuristic search, a 32 MiB workspace on Hopper) and times plain cuBLAS
    # (cublasGemmEx) beside it; the same two here.
    chosen = torch.backends.cuda.preferred_blas_library()
    torch.backends.cuda.preferred_blas_library("cublaslt")
    bf16_matmul_route = "cublaslt"  # -> bf16_matmul_route
    bf16_lt_flop_per_sec = actual_num_flops / time_in_turns([(x16, w16, False)], reps=10)[0][2].item()
    torch.backends.cuda.preferred_blas_library("cublas")
    bf16_cublas_time = time_in_turns([(x16, w16, False)], reps=10)[0][2].item()
    bf16_cublas_actual_flop_per_sec = actual_num_flops / bf16_cublas_time  # -> bf16_cublas_actual_flop_per_sec
    torch.backends.cuda.preferred_blas_library(chosen)

# What the bfloat16 product hands back, and whether its partial sums may be added in less than
# float32 precision (a cuBLAS setting, on by default; the Rust records false on a CPU).
record("bf16_output_dtype", (x16 @ w16).dtype)
bf16_reduced_precision_reduction = device == "cuda" and torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction  # -> bf16_reduced_precision_reduction
if device == "cpu":
    # The instruction-set level PyTorch's own CPU kernels dispatch to ("AVX512" here), and what set it.
    cpu_isa = torch.backends.cpu.get_cpu_capability()  # -> cpu_isa
    cpu_isa_set_by = "ATEN_CPU_CAPABILITY" if "ATEN_CPU_CAPABILITY" in os.environ else "detected"  # -> cpu_isa_set_by
    # PyTorch's CPU matmuls go to oneDNN/MKL, which pick their kernels (AMX, AVX512_BF16 or a
    # widening to float32) without saying which; and PyTorch has no peak loops or peak formula.
    # -> f32_matmul_isa
    # -> bf16_matmul_isa
    # -> cpu_isa_peaks
    # -> cpu_peak_formula
    # Nor does it say whether a bfloat16 product ran on a bfloat16 unit or was widened to
    # float32 (oneDNN decides inside; the Rust times both units and records its choice).
    # -> bf16_widened
    # -> bf16_has_instruction
    # -> bf16_matmul_route_reason
    # -> bf16_unit_flop_per_sec

# Throughput against size: small products cannot keep the units busy.
sizes = [256, 512, 1024, 2048, 4096, 8192, 16384] if device == "cuda" else [64, 128, 256, 512, 1024]
throughput_sweep = []
for n in sizes:
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    modes = {"fp32": (a, b, False), "bf16": (a.bfloat16(), b.bfloat16(), False)}
    if device == "cuda":
        modes["tf32"] = (a, b, True)
    for mode, spread in zip(modes, time_in_turns(list(modes.values()), reps=5)):
        flops = 2 * n**3
        median_s = spread[2].item()
        mfu_n = flops / median_s / datasheet[mode] if datasheet else None  # a CPU: the Rust's, against its loops
        throughput_sweep.append({"dtype": mode, "n": n, "flops": flops, "median_s": median_s, "flop_per_sec": flops / median_s, "mfu": mfu_n})  # -> throughput_sweep
sweep_peaks = datasheet  # -> sweep_peaks (on a GPU)
# -> sweep_peaks (on a CPU: the Rust's measured peaks, which PyTorch has no counterpart for)
