#!/usr/bin/env python3
"""Compares two traces of the same device value by value: every recorded value must be identical
except those the machine decides (timings, rates, measured peaks and MFU, the throughput sweep,
memory sizes, `this_device_*`), listed below. Reports sections whose file, lines or hash moved,
for the reader to judge. Exit status 1 when a non-exempt value differs.

    python3 .ci/compare-traces.py OLD.json NEW.json
    python3 .ci/compare-traces.py <(git show main:trace/lecture_02/cpu.json) trace/lecture_02/cpu.json
"""

import json
import re
import sys

# section id -> names (regular expressions, matched whole) whose values the machine decides.
MACHINE_DECIDED = {
    "motivating_questions": [r"this_device_.*"],
    "tensors_on_gpus": [r"cuda_unavailable_reason"],
    "tensor_operations_flops": [
        r"(tf32_|bf16_)?actual_time(_spread)?",
        r"(tf32_|bf16_)?actual_flop_per_sec",
        r"(tf32_|bf16_)?promised_flop_per_sec",  # on a CPU: a measured FMA loop
        r"(tf32_|bf16_)?promised_peak_source",
        r"(tf32_|bf16_)?mfu(_unavailable_reason)?",
        r"cpu_peak_formula",  # clock and core count
        r"throughput_sweep",
        r"sweep_peaks",
    ],
    "gradients_flops": [r"(forward|backward)_time(_spread)?", r"measured_backward_to_forward_ratio"],
    "data_loading": [r"h2d_.*", r"pinned_over_pageable"],
}


def exempt(section, name):
    return any(re.fullmatch(p, name) for p in MACHINE_DECIDED.get(section, []))


def main(old_path, new_path):
    old, new = (json.load(open(p)) for p in (old_path, new_path))
    old_sections = {s["id"]: s for s in old["sections"]}
    new_sections = {s["id"]: s for s in new["sections"]}
    differ, exempted, same, moved = [], [], 0, []
    for sid in sorted(set(old_sections) | set(new_sections)):
        if sid not in old_sections or sid not in new_sections:
            differ.append(f"{sid}: only in {'new' if sid in new_sections else 'old'}")
            continue
        a, b = old_sections[sid], new_sections[sid]
        if a["title"] != b["title"]:
            differ.append(f"{sid}: title {a['title']!r} -> {b['title']!r}")
        where = [k for k in ("source_file", "source_line", "source_hash") if a[k] != b[k]]
        if where:
            moved.append(f"{sid}: " + ", ".join(f"{k} {a[k]} -> {b[k]}" if k != "source_hash" else k for k in where))
        names = list(a["values"]) + [n for n in b["values"] if n not in a["values"]]
        for name in names:
            va, vb = a["values"].get(name), b["values"].get(name)
            if va is None or vb is None:
                differ.append(f"{sid}.{name}: only in {'new' if va is None else 'old'}")
                continue
            if list(a["values"]).index(name) != list(b["values"]).index(name):
                differ.append(f"{sid}.{name}: recorded in another order")
            fields = [k for k in ("value", "unit", "dtype", "shape") if va.get(k) != vb.get(k)]
            if not fields:
                same += 1
            elif exempt(sid, name):
                exempted.append(f"{sid}.{name}")
            else:
                differ.append(f"{sid}.{name}: {', '.join(fields)} differ: {json.dumps(va.get(fields[0]))[:120]} -> {json.dumps(vb.get(fields[0]))[:120]}")
    print(f"{same} values identical; {len(exempted)} machine-decided values differ (exempt): {', '.join(exempted) or 'none'}")
    for line in moved:
        print(f"moved or rehashed: {line}")
    for line in differ:
        print(f"DIFFERENT: {line}")
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
