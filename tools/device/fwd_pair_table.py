"""The summary table of tools/device/fwd_pair.sh: per point, the median time per call of each
variant (bench-gpu; the first is the baseline) and of cuDNN (gpu/tools/sdpa_bench.py) over the
rounds, and the speed ratios (the other side's time / this one's; above 1: this one is faster);
then the clock and power of the 300-call runs.
Usage: python3 fwd_pair_table.py OUT ROUNDS BASELINE VARIANT..."""
import os
import re
import statistics
import sys

out, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
base = variants[0]
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+\s+\d+\s+(\d+)\s*\|\s*([\d.]+)\s+([\d.]+)")
CUDNN = re.compile(r"d=(\d+)\s+N=(\d+)\s+causal=(\w+)\s+([\d.]+) ms")


def read(path, pattern):
    if not os.path.exists(path):
        return []
    return [m for m in map(pattern.search, open(path, errors="replace")) if m]


times = {}  # (side, N, d, heads) -> [ms per round]
for r in range(1, rounds + 1):
    for tag, heads in (("", None), ("_h256", 256)):
        for v in variants:
            for m in read(f"{out}/b{v}{tag}_{r}.txt", ROW):
                n, d, b, h = (int(m[i]) for i in range(1, 5))
                times.setdefault((v, n, d, b * h), []).append(float(m[6]))
        for m in read(f"{out}/cudnn{tag}_{r}.txt", CUDNN):
            if m[3] == "False":
                n, d = int(m[2]), int(m[1])
                bh = heads or 131072 // n
                times.setdefault(("cudnn", n, d, bh), []).append(float(m[4]))

print(f"forward, bf16, non-causal, median ms per call over {rounds} rounds (10 calls back to back per sample)")
print("    N    d  B x H | " + " ".join(f"{'v' + v + ' ms':>8}" for v in variants) + "  cuDNN ms | " +
      " | ".join(f"v{v} vs v{base}, vs cuDNN" for v in variants[1:]) + f" | v{base} vs cuDNN")
for n, d, bh in sorted({k[1:] for k in times}):
    med = {v: statistics.median(times[(v, n, d, bh)]) if times.get((v, n, d, bh)) else None for v in variants + ["cudnn"]}

    def fmt(x):
        return f"{x:8.3f}" if x else "       -"

    def ratio(a, b):  # b's time over a's: above 1, a is faster
        return f"{med[b] / med[a]:.3f}x" if med[a] and med[b] else "-"

    cells = [f"{ratio(v, base):>7} {ratio(v, 'cudnn'):>7}" for v in variants[1:]]
    print(f"{n:5d} {d:4d} {bh:6d} | " + " ".join(fmt(med[v]) for v in variants) + f"  {fmt(med['cudnn'])} | " +
          " | ".join(cells) + f" | {ratio(base, 'cudnn')}")

print("clock and power, d = 128, N = 4096, 32 heads, 300 calls back to back (samples above 200 W)")
print("run       |  ms per call | SM MHz | W | samples")
for tag in [f"pw_v{v}" for v in variants] + ["pw_cudnn"]:
    smi = f"{out}/{tag}.smi"
    if not os.path.exists(smi):
        print(f"{tag}: no samples")
        continue
    rows = []
    for line in open(smi):
        p = [x.strip() for x in line.split(",")]
        try:
            rows.append((float(p[0]), float(p[1])))
        except (ValueError, IndexError):
            pass
    busy = [x for x in rows if x[1] > 200]
    txt = open(f"{out}/{tag}.txt", errors="replace").read()
    ms = [m[6] for m in map(ROW.search, txt.splitlines()) if m] or re.findall(r"([0-9.]+) ms", txt)
    clock = statistics.median(x[0] for x in busy) if busy else float("nan")
    watts = statistics.median(x[1] for x in busy) if busy else float("nan")
    print(f"{tag:9s} | {ms[-1] if ms else '-':>12} | {clock:6.0f} | {watts:3.0f} | {len(busy)}")
