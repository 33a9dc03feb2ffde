#!/usr/bin/env python3
"""The forward default's median over the rounds of repeat_defaults.sh, as one table.

repeat_defaults.sh leaves OUT/fwd_R.txt, bench-gpu --tensor-cores's tables of round R (non-causal,
then causal). This writes, per (d, N, causal), the median over the rounds of flashstep's time and
TFLOP/s in the table layout of flashstep_tc_bench (dtype d N causal kernel v ms TFLOP/s x-std),
which app/pipeline_measured.cpp reads for the pipeline model's "default" row. The median of the
times and that of the TFLOP/s are taken separately (with an odd number of rounds they are the
same round's).

Usage: python3 tools/device/rounds_table.py OUT > OUT/medians_bench.txt
"""
import glob
import os
import re
import statistics
import sys

ROW = re.compile(r"\s*(\d+)\s+(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+(\d+)\s*\|\s*([\d.]+)\s+([\d.]+)")


def main() -> int:
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: rounds_table.py OUT (the folder repeat_defaults.sh wrote)", file=sys.stderr)
        return 2
    files = sorted(glob.glob(os.path.join(sys.argv[1], "fwd_*.txt")))
    if not files:
        print(f"rounds_table.py: no fwd_R.txt in {sys.argv[1]}", file=sys.stderr)
        return 2
    rows = {}  # (d, n, causal) -> [(variant, ms, tflops)] over the rounds
    for path in files:
        causal = None
        for line in open(path):
            if line.startswith("bench-gpu"):
                causal = ", causal," in line
            m = ROW.match(line)
            if m and causal is not None:
                key = (int(m[2]), int(m[1]), causal)
                rows.setdefault(key, []).append((int(m[3]), float(m[4]), float(m[5])))
    if not rows:
        print("rounds_table.py: no bench-gpu rows in " + ", ".join(files), file=sys.stderr)
        return 2
    print(f"medians of {len(files)} rounds of bench-gpu --tensor-cores (tools/device/repeat_defaults.sh; "
          "10 calls back to back per sample)")
    print()
    print("dtype d    N      causal kernel             v          ms  TFLOP/s    x std")
    for (d, n, causal), v in sorted(rows.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1])):
        variants = {x[0] for x in v}
        if len(variants) != 1:
            print(f"rounds_table.py: d = {d}, N = {n}: the rounds ran different kernels {sorted(variants)}",
                  file=sys.stderr)
            return 1
        ms = statistics.median(x[1] for x in v)
        tf = statistics.median(x[2] for x in v)
        print(f"bf16  {d:<4} {n:<6} {'yes' if causal else 'no':<6} {'fa2 tc':<18} {v[0][0]:<6} {ms:9.3f} {tf:8.1f}"
              f"     0.00")
    return 0


if __name__ == "__main__":
    sys.exit(main())
