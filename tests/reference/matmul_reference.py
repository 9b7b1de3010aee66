#!/usr/bin/env python3
"""Reference timings for `cargo run --release --bin bench -- cpu-matmul --with-reference` and
`bench -- elementwise --with-reference`.

Times numpy float32 and PyTorch float32/bfloat16 matrix products, elementwise ops and reductions
on the CPU and speaks JSON.

Two modes:
  --serve    The Rust bench starts this once and sends one JSON request per line on stdin:
               {"cmd": "info"}
               {"cmd": "time", "library": "numpy"|"torch", "dtype": "float32"|"bfloat16",
                "m": M, "k": K, "n": N, "count": C}
               {"cmd": "elementwise", "library": "numpy"|"torch", "dtype": "float32"|"bfloat16",
                "op": "relu"|"gelu"|"add"|"mul"|"sum"|"dot"|"matvec", "n": N, "count": C}
               (vectors of N elements; a matvec's matrix is NxN)
             and gets one JSON line back for each: the libraries and their settings, or
             {"times": [seconds of each of C calls]}. The first request for a case also makes its
             inputs and runs one untimed warm-up call. This lets the bench take turns between its
             own kernels and these, so both see the same machine.
  --shapes   Standalone (matrix products only): times every library at each MxKxN (one warm-up call, then samples until
             --min-samples and --min-time are reached) and prints one JSON report with medians.

Thread counts are fixed through the environment (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS,
MKL_NUM_THREADS), which the BLAS libraries read when they load, so they are set before any import.
A library that cannot be imported is reported under "errors" rather than failing.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description="numpy / PyTorch matmul timings as JSON")
    p.add_argument("--threads", type=int, required=True)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--serve", action="store_true", help="answer JSON requests on stdin")
    mode.add_argument("--shapes", help="comma-separated MxKxN, e.g. 256x256x256,1024x256x64")
    p.add_argument("--min-samples", type=int, default=15)
    p.add_argument("--min-time", type=float, default=1.5, help="seconds per measurement")
    p.add_argument("--max-samples", type=int, default=5000)
    return p.parse_args()


def parse_shapes(text):
    shapes = []
    for item in text.split(","):
        parts = item.lower().split("x")
        if len(parts) != 3 or not all(x.isdigit() for x in parts):
            raise SystemExit(f"bad shape {item!r}: expected MxKxN")
        shapes.append(tuple(int(x) for x in parts))
    return shapes


class Libraries:
    def __init__(self, threads):
        self.threads = threads
        self.errors = []
        self.cases = {}
        # Only the latest elementwise case is kept: the largest are hundreds of MB each.
        self.elementwise_case = (None, None)
        try:
            import numpy
            self.np = numpy
        except ImportError as e:
            self.errors.append(f"numpy: {e}")
            self.np = None
        try:
            import torch
            torch.set_num_threads(threads)
            self.torch = torch
        except Exception as e:  # ImportError, or a wheel that cannot load its shared libraries
            self.errors.append(f"torch: {type(e).__name__}: {e}")
            self.torch = None

    def info(self):
        out = {"python": platform.python_version(), "threads": self.threads, "libraries": {}, "errors": self.errors}
        if self.np is not None:
            out["libraries"]["numpy"] = self.np.__version__
        if self.torch is not None:
            t = self.torch
            out["libraries"]["torch"] = t.__version__
            out["torch_threads"] = t.get_num_threads()
            out["torch_cpu_capability"] = t.backends.cpu.get_cpu_capability()
        try:
            from threadpoolctl import threadpool_info
            keep = ("internal_api", "version", "architecture", "num_threads", "threading_layer")
            out["blas"] = [{k: lib.get(k) for k in keep} for lib in threadpool_info()]
        except ImportError:
            out["blas"] = None
        return out

    def product(self, library, dtype, m, k, n):
        """A zero-argument function computing one product of fixed random inputs (warmed up)."""
        key = (library, dtype, m, k, n)
        if key not in self.cases:
            if library == "numpy" and dtype == "float32" and self.np is not None:
                rng = self.np.random.default_rng(0)
                a = rng.standard_normal((m, k), dtype=self.np.float32)
                b = rng.standard_normal((k, n), dtype=self.np.float32)
                fn = lambda: a @ b
            elif library == "torch" and dtype in ("float32", "bfloat16") and self.torch is not None:
                t = self.torch
                gen = t.Generator().manual_seed(0)
                a = t.randn(m, k, generator=gen).to(getattr(t, dtype))
                b = t.randn(k, n, generator=gen).to(getattr(t, dtype))
                fn = lambda: a @ b
            else:
                raise ValueError(f"cannot time {library} {dtype} here (errors: {self.errors})")
            fn()
            self.cases[key] = fn
        return self.cases[key]


    def elementwise(self, library, dtype, op, n):
        """A zero-argument function running `op` once on fixed random inputs (warmed up), written as
        a PyTorch or numpy user writes it."""
        key = (library, dtype, op, n)
        if self.elementwise_case[0] == key:
            return self.elementwise_case[1]
        self.elementwise_case = (None, None)
        shapes = {"relu": [(n,)], "gelu": [(n,)], "sum": [(n,)], "add": [(n,), (n,)],
                  "mul": [(n,), (n,)], "dot": [(n,), (n,)], "matvec": [(n, n), (n,)]}
        if op not in shapes:
            raise ValueError(f"unknown op {op!r}")
        if library == "torch" and dtype in ("float32", "bfloat16") and self.torch is not None:
            t = self.torch
            gen = t.Generator().manual_seed(0)
            x = [t.randn(*shape, generator=gen).to(getattr(t, dtype)) for shape in shapes[op]]
            fns = {"relu": lambda: t.relu(x[0]),
                   "gelu": lambda: t.nn.functional.gelu(x[0], approximate="none"),
                   "add": lambda: x[0] + x[1], "mul": lambda: x[0] * x[1], "sum": lambda: x[0].sum(),
                   "dot": lambda: t.dot(x[0], x[1]), "matvec": lambda: x[0] @ x[1]}
        elif library == "numpy" and dtype == "float32" and op != "gelu" and self.np is not None:
            np = self.np
            rng = np.random.default_rng(0)
            x = [rng.standard_normal(shape, dtype=np.float32) for shape in shapes[op]]
            fns = {"relu": lambda: np.maximum(x[0], 0), "add": lambda: x[0] + x[1],
                   "mul": lambda: x[0] * x[1], "sum": lambda: x[0].sum(),
                   "dot": lambda: np.dot(x[0], x[1]), "matvec": lambda: x[0] @ x[1]}
        else:
            raise ValueError(f"cannot time {library} {op} at {dtype} here (errors: {self.errors})")
        fn = fns[op]
        fn()
        self.elementwise_case = (key, fn)
        return fn


def timed(fn, count):
    times = []
    for _ in range(count):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def serve(libs):
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if req["cmd"] == "info":
                reply = libs.info()
            elif req["cmd"] == "time":
                fn = libs.product(req["library"], req["dtype"], req["m"], req["k"], req["n"])
                reply = {"times": timed(fn, int(req["count"]))}
            elif req["cmd"] == "elementwise":
                fn = libs.elementwise(req["library"], req["dtype"], req["op"], int(req["n"]))
                reply = {"times": timed(fn, int(req["count"]))}
            else:
                reply = {"error": f"unknown command {req['cmd']!r}"}
        except Exception as e:
            reply = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def standalone(libs, args):
    out = libs.info()
    out["results"] = []
    cases = [("numpy", "float32"), ("torch", "float32"), ("torch", "bfloat16")]
    for m, k, n in parse_shapes(args.shapes):
        for library, dtype in cases:
            try:
                fn = libs.product(library, dtype, m, k, n)
            except ValueError:
                continue
            samples = []
            while len(samples) < args.max_samples and (len(samples) < args.min_samples or sum(samples) < args.min_time):
                samples += timed(fn, 1)
            out["results"].append({"m": m, "k": k, "n": n, "library": library, "dtype": dtype,
                                   "median_s": statistics.median(samples), "samples": len(samples)})
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


def main():
    args = parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    libs = Libraries(args.threads)
    if args.serve:
        serve(libs)
    else:
        standalone(libs, args)


if __name__ == "__main__":
    main()
