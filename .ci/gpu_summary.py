#!/usr/bin/env python3
"""The table `.ci/gpu-check` ends with: ours (cuda_bench's JSON) vs PyTorch (torch_matmul_gpu.py's
JSON), TFLOP/s and MFU per dtype, the bandwidths, and the issue's targets as PASS/MISS lines.
Usage: gpu_summary.py CUDA_BENCH_JSON TORCH_JSON (the second may be missing: then ours alone).
tests/cli/gpu_summary.rs runs it on a report made by the same Rust code cuda_bench uses."""
import json, sys

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception as e:
        print(f"(cannot read {path}: {e})")
        return None

def fmt(x, width, digits):
    """A number right-aligned in `width` columns, or n/a when there is none."""
    return f"{x:>{width}.{digits}f}" if x is not None else f"{'n/a':>{width}}"

ours, torch = load(sys.argv[1]), load(sys.argv[2])
if ours is None:
    sys.exit(1)
theirs = {m["mode"]: m for m in (torch or {}).get("matmul", [])}

def label(m):
    """Our row's name: the mode, and `_cublas` for a bfloat16 product on plain cuBLAS (the
    lecture's bfloat16 route is cuBLASLt; a report from before routes has none)."""
    on_cublas = m["mode"].startswith("bf16") and m.get("route") == "cublas"
    return m["mode"] + ("_cublas" if on_cublas else "")

# Which of PyTorch's rows each of ours is set against, like with like. PyTorch's float32 matmul is
# cuBLAS's default FP32 (no TF32): our `fp32_default`. Our `fp32` is pedantic (FP32 in every step,
# the lecture's row); PyTorch has no such switch, so it is shown alone. Our bfloat16 on cuBLASLt
# against PyTorch told to use cuBLASLt, on cuBLAS against PyTorch told to use cuBLAS (a report
# from an older script has only PyTorch's own choice, `bf16`).
TORCH_ROW = {"fp32_default": "fp32", "tf32": "tf32", "bf16": "bf16_cublaslt", "bf16_cublas": "bf16_cublas",
             "bf16_f32_out": "bf16_f32_out"}
if "bf16_cublaslt" not in theirs:
    TORCH_ROW["bf16"] = "bf16"
print(f"{ours['name']}: x[{ours['sizes']['B']},{ours['sizes']['D']}] @ w[{ours['sizes']['D']},{ours['sizes']['K']}], median of timed runs after warm-up, CUDA events")
print(f"{'dtype':<14}{'ours TFLOP/s':>14}{'ours MFU':>10}{'torch TFLOP/s':>15}{'torch MFU':>11}{'ours/torch':>12}")
verdicts = []
for m in ours["matmul"]:
    t = theirs.get(TORCH_ROW.get(label(m)), {})
    peak = m.get("peak_flop_per_sec")
    tf = t.get("flop_per_sec")
    ratio = m["flop_per_sec"] / tf if tf else None
    print(f"{label(m):<14}{m['flop_per_sec']/1e12:>14.1f}{fmt(m.get('mfu'), 10, 3)}{fmt(tf and tf/1e12, 15, 1)}"
          f"{fmt(tf and peak and tf/peak, 11, 3)}{fmt(ratio, 12, 3)}")
    if label(m) == "bf16":
        # The lecture's bfloat16 against PyTorch's own choice of library (what `x @ w` gets).
        verdicts.append(("bf16 >= 740 TFLOP/s", m["flop_per_sec"] >= 740e12))
        default = theirs.get("bf16", {}).get("flop_per_sec")
        if default:
            verdicts.append(("bf16 >= 0.97x PyTorch", m["flop_per_sec"] / default >= 0.97))
    if m["mode"] == "fp32_default" and ratio is not None:
        verdicts.append(("fp32 >= 0.97x PyTorch", ratio >= 0.97))
default = theirs.get("bf16", {})
if "bf16_cublaslt" in theirs and default.get("flop_per_sec"):
    # Under the torch column: PyTorch left to pick its library (the target's reference).
    peak = next((m.get("peak_flop_per_sec") for m in ours["matmul"] if label(m) == "bf16"), None)
    tf = default["flop_per_sec"]
    print(f"{'bf16, torch picks':<38}{tf/1e12:>15.1f}{fmt(peak and tf/peak, 11, 3)}")
for m in ours["matmul"]:
    if m.get("lt_choice"):
        c = m["lt_choice"]
        print(f"{label(m)}: cuBLASLt ran candidate {c['candidate'] + 1} of {c['candidates']}, "
              f"workspace {c['workspace_bytes']} of {c['workspace_limit_bytes']} bytes")
print()
bw = {b["what"]: b for b in ours["bandwidth"]}
copy = bw.get("device copy (read + write)")
tcopy = next((b for b in (torch or {}).get("bandwidth", []) if b["what"].startswith("device copy")), None)
print(f"{'bandwidth (bytes read + written)':<56}{'GB/s':>8}{'of copy':>9}")
for b in ours["bandwidth"]:
    print(f"{b['what']:<56}{b['bytes_per_sec']/1e9:>8.1f}{b['fraction_of_copy']:>9.2f}")
for b in (torch or {}).get("bandwidth", []):
    frac = b["bytes_per_sec"] / copy["bytes_per_sec"] if copy else float("nan")
    print(f"{'torch ' + b['what']:<56}{b['bytes_per_sec']/1e9:>8.1f}{frac:>9.2f}")
fast = next((b for b in ours["bandwidth"] if b["what"].startswith("adagrad update, float32") and b["what"].endswith("_vec`")), None)
if fast and copy:
    verdicts.append(("AdaGrad f32 >= 0.80 of device copy", fast["bytes_per_sec"] >= 0.8 * copy["bytes_per_sec"]))
print()
for name, ok in verdicts:
    print(f"{'PASS' if ok else 'MISS'}  {name}")
