#!/usr/bin/env python3
"""Summary of a `.ci/perf-report` folder: the figures issue 12's "Done when" asks for.

Reads bench1.json, bench2.json (`bench cpu-matmul --json`), lecture{1,2}.rates.json (the lecture's
fp32 and bf16 FLOP/s, from `lecture get`), compare.txt (`lecture compare` of the two runs' traces:
it reads no trace itself) and lecture{1,2}.seconds (start and end, epoch seconds), and prints:
  - both bench tables: our f32 over numpy f32 (goal ≥ 1.0) and our bf16 over PyTorch bf16 (≥ 0.95);
  - the lecture's fp32 and bf16 rates at its shape against the bench's at that shape (±15 %);
  - the two lecture runs against each other on every timed value whose median call lasts at
    least 0.1 ms (±10 %);
  - each lecture run's wall time (goal < 10 s).
Exits non-zero if a figure misses its goal.
"""

import json
import re
import sys
from pathlib import Path

LECTURE_SHAPE = "1024×256·256×64"
MIN_CALL_S = 1e-4


def bench_table(doc):
    misses = []
    print(f"{'shape':<16} {'f32 GF/s':>9} {'np GF/s':>9} {'f32/np':>7} {'bf16 GF/s':>10} {'pt bf16':>9} {'bf16/pt':>8}")
    for r in doc["rows"]:
        f32, bf16, np32, pt16 = (r.get(k) for k in ("our f32", "our bf16", "np f32", "pt bf16"))
        ratio = lambda ours, theirs: theirs["timing"]["median_s"] / ours["timing"]["median_s"] if theirs else None
        f, b = ratio(f32, np32), ratio(bf16, pt16)
        cell = lambda x, goal: "—" if x is None else f"{x:.2f}×" + ("" if x >= goal else " ✗")
        gf = lambda e: f"{e['gflop_per_sec']:.1f}" if e else "—"
        print(f"{r['shape']:<16} {gf(f32):>9} {gf(np32):>9} {cell(f, 1.0):>7} {gf(bf16):>10} {gf(pt16):>9} {cell(b, 0.95):>8}")
        misses += [f"f32/np {r['shape']}"] * (f is not None and f < 1.0)
        misses += [f"bf16/pt {r['shape']}"] * (b is not None and b < 0.95)
    return misses


# `lecture compare` lists each timing a clock measured as "  NAME: A s, B s: RATIO×".
TIMING = re.compile(r"^  (?P<name>.+): (?P<a>\S+) s, (?P<b>\S+) s: (?P<ratio>\S+)×$")


def timings(compare_txt):
    """name → (run 1 seconds, run 2 seconds), for every timing `lecture compare` listed."""
    out = {}
    for line in compare_txt.splitlines():
        m = TIMING.match(line)
        if m:
            out[m["name"]] = (float(m["a"]), float(m["b"]))
    if not out:
        sys.exit("compare.txt lists no timings: is it `lecture compare`'s output?")
    return out


def main():
    folder = Path(sys.argv[1])
    misses = []
    benches = [json.loads((folder / f"bench{i}.json").read_text()) for i in (1, 2)]
    for i, doc in enumerate(benches, 1):
        print(f"== bench cpu-matmul --with-reference, run {i} ({doc['threads']} threads, bf16 on {doc['bf16_isa']})")
        misses += bench_table(doc)
        print()
    if (folder / "load.txt").exists():
        print("== machine load\n" + (folder / "load.txt").read_text())

    rates = [json.loads((folder / f"lecture{i}.rates.json").read_text()) for i in (1, 2)]
    print(f"== the lecture's rates at its shape ({LECTURE_SHAPE}) against the bench's (goal: within ±15 %)")
    for i, v in enumerate(rates, 1):
        lecture = {"f32": v["f32"] / 1e9, "bf16": v["bf16"] / 1e9}
        lecture["bf16/f32"] = lecture["bf16"] / lecture["f32"]
        for j, doc in enumerate(benches, 1):
            row = next(r for r in doc["rows"] if r["shape"] == LECTURE_SHAPE)
            bench = {"f32": row["our f32"]["gflop_per_sec"], "bf16": row["our bf16"]["gflop_per_sec"]}
            bench["bf16/f32"] = bench["bf16"] / bench["f32"]
            for what in ("f32", "bf16", "bf16/f32"):
                dev = lecture[what] / bench[what] - 1
                flag = "" if abs(dev) <= 0.15 else " ✗"
                misses += [f"lecture {i} vs bench {j}: {what}"] * (abs(dev) > 0.15)
                print(f"  lecture {i} vs bench {j}: {what:<8} {lecture[what]:9.2f} vs {bench[what]:9.2f}  ({dev:+.1%}){flag}")
    print()

    print(f"== lecture run 1 against run 2, every timed value with a median call ≥ {MIN_CALL_S * 1e3:.1f} ms (goal: within ±10 %)")
    for name, (a, b) in sorted(timings((folder / "compare.txt").read_text()).items()):
        if min(a, b) < MIN_CALL_S:
            continue
        dev = a / b - 1
        flag = "" if abs(dev) <= 0.10 else " ✗"
        misses += [f"lecture runs disagree on {name}"] * (abs(dev) > 0.10)
        print(f"  {name:<55} {a * 1e3:9.3f} ms  {b * 1e3:9.3f} ms  ({dev:+.1%}){flag}")
    print()

    print("== the lecture's wall time (goal: < 10 s)")
    for i in (1, 2):
        start, end = map(float, (folder / f"lecture{i}.seconds").read_text().split())
        flag = "" if end - start < 10 else " ✗"
        misses += [f"lecture {i} took {end - start:.1f} s"] * (end - start >= 10)
        print(f"  run {i}: {end - start:.2f} s{flag}")
    print()
    print("all figures meet their goals" if not misses else "missed:\n  " + "\n  ".join(misses))
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
