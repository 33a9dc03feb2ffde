#!/usr/bin/env python3
"""The summary table of tools/device/defaults_check.sh: flashstep's default kernels beside
PyTorch (and an older flashstep binary, when it ran), from the raw outputs in OUT, with each
point's speed target against cuDNN marked met or not and a count of each target last: the
non-causal forward at 1.05x cuDNN's speed or more, the backward and forward + backward at 1.0x
or more (the targets are stated for the H200; the card that ran is named beside the count).

  python3 tools/device/defaults_table.py OUT
"""
import os
import re
import sys


def fwd_table(path):
    """bench-gpu --tensor-cores rows: (N, d, causal) -> (variant, ms, TFLOP/s)."""
    rows, causal = {}, False
    if not os.path.exists(path):
        return rows
    for line in open(path, errors="replace"):
        if line.startswith("bench-gpu"):
            causal = ", causal," in line
        m = re.match(r"\s*(\d+)\s+(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+(\d+)\s*\|\s*([\d.]+)\s+([\d.]+)", line)
        if m:
            rows[(int(m[1]), int(m[2]), causal)] = (int(m[3]), float(m[4]), float(m[5]))
    return rows


def sdpa_fwd(path):
    rows = {}
    if not os.path.exists(path):
        return rows
    for line in open(path, errors="replace"):
        m = re.search(r"d=(\d+)\s+N=(\d+)\s+causal=(\w+)\s+([\d.]+) ms", line)
        if m:
            rows[(int(m[2]), int(m[1]), m[3] == "True")] = float(m[4])
    return rows


def bwd_table(path):
    """bench-gpu --backward --tensor-cores rows: (N, d, causal) -> (bwd ms, fwd + bwd ms)."""
    rows, causal = {}, False
    if not os.path.exists(path):
        return rows
    for line in open(path, errors="replace"):
        if line.startswith("bench-gpu"):
            causal = ", causal," in line
        m = re.match(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\|\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
        if m:
            rows[(int(m[1]), int(m[2]), causal)] = (float(m[6]), float(m[7]))
    return rows


def sdpa_bwd(path):
    """sdpa_bwd_bench.py rows: (backend, N, d, causal) -> (bwd ms, fwd + bwd ms)."""
    rows = {}
    if not os.path.exists(path):
        return rows
    for line in open(path, errors="replace"):
        m = re.match(r"(\w+)\s+(\d+)\s+(\d+)\s+(True|False)\s*\|\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
        if m:
            rows[(m[1], int(m[3]), int(m[2]), m[4] == "True")] = (float(m[6]), float(m[7]))
    return rows


FWD_TARGET, BWD_TARGET = 1.05, 1.0  # cuDNN's time over flashstep's, at least


def card(path):
    """The GPU a bench-gpu output names in its first header ("... on NVIDIA H200 (132 SMs) ...")."""
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            m = re.search(r" on (.+?) \(\d+ SMs\)", line)
            if m:
                return m[1]
    return "an unnamed card"


def met(ratio, target):
    return "met" if ratio >= target else "not met"


def main():
    out = sys.argv[1]
    new, old = fwd_table(f"{out}/fwd_new.txt"), fwd_table(f"{out}/fwd_old.txt")
    ref = sdpa_fwd(f"{out}/fwd_sdpa.txt")
    count = {"fwd": [0, 0], "bwd": [0, 0], "fb": [0, 0]}  # [met, measured]

    def tally(key, ratio, target):
        verdict = met(ratio, target)
        count[key][0] += verdict == "met"
        count[key][1] += 1
        return verdict

    print("forward, bf16, B x H x N = 131072, H = 8, ms (10 calls back to back on both sides)")
    print(f"     N    d causal |  v    new ms |  old ms  new/old |  cuDNN ms  cuDNN/new | >= {FWD_TARGET}x (non-causal)")
    for causal in (False, True):
        for d in (64, 128):
            for n in (4096, 16384):
                k = (n, d, causal)
                nv = new.get(k)
                o = old.get(k)
                c = ref.get(k)
                target = ""
                if c and nv and not causal:
                    target = " | " + tally("fwd", c / nv[1], FWD_TARGET)
                print(f"{n:6d} {d:4d} {'yes' if causal else 'no ':6s} | "
                      + (f"{nv[0]:2d} {nv[1]:9.3f}" if nv else f"{'-':>12s}") + " | "
                      + (f"{o[1]:7.3f} {nv[1] / o[1]:7.3f}x" if o and nv else f"{'-':>16s}") + " | "
                      + (f"{c:9.3f} {c / nv[1]:9.3f}x" if c and nv else "-") + target)
    bwd, sb = bwd_table(f"{out}/bwd_new.txt"), sdpa_bwd(f"{out}/bwd_sdpa.txt")
    print("backward, bf16, B = 16, H = 16, ms (2 calls back to back on both sides); ratio = cuDNN / flashstep")
    print(f"     N    d causal |   bwd ms  fwd+bwd |  flash bwd | cuDNN bwd  ratio | cuDNN f+b  ratio | bwd, f+b >= {BWD_TARGET}x")
    for causal in (False, True):
        for d in (64, 128):
            for n in (4096, 16384):
                k = (n, d, causal)
                b = bwd.get(k)
                fl = sb.get(("flash", n, d, causal))
                cu = sb.get(("cudnn", n, d, causal))
                target = ""
                if cu and b:
                    target = " | " + tally("bwd", cu[0] / b[0], BWD_TARGET) + ", " + tally("fb", cu[1] / b[1], BWD_TARGET)
                print(f"{n:6d} {d:4d} {'yes' if causal else 'no ':6s} | "
                      + (f"{b[0]:8.3f} {b[1]:8.3f}" if b else f"{'-':>17s}") + " | "
                      + (f"{fl[0]:10.3f}" if fl else f"{'-':>10s}") + " | "
                      + (f"{cu[0]:9.3f} {cu[0] / b[0]:5.3f}x | {cu[1]:9.3f} {cu[1] / b[1]:5.3f}x" if cu and b else "-")
                      + target)
    print(f"targets against cuDNN (stated for the H200; measured on {card(f'{out}/fwd_new.txt')}): "
          f"non-causal forward >= {FWD_TARGET}x met at {count['fwd'][0]} of {count['fwd'][1]} points; "
          f"backward >= {BWD_TARGET}x at {count['bwd'][0]} of {count['bwd'][1]}; "
          f"forward + backward >= {BWD_TARGET}x at {count['fb'][0]} of {count['fb'][1]}")
    path = f"{out}/decode_new.txt"
    if os.path.exists(path):
        print("decode, bf16, Nq = 1 (bench-gpu --decode, its last columns: PyTorch's fastest backend, same method)")
        for line in open(path, errors="replace"):
            if re.match(r"\s*\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s*\|", line) or line.lstrip().startswith("Nk"):
                print(line.rstrip())


if __name__ == "__main__":
    main()
