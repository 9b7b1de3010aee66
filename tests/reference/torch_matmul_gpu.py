#!/usr/bin/env python3
"""PyTorch's side of the GPU check: the same measurements `cuda_bench` makes, made the same way.

x: [B, D] @ w: [D, K] on random normal data drawn on the GPU, in fp32 (TF32 off), tf32 (TF32 on)
and bf16 (bf16 output), plus bf16 inputs with an fp32 output where this PyTorch supports it; the
device-to-device copy bandwidth (bytes read + written); host-to-device copies from pageable and
pinned memory. Each timing: `warmup` untimed runs, then `reps` runs each between two CUDA events
(timing enabled), and the median. Writes JSON to the path given with --json.

Run on the GPU machine by .ci/gpu-check; not part of `cargo test` (CI has no GPU).
"""
import argparse
import json
import statistics

import torch


def time_median(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    pairs = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) / 1e3 for s, e in pairs]
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


# The library a bfloat16 row is told to use; plain "bf16" leaves the choice to PyTorch's heuristics.
LIBRARY = {"bf16_cublaslt": "cublaslt", "bf16_cublas": "cublas"}


def bench_matmul(mode, b, d, k, warmup, reps):
    chosen = torch.backends.cuda.preferred_blas_library()
    if mode in LIBRARY:
        torch.backends.cuda.preferred_blas_library(LIBRARY[mode])
    try:
        return bench_matmul_on(mode, b, d, k, warmup, reps)
    finally:
        torch.backends.cuda.preferred_blas_library(chosen)


def bench_matmul_on(mode, b, d, k, warmup, reps):
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    dtype = torch.bfloat16 if mode.startswith("bf16") else torch.float32
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(b, d, device="cuda", dtype=dtype, generator=gen)
    w = torch.randn(d, k, device="cuda", dtype=dtype, generator=gen)
    if mode == "bf16_f32_out":
        try:
            torch.mm(x[:16, :16], w[:16, :16], out_dtype=torch.float32)
        except (TypeError, RuntimeError) as e:
            return {"mode": mode, "unsupported": f"torch.mm(..., out_dtype=float32) is not available in torch {torch.__version__}: {e}"}
        fn = lambda: torch.mm(x, w, out_dtype=torch.float32)
    else:
        fn = lambda: x @ w
    t = time_median(fn, warmup, reps)
    flops = 2.0 * b * d * k
    return {"mode": mode, "m": b, "n": k, "k": d, "flops": flops, **t, "flop_per_sec": flops / t["median_s"]}


def bench_copy(nbytes, warmup, reps):
    src = torch.rand(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    t = time_median(lambda: dst.copy_(src), warmup, reps)
    moved = 2.0 * src.numel() * 4
    return {"what": "device copy (read + write)", "bytes_per_rep": moved, **t, "bytes_per_sec": moved / t["median_s"]}


def bench_h2d(nbytes, pinned, warmup, reps):
    host = torch.arange(nbytes, dtype=torch.uint8) if not pinned else torch.arange(nbytes, dtype=torch.uint8).pin_memory()
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    t = time_median(lambda: dev.copy_(host, non_blocking=pinned), warmup, reps)
    what = "host to device, pinned" if pinned else "host to device, pageable"
    return {"what": what, "bytes_per_rep": float(nbytes), **t, "bytes_per_sec": nbytes / t["median_s"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--b", type=int, default=16384)
    ap.add_argument("--d", type=int, default=32768)
    ap.add_argument("--k", type=int, default=8192)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--copy-bytes", type=int, default=4 << 28)
    ap.add_argument("--h2d-bytes", type=int, default=1 << 28)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("torch sees no CUDA device")
    props = torch.cuda.get_device_properties(0)
    out = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": props.name,
           "sm_count": props.multi_processor_count, "total_memory": props.total_memory, "matmul": [], "bandwidth": []}
    out["preferred_blas_library"] = str(torch.backends.cuda.preferred_blas_library())
    for mode in ["fp32", "tf32", "bf16", "bf16_cublaslt", "bf16_cublas", "bf16_f32_out"]:
        reps = min(a.reps, 5) if mode == "fp32" else a.reps
        r = bench_matmul(mode, a.b, a.d, a.k, a.warmup, reps)
        out["matmul"].append(r)
        if "flop_per_sec" in r:
            print(f"  torch matmul {mode:<13} {r['median_s'] * 1e3:9.3f} ms  {r['flop_per_sec'] / 1e12:7.1f} TFLOP/s", flush=True)
        else:
            print(f"  torch matmul {mode:<13} {r['unsupported']}", flush=True)
        torch.cuda.empty_cache()
    out["bandwidth"].append(bench_copy(a.copy_bytes, a.warmup, a.reps))
    for pinned in [False, True]:
        out["bandwidth"].append(bench_h2d(a.h2d_bytes, pinned, 1, min(a.reps, 5)))
    for bw in out["bandwidth"]:
        print(f"  torch {bw['what']:<42} {bw['bytes_per_sec'] / 1e9:8.1f} GB/s", flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    with open(a.json, "w") as f:
        json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
