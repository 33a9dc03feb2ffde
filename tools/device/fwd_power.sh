#!/usr/bin/env bash
# The SM clock and the board's power while the forward default and cuDNN's forward run back to
# back, to tell a kernel that is slower per clock from one that runs at a lower clock under the
# power limit. For each kernel, nvidia-smi samples clocks.sm, power.draw and the temperature every
# 50 ms (in the background) while bench-gpu or gpu/tools/sdpa_bench.py times it (10 calls back to
# back, bf16, non-causal); the summary gives each run's time and the median clock and power of
# its samples above 200 W (the GPU at work). Points: d = 128, N = 4096 at 32 and 256 heads, and
# d = 128, N = 16384 at 8 heads, with cuDNN after flashstep at each (then flashstep again at the
# first point, to see the order's effect). B2B sets the calls back to back per timed sample (default
# 10; a few hundred give the sampler a run long enough at N = 4096); POINTS="N:ROWS ..." the points.
# BACKWARD=1 times the backward instead (bench-gpu --backward beside sdpa_bwd_bench.py's cuDNN).
# Usage, from the repository root on the GPU machine: bash tools/device/fwd_power.sh BIN OUT
set -u
source tools/device/lib.sh
dev_setup "$0" "$@"
sample() {  # sample TAG CMD...: the command's output in $OUT/TAG.txt, the samples in $OUT/TAG.smi
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader,nounits -lms 50 > "$OUT/$1.smi" &
  local smi=$!
  local tag=$1; shift
  timeout 120 "$@" > "$OUT/$tag.txt" 2>&1
  local rc=$?
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  say "$tag: rc=$rc"
  sleep 2
}
B2B=${B2B:-10}
if [ "${BACKWARD:-0}" = 1 ]; then
  # The backward instead (B = 16, H = 16, non-causal, d = 128; N from POINTS' first fields): the
  # time per call is bench-gpu's "bwd ms" and sdpa_bwd_bench.py's bwd column, in the .txt files.
  for pt in ${POINTS:-4096}; do
    n=${pt%%:*}
    sample "fs_bwd_n$n" "$FS" bench-gpu --backward --tensor-cores --dtype bf16 --no-fp32 --n "$n" --d 128 --back-to-back $B2B
    sample "cudnn_bwd_n$n" python3 gpu/tools/sdpa_bwd_bench.py --backends cudnn --ns "$n" --ds 128 --causal no --back-to-back $B2B
    sample "fs_bwd_again_n$n" "$FS" bench-gpu --backward --tensor-cores --dtype bf16 --no-fp32 --n "$n" --d 128 --back-to-back $B2B
  done
  POINTS=none
fi
for pt in ${POINTS:-4096:131072 4096:1048576 16384:131072}; do
  [ "$pt" = none ] && continue
  set -- ${pt%%:*} ${pt##*:}
  sample "fs_n$1_r$2" "$FS" bench-gpu --tensor-cores --dtype bf16 --no-standard --no-sweep --n "$1" --d 128 --rows "$2" --back-to-back $B2B
  sample "cudnn_n$1_r$2" python3 gpu/tools/sdpa_bench.py --backend cudnn --ns "$1" --ds 128 --rows "$2" --back-to-back $B2B
done
pt=${POINTS:-4096:131072}; pt=${pt%% *}
[ "$pt" != none ] && sample "fs_again_n${pt%%:*}_r${pt##*:}" "$FS" bench-gpu --tensor-cores --dtype bf16 --no-standard --no-sweep --n ${pt%%:*} --d 128 \
  --rows ${pt##*:} --back-to-back $B2B
python3 - "$OUT" <<'PY' | tee -a "$OUT/summary.txt"
import glob, os, re, statistics, sys
out = sys.argv[1]
print("run                       |  time ms | SM MHz (median of samples > 200 W) | W (median) | samples | max temp C")
for smi in sorted(glob.glob(os.path.join(out, "*.smi")), key=os.path.getmtime):
    tag = os.path.basename(smi)[:-4]
    txt = open(os.path.join(out, tag + ".txt")).read()
    m = re.findall(r"\|\s+([0-9.]+)\s+[0-9.]+\s+[0-9]+\s+[0-9]+\s+[0-9.]+\s+\|", txt) or re.findall(r"([0-9.]+) ms", txt)
    ms = m[-1] if m else "-"
    rows = []
    for line in open(smi):
        p = [x.strip() for x in line.split(",")]
        try:
            rows.append((float(p[0]), float(p[1]), float(p[2])))
        except (ValueError, IndexError):
            pass
    busy = [r for r in rows if r[1] > 200]
    if busy:
        print(f"{tag:25s} | {ms:>8s} | {statistics.median(r[0] for r in busy):8.0f} | {statistics.median(r[1] for r in busy):8.1f} | {len(busy):5d} | {max(r[2] for r in rows):4.0f}")
    else:
        print(f"{tag:25s} | {ms:>8s} | no samples above 200 W ({len(rows)} in all)")
PY
