# Shared by the backward device scripts' summaries (bwd_targets.sh, bwd_order.sh):
# the TFLOP/s of `flashstep bench-gpu --backward --tensor-cores` (bench.txt, one or more runs
# appended) and of gpu/tools/sdpa_bwd_bench.py (sdpa.txt).
import re


def ours(path):
    """(N, d, causal, backward variant) -> (fwd, bwd, fwd + bwd TFLOP/s)."""
    rows, causal = {}, False
    for line in open(path):
        if line.startswith("bench-gpu"):  # each run's header names its mask: "..., bf16, causal, ..."
            causal = "causal" in line.split(",")[2]
        m = re.match(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\|[^|]*\|\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
        if m:
            rows[(int(m[1]), int(m[2]), causal, int(m[4]))] = (float(m[5]), float(m[6]), float(m[7]))
    return rows


def torch(path):
    """(backend, N, d, causal) -> (fwd, bwd, fwd + bwd TFLOP/s); {} when the file is missing."""
    rows = {}
    try:
        lines = open(path).readlines()
    except OSError:
        return rows
    for line in lines:
        m = re.match(r"(flash|cudnn)\s+(\d+)\s+(\d+)\s+(True|False)\s*\|[^|]*\|\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
        if m:
            rows[(m[1], int(m[3]), int(m[2]), m[4] == "True")] = (float(m[5]), float(m[6]), float(m[7]))
    return rows
