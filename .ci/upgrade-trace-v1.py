#!/usr/bin/env python3
"""Upgrades a schema-1 trace to schema 2 without re-running it: for a trace nobody can re-record
here (a GPU trace, when no GPU is at hand). A CPU trace is better regenerated:
`cargo run --release --bin lecture`.

    upgrade-trace-v1.py IN OUT [--commit SHA --dirty true|false|unknown --git-source build|git]
                               [--build-profile release --opt-level 3 --target-features a,b]

What schema 1 kept once per trace and schema 2 keeps per section (seed, git, compiler, command
line, time) is copied into every section's `run`, timed at the trace's `created_at` (the start of
the run that wrote it). Schema 1 recorded no build facts: they come from the options (defaults:
the release profile, opt-level 3, no debug assertions, x86-64's baseline features, which is how
`.ci/gpu-prepare` builds). The git fields can be corrected with the options, when the trace's own
came from a copy of the tree whose .git said something else. Values keep their order as the steps
(no histories existed); `timed` follows the unit (s, FLOP/s, bytes/s); no token positions
(the book then places values by line).
"""
import argparse
import json
import sys

TIMED_UNITS = {"s", "FLOP/s", "bytes/s"}


def upgrade(v1, args):
    if v1.get("schema_version") != 1:
        sys.exit(f"not a schema-1 trace (schema_version {v1.get('schema_version')!r})")
    prov = v1["provenance"]
    git = dict(prov["git"])
    if args.commit:
        git["commit"] = args.commit
    if args.dirty:
        git["dirty"] = {"true": True, "false": False, "unknown": None}[args.dirty]
    if args.git_source:
        git["source"] = args.git_source
    run = {
        "recorded_at": prov["created_at"],
        "seed": prov["seed"],
        "git": git,
        "rustc": prov["rustc"],
        "build": {
            "profile": args.build_profile,
            "opt_level": args.opt_level,
            "debug_assertions": False,
            "target_arch": "x86_64",
            "target_features": args.target_features.split(","),
        },
        "command_line": prov["command_line"],
    }
    sections = []
    for s in v1["sections"]:
        values = {}
        for name, v in s["values"].items():
            out = {"value": v["value"], "unit": v["unit"], "line": v["line"]}
            if v["unit"] in TIMED_UNITS:
                out["timed"] = True
            for key in ("dtype", "shape"):
                if key in v:
                    out[key] = v[key]
            values[name] = out
        sections.append({
            "id": s["id"], "title": s["title"], "source_file": s["source_file"],
            "source_line": s["source_line"], "source_hash": s["source_hash"],
            "wall_time_s": s["wall_time_s"], "run": run, "values": values,
            "steps": [[name, 0] for name in values],
        })
    return {
        "schema_version": 2,
        "lecture": v1["lecture"],
        "provenance": {"device": prov["device"], "host": prov["host"], "os": prov["os"]},
        "sections": sections,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--commit")
    ap.add_argument("--dirty", choices=["true", "false", "unknown"])
    ap.add_argument("--git-source", choices=["build", "git"])
    ap.add_argument("--build-profile", default="release")
    ap.add_argument("--opt-level", default="3")
    ap.add_argument("--target-features", default="fxsr,sse,sse2")
    args = ap.parse_args()
    with open(args.input) as f:
        v2 = upgrade(json.load(f), args)
    with open(args.output, "w") as f:
        json.dump(v2, f, indent=2, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
