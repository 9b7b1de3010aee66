"""Runs the PyTorch panels and compares what they record with a run's trace.

Each panel (`<section id>.py` beside this file) is the PyTorch that does what the Rust section
does. It calls `record("name", value)` on the line that produces a value the Rust section also
records, when that value is deterministic (shapes, strides, bytes, dtype roundings, FLOP
counts, results of fixed inputs): those are compared here. A value that depends on random draws,
timing or the machine is named in a trailing comment instead (`# -> name`) and not compared.

    python run_panels.py --trace trace/lecture_02/<name>.json [SECTION ...]

prints one line per section and a last line `compared N values in M panels`; it exits 1 if a
value differs, a recorded name is not in the trace, or a panel fails.
"""

import argparse
import json
import math
import pathlib
import sys
import traceback

HERE = pathlib.Path(__file__).resolve().parent


def to_plain(value):
    """A recorded value as the trace would hold it: tensors become nested lists (with their dtype
    and shape kept aside), sizes and tuples lists, dtypes their short names."""
    import torch

    if isinstance(value, torch.Tensor):
        t = value.detach().cpu()
        data = t.float().tolist() if t.is_floating_point() else t.tolist()
        return {"tensor": data, "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    if isinstance(value, torch.device):
        return str(value)
    if isinstance(value, (torch.Size, tuple, list)):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    return value


def same(ours, theirs, path="value"):
    """None when `ours` (from the panel) equals `theirs` (from the trace), else where they differ.
    Integers, strings and booleans must be equal; floats within a relative 1e-6 (the two sides
    may print a float32 through different paths)."""
    if isinstance(ours, dict) and "tensor" in ours and set(ours) == {"tensor", "dtype", "shape"}:
        return same(ours["tensor"], theirs, path)
    if isinstance(ours, bool) or isinstance(theirs, bool):
        return None if ours == theirs else f"{path}: {ours!r} != {theirs!r}"
    if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)):
        if isinstance(ours, int) and isinstance(theirs, int):
            return None if ours == theirs else f"{path}: {ours} != {theirs}"
        a, b = float(ours), float(theirs)
        if a == b or (math.isnan(a) and math.isnan(b)):
            return None
        if math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-6 * max(abs(a), abs(b)):
            return None
        return f"{path}: {a!r} != {b!r}"
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return f"{path}: length {len(ours)} != {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            d = same(a, b, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(ours, dict) and isinstance(theirs, dict):
        missing = set(ours) ^ set(theirs)
        if missing:
            return f"{path}: keys differ: {sorted(missing)}"
        for k in ours:
            d = same(ours[k], theirs[k], f"{path}.{k}")
            if d:
                return d
        return None
    return None if ours == theirs else f"{path}: {ours!r} != {theirs!r}"


def run_panel(section):
    """The values a panel records, in order (a name recorded twice keeps its last value)."""
    recorded = {}

    def record(name, value):
        recorded[name] = to_plain(value)
        return value

    # Panels share the lecture's Cruncher (`cruncher.py`, beside them).
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    source = (HERE / f"{section}.py").read_text()
    exec(compile(source, f"{section}.py", "exec"), {"record": record, "__name__": "__panel__"})
    return recorded


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", required=True)
    parser.add_argument("sections", nargs="*")
    args = parser.parse_args()
    trace = json.loads(pathlib.Path(args.trace).read_text())
    by_id = {s["id"]: s for s in trace["sections"]}
    sections = args.sections or [s["id"] for s in trace["sections"]]
    compared = panels = 0
    failed = False
    for section in sections:
        if section not in by_id:
            print(f"{section}: not a section of {args.trace}")
            failed = True
            continue
        try:
            recorded = run_panel(section)
        except Exception:
            print(f"{section}: the panel failed:\n{traceback.format_exc()}")
            failed = True
            continue
        values = by_id[section]["values"]
        problems = []
        for name, ours in recorded.items():
            if name not in values:
                problems.append(f"{name}: the Rust section records no value of that name")
                continue
            entry = values[name]
            diff = same(ours, entry["value"])
            if diff is None and isinstance(ours, dict) and "tensor" in ours and "dtype" in entry:
                if ours["dtype"] != entry["dtype"] or ours["shape"] != entry["shape"]:
                    diff = f"dtype/shape {ours['dtype']}{ours['shape']} != {entry['dtype']}{entry['shape']}"
            if diff:
                problems.append(f"{name}: {diff}")
        panels += 1
        compared += len(recorded)
        status = "ok" if not problems else "DIFFERS"
        print(f"{section}: {len(recorded)} values compared, {status}")
        for p in problems:
            print(f"    {p}")
        failed |= bool(problems)
    print(f"compared {compared} values in {panels} panels")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
