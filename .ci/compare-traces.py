#!/usr/bin/env python3
"""Compares two traces of the same device value by value: every recorded value (and every earlier
state of a value recorded as a history) must be identical except those the machine decides
(timings, rates, measured peaks and MFU, the throughput sweep, memory sizes, `this_device_*`),
listed below. Reports sections whose file, lines or hash moved, for the reader to judge. Exit
status 1 when a non-exempt value differs.

Reads schema versions 1 and 2. Between a version-1 trace and a version-2 one, the values version 2
renamed are compared under their new names (RENAMED_IN_V2), and the histories and values version 2
added (ADDED_IN_V2, and every earlier state of a history) are listed, not counted as differences.

    python3 .ci/compare-traces.py OLD.json NEW.json
    python3 .ci/compare-traces.py <(git show main:trace/lecture_02/cpu-intel-r-xeon-r-processor.json) \\
        trace/lecture_02/cpu-intel-r-xeon-r-processor.json
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

# Version 1 name -> (version 2 name, state): `optimizer.state` and `state_after` became one history.
RENAMED_IN_V2 = {
    "optimizer": {"state": ("state", 0), "state_after": ("state", "last")},
}

# Values version 2 records that version 1 did not.
ADDED_IN_V2 = {
    "train_loop": ["loss"],
}

FIELDS = ("value", "unit", "dtype", "shape")


def exempt(section, name):
    return any(re.fullmatch(p, name) for p in MACHINE_DECIDED.get(section, []))


def states(record):
    """A value's states as comparable dicts: its history (version 2), then the final state."""
    earlier = [dict(s, unit=record.get("unit")) for s in record.get("history", [])]
    return earlier + [record]


def entries(section, version, renamed):
    """name -> {state key -> comparable fields}; a state key is "last" or an index."""
    out = {}
    for name, record in section["values"].items():
        all_states = states(record)
        if version == 1 and name in renamed:
            new_name, key = renamed[name]
            out.setdefault(new_name, {})[key] = record
            continue
        keyed = {i: s for i, s in enumerate(all_states[:-1])}
        keyed["last"] = all_states[-1]
        out[name] = keyed
    return out


def main(old_path, new_path):
    old, new = (json.load(open(p)) for p in (old_path, new_path))
    versions = (old["schema_version"], new["schema_version"])
    upgrade = versions == (1, 2)
    print(f"schema versions: {versions[0]} -> {versions[1]}")
    old_sections = {s["id"]: s for s in old["sections"]}
    new_sections = {s["id"]: s for s in new["sections"]}
    differ, exempted, added, same, moved = [], [], [], 0, []
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
        renamed = RENAMED_IN_V2.get(sid, {}) if upgrade else {}
        ea, eb = entries(a, versions[0], renamed), entries(b, versions[1], {})
        common = [n for n in ea if n in eb]
        if common != [n for n in eb if n in ea]:
            differ.append(f"{sid}: values recorded in another order")
        if versions == (2, 2) and a.get("steps") != b.get("steps"):
            differ.append(f"{sid}: steps (the order of record calls) differ")
        for name in list(ea) + [n for n in eb if n not in ea]:
            sa, sb = ea.get(name), eb.get(name)
            if sa is None and upgrade and name in ADDED_IN_V2.get(sid, []):
                added.append(f"{sid}.{name} ({len(sb)} state(s))")
                continue
            if sa is None or sb is None:
                differ.append(f"{sid}.{name}: only in {'new' if sa is None else 'old'}")
                continue
            if "last" in sa and "last" not in sb or set(sa) - set(sb):
                differ.append(f"{sid}.{name}: states {sorted(map(str, sa))} -> {sorted(map(str, sb))}")
                continue
            extra = [k for k in sb if k not in sa]
            if extra:
                if upgrade:
                    added.append(f"{sid}.{name}: earlier states {extra} (a history)")
                else:
                    differ.append(f"{sid}.{name}: states only in new: {extra}")
            for key in sa:
                va, vb = sa[key], sb[key]
                label = f"{sid}.{name}" + ("" if key == "last" else f" state {key}")
                fields = [k for k in FIELDS if va.get(k) != vb.get(k)]
                if versions == (2, 2) and bool(va.get("timed")) != bool(vb.get("timed")):
                    fields.append("timed")
                if not fields:
                    same += 1
                elif exempt(sid, name):
                    exempted.append(label)
                else:
                    differ.append(f"{label}: {', '.join(fields)} differ: {json.dumps(va.get(fields[0]))[:120]} -> {json.dumps(vb.get(fields[0]))[:120]}")
    print(f"{same} values identical; {len(exempted)} machine-decided values differ (exempt): {', '.join(exempted) or 'none'}")
    for line in added:
        print(f"added by schema 2: {line}")
    for line in moved:
        print(f"moved or rehashed: {line}")
    for line in differ:
        print(f"DIFFERENT: {line}")
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
