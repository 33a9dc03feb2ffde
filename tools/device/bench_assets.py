#!/usr/bin/env python3
"""Rewrites the tensor-core runs of assets/bench/h200.json from bench_assets.sh's output folder.

Usage: python3 tools/device/bench_assets.py RESULTS_DIR
RESULTS_DIR (under gpu/results/) holds fwd.json, fwd_causal.json, bwd.json, bwd_causal.json.
Each new run replaces the run of the same kind (forward or backward, causal or not, bf16, tensor
cores); the points must be the same as before, since the course reads the file by JSON pointer.
"""
import json
import os
import sys

ASSET = os.path.join(os.path.dirname(__file__), "..", "..", "assets", "bench", "h200.json")


def kind(run):
    return (bool(run.get("backward")), bool(run.get("causal")), run.get("dtype"), bool(run.get("tensor_cores")))


def points(run):
    return [(r["B"], r["H"], r["n"], r["d"]) for r in run["rows"]]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench_assets.py RESULTS_DIR")
    folder = sys.argv[1]
    results = os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "results")
    source_dir = os.path.relpath(os.path.abspath(folder), os.path.abspath(results))
    if source_dir.startswith(".."):
        sys.exit(f"bench_assets.py: {folder} is not under gpu/results/")
    with open(ASSET) as f:
        asset = json.load(f)
    for name in ("fwd.json", "fwd_causal.json", "bwd.json", "bwd_causal.json"):
        with open(os.path.join(folder, name)) as f:
            new = json.load(f)
        new = new["runs"][0] if "runs" in new else new
        slots = [i for i, run in enumerate(asset["runs"]) if kind(run) == kind(new)]
        if len(slots) != 1:
            sys.exit(f"bench_assets.py: {name}: {len(slots)} runs of its kind in h200.json, expected 1")
        old = asset["runs"][slots[0]]
        if points(old) != points(new):
            sys.exit(f"bench_assets.py: {name}: points {points(new)} differ from the file's {points(old)}")
        new["source"] = f"{source_dir}/{name}"
        asset["runs"][slots[0]] = new
    with open(ASSET, "w") as f:
        json.dump(asset, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
