#!/usr/bin/env bash
# Measured DRAM bytes against the simulator (issue 12; docs/l2-model.md, "Measured").
#
# For each schedule and shape: Nsight Compute's dram__bytes_read.sum / dram__bytes_write.sum and
# gpu__time_duration.sum, summed over the attention kernels of one `flashstep gpu` run on 4-D
# float32 inputs (B = 1, H heads) -- the fills and storage conversions are left out by name --
# next to what `flashstep run` predicts for the same problem: the paper's HBM bytes, and the
# DRAM bytes of the L2 model (--gpu h200 --heads H --ncu: the L2 emptied before each kernel, as
# ncu's default cache control does). ncu runs with --clock-control none (the clocks as found)
# and its default replay (kernel replay; caches flushed before each replayed kernel).
#   usage (on the GPU machine, from the repo root, build-gpu carried):
#     gpu/ncu_dram.sh [OUT_JSON]        default $OUT/dram.json
set -u
F=${FLASHSTEP:-build-gpu/app/flashstep}
OUT=${OUT:-/tmp/flashstep-device}
JSON=${1:-$OUT/dram.json}
WORK=$(mktemp -d)
H=${HEADS:-32}
M=${SRAM:-128KiB}
SHAPES=${SHAPES:-"1024:64 4096:64 1024:128 4096:128"}
mkdir -p "$OUT"
rows=()
for shape in $SHAPES; do
  n=${shape%%:*}; d=${shape##*:}
  python3 - "$WORK" "$n" "$d" "$H" <<'EOF'
import sys, numpy as np
work, n, d, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(n * 1000 + d)
for name in "qkv":  # fresh random inputs, never zeros
    np.save(f"{work}/{name}.npy", rng.standard_normal((1, h, n, d), dtype=np.float32))
EOF
  for s in standard fa1 fa2; do
    csv=$OUT/ncu_${s}_n${n}_d${d}.csv
    ncu --clock-control none --csv --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
      "$F" gpu --schedule "$s" --q "$WORK/q.npy" --k "$WORK/k.npy" --v "$WORK/v.npy" --M "$M" \
      > "$csv" 2> "$OUT/ncu_${s}_n${n}_d${d}.err"
    model=$("$F" run --schedule "$s" --n "$n" --d "$d" --M "$M" --gpu h200 --heads "$H" --ncu 2>&1)
    rows+=("$s $n $d $csv $(echo "$model" | base64 -w0)")
  done
done
python3 - "$JSON" "$H" "${rows[@]}" <<'EOF'
import sys, csv, json, re, base64
out, heads, rows = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
skip = re.compile(r"fill|storage|dropout_mask")  # not attention: input fills, conversions
def gb(text, key):
    m = re.search(key, text)
    return float(m.group(1)) * 1e9 if m else None
points = []
for row in rows:
    s, n, d, path, model = row.split(" ")
    model = base64.b64decode(model).decode()
    read = write = ns = 0.0
    kernels = 0
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]
    for r in csv.DictReader(lines):
        if skip.search(r["Kernel Name"]):
            continue
        v = float(r["Metric Value"].replace(",", ""))
        unit = r["Metric Unit"]
        scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1, "usecond": 1e3,
                 "msecond": 1e6, "second": 1e9}.get(unit, 1)
        if r["Metric Name"] == "dram__bytes_read.sum": read += v * scale; kernels += 1
        elif r["Metric Name"] == "dram__bytes_write.sum": write += v * scale
        elif r["Metric Name"] == "gpu__time_duration.sum": ns += v * scale
    points.append({
        "schedule": s, "n": int(n), "d": int(d), "heads": heads, "kernels": kernels,
        "measured": {"dram_read_bytes": read, "dram_write_bytes": write, "kernel_ms": ns / 1e6},
        "simulated": {
            "hbm_read_bytes": gb(model, r"heads\s+DRAM read [\d.e+-]+ GB, write [\d.e+-]+ GB; HBM read ([\d.e+-]+) GB"),
            "hbm_write_bytes": gb(model, r"HBM read [\d.e+-]+ GB, write ([\d.e+-]+) GB"),
            "l2_dram_read_bytes": gb(model, r"heads\s+DRAM read ([\d.e+-]+) GB"),
            "l2_dram_write_bytes": gb(model, r"heads\s+DRAM read [\d.e+-]+ GB, write ([\d.e+-]+) GB"),
            "ncu_dram_read_bytes": gb(model, r"as ncu\s+DRAM read ([\d.e+-]+) GB"),
            "ncu_dram_write_bytes": gb(model, r"as ncu\s+DRAM read [\d.e+-]+ GB, write ([\d.e+-]+) GB"),
        }})
json.dump({"gpu": "h200", "method": "ncu --clock-control none, dram__bytes_{read,write}.sum, "
           "attention kernels only", "points": points}, open(out, "w"), indent=1)
print(f"{'sched':9} {'N':>6} {'d':>4} {'kern':>4} | {'read meas':>10} {'model':>10} {'HBM':>10} | "
      f"{'write meas':>10} {'model':>10} {'HBM':>10} | ms")
for p in points:
    m, s = p["measured"], p["simulated"]
    f = lambda x: f"{x / 1e9:10.4f}" if x is not None else "         ?"
    print(f"{p['schedule']:9} {p['n']:6} {p['d']:4} {p['kernels']:4} | {f(m['dram_read_bytes'])} "
          f"{f(s['ncu_dram_read_bytes'])} {f(s['hbm_read_bytes'])} | {f(m['dram_write_bytes'])} "
          f"{f(s['ncu_dram_write_bytes'])} {f(s['hbm_write_bytes'])} | {m['kernel_ms']:.3f}")
EOF
rm -rf "$WORK"
