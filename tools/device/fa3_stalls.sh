#!/usr/bin/env bash
# Where the Hopper forward's warps wait, per SASS instruction: Nsight Compute's warp-state
# sampling (section SourceCounters) on one launch of each rung in RUNGS ("V:D" pairs, bf16,
# N = 4096, B x H = 32, non-causal), exported as the source page (SASS, one row per instruction)
# and summed by opcode and by stall reason. Also, to check the read roof after its kernel moved
# to gpu/read_streams.cu: `bench-gpu --decode --read-streams` (the roof is its first shape).
# Run from the repository root on the GPU machine:
#   RUNGS="21:64 22:128" bash tools/device/fa3_stalls.sh BIN OUT
# FP8=1: the FP8 forward's kernel instead (gpu/fp8_kernel.cuh; RUNGS "V:D" of its variants, 0 the
# default), on bench-gpu --tensor-cores --dtype fp8 at N = 16384, B x H = 8, non-causal.
# OUT/summary.txt: per rung the top instructions by samples with their main reasons, the samples
# by opcode, and the read-stream table; OUT/stalls_vV_dD.csv.xz: the whole source page.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
RUNGS=${RUNGS:-21:64 22:128}
S=()
for vd in $RUNGS; do
  v=${vd%%:*}
  d=${vd##*:}
  rep="$OUT/rep_v${v}_d$d"
  if [ "${FP8:-0}" = 1 ]; then
    timeout 90 ncu --clock-control none -k regex:fp8_kernel --launch-skip 2 --launch-count 1 \
      --section SourceCounters --section WarpStateStats -f -o "$rep" \
      "$FS" bench-gpu --tensor-cores --dtype fp8 --variant "$v" --no-sweep --n 16384 --d "$d" --reps 20 --warmup 1 \
      --back-to-back 1 > "$OUT/ncu_v${v}_d$d.log" 2>&1
  else
    timeout 90 ncu --clock-control none -k regex:fa3_kernel --launch-skip 2 --launch-count 1 \
      --section SourceCounters --section WarpStateStats -f -o "$rep" \
      "$BIN/flashstep_tc_bench" --no-verify --no-standard --variants "$v" --ds "$d" --ns 4096 --dtypes bf16 \
      --causal off --reps 1 --warmup 2 > "$OUT/ncu_v${v}_d$d.log" 2>&1
  fi
  S+=("ncu v$v d $d: rc=$?")
  timeout 60 ncu -i "$rep.ncu-rep" --page source --print-source sass --csv > "$OUT/stalls_v${v}_d$d.csv" 2> "$OUT/export_v${v}_d$d.log"
  S+=("export v$v d $d: rc=$? ($(wc -l < "$OUT/stalls_v${v}_d$d.csv") lines)")
done
timeout 30 "$BIN/flashstep" bench-gpu --decode --read-streams --reps 30 > "$OUT/streams.txt" 2>&1
S+=("read streams: rc=$?")
S+=("total $(($(date +%s) - T0)) s")
{
  printf '%s\n' "${S[@]}"
  for vd in $RUNGS; do
    v=${vd%%:*}
    d=${vd##*:}
    echo "== v$v d = $d"
    [ -s "$OUT/stalls_v${v}_d$d.csv" ] || { tail -5 "$OUT/ncu_v${v}_d$d.log"; tail -5 "$OUT/export_v${v}_d$d.log"; }
    python3 - "$OUT/stalls_v${v}_d$d.csv" <<'PY'
import csv, re, sys
from collections import defaultdict
try:
    rows = list(csv.reader(open(sys.argv[1], newline="")))
except OSError as e:
    print("no source page:", e); sys.exit(0)
# The header is the first row that names the SASS column; rows before it are banners.
hi = next((i for i, r in enumerate(rows) if any(c.strip() in ("Source", "SASS") for c in r)), None)
if hi is None:
    print("no header; first lines:"); [print("  ", ",".join(r)[:200]) for r in rows[:5]]; sys.exit(0)
head = [c.strip() for c in rows[hi]]
src = head.index("Source") if "Source" in head else head.index("SASS")
def num(x):
    try: return float(x.replace(",", ""))
    except ValueError: return 0.0
allc = next((i for i, c in enumerate(head) if "All Samples" in c or c.endswith("samples")), None)
reasons = [(i, c) for i, c in enumerate(head) if re.search(r"stall|Stall", c) and i != allc and "Samples" not in c]
print("columns:", "; ".join(head)[:600])
body = [r for r in rows[hi + 1:] if len(r) == len(head)]
if allc is None:
    print("no samples column"); sys.exit(0)
total = sum(num(r[allc]) for r in body) or 1.0
print(f"instructions {len(body)}, samples {total:.0f}")
by_op = defaultdict(float)
for r in body:
    op = r[src].strip().split()
    op = [t for t in op if not t.startswith("@")]
    by_op[op[0].split(".")[0] if op else "?"] += num(r[allc])
print("samples by opcode: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in sorted(by_op.items(), key=lambda kv: -kv[1])[:14]))
if reasons:
    tot_r = {c: sum(num(r[i]) for r in body) for i, c in reasons}
    print("samples by reason: " + ", ".join(f"{c} {100 * v / total:.1f}%" for c, v in sorted(tot_r.items(), key=lambda kv: -kv[1])[:8]))
print("top instructions (share of samples, main reasons):")
for k, r in enumerate(sorted(body, key=lambda r: -num(r[allc]))[:30]):
    main = sorted(((num(r[i]), c) for i, c in reasons), reverse=True)[:2]
    why = ", ".join(f"{c.replace('smsp__pcsamp_warps_issue_stalled_', '')} {v:.0f}" for v, c in main if v > 0)
    addr = r[0].strip()
    print(f"  {100 * num(r[allc]) / total:5.2f}%  {addr:>6}  {r[src].strip()[:70]:<70}  {why}")
PY
    xz -T1 -6 -f "$OUT/stalls_v${v}_d$d.csv"
    rm -f "$OUT/rep_v${v}_d$d.ncu-rep"
  done
  echo "== read streams"
  grep -E "read roof|copy|KiB \| " "$OUT/streams.txt" | head -20
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
