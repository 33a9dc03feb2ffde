#!/usr/bin/env bash
# The forward default at 32 and at 256 heads beside cuDNN's, and where their bytes come from, in
# one device call of about 3 minutes:
#   1. bench-gpu --tensor-cores --no-standard, bf16, d = 64 and 128, N = 4096 at B x H x N = 131072
#      (32 heads, the forward's own points) and 1048576 (256 heads, the backward benchmark's count),
#      and d = 128, N = 16384 at 131072 (8 heads) and 4194304 (256 heads); causal and not; 10 calls
#      back to back; cuDNN's forward (gpu/tools/sdpa_bench.py) on the same shapes, timed the same way;
#   2. Nsight Compute, one launch each (--clock-control none), d = 128, N = 4096, non-causal, 32 and
#      256 heads, flashstep's forward and cuDNN's: its time, the DRAM bytes read and written, and
#      the L2's hit rate, so that a kernel that reads K and V from DRAM more than once shows.
# Usage, from the repository root on the GPU machine: bash tools/device/fwd_heads.sh BIN OUT
# (BIN holds flashstep). Outputs: $OUT/bench.txt, $OUT/sdpa.txt, $OUT/ncu_*.csv, and the summary
# table last in $OUT/summary.txt.
set -u
source tools/device/lib.sh
dev_setup "$0" "$@"
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct

: > "$OUT/bench.txt"
: > "$OUT/sdpa.txt"
for c in "" "--causal"; do
  for pt in "4096 64,128 131072" "4096 64,128 1048576" "16384 128 131072" "16384 128 4194304"; do
    set -- $pt
    timeout 60 "$FS" bench-gpu --tensor-cores --dtype bf16 --no-standard --no-sweep --n "$1" --d ${2//,/ } --rows "$3" \
      --back-to-back 10 $c >> "$OUT/bench.txt" 2>&1
    say "bench-gpu N $1 d $2 rows $3 ${c:-non-causal}: rc=$?"
    timeout 90 python3 gpu/tools/sdpa_bench.py --backend cudnn --ns "$1" --ds "$2" --rows "$3" --back-to-back 10 $c \
      >> "$OUT/sdpa.txt" 2>&1
    say "cuDNN N $1 d $2 rows $3 ${c:-non-causal}: rc=$?"
  done
done

for rows in 131072 1048576; do
  timeout 120 ncu --clock-control none -k regex:fa3_kernel --launch-skip 3 --launch-count 1 --csv --metrics "$METRICS" \
    "$FS" bench-gpu --tensor-cores --dtype bf16 --no-standard --no-sweep --n 4096 --d 128 --rows $rows --reps 20 \
    --warmup 1 --back-to-back 1 > "$OUT/ncu_flashstep_$rows.csv" 2> "$OUT/ncu_flashstep_$rows.err"
  say "ncu flashstep rows $rows: rc=$?"
  timeout 120 ncu --clock-control none -k regex:'sdpa|fprop|fmha|attn' --launch-skip 3 --launch-count 1 --csv \
    --metrics "$METRICS" python3 gpu/tools/cudnn_fwd_launch.py $rows 4096 128 > "$OUT/ncu_cudnn_$rows.csv" 2> "$OUT/ncu_cudnn_$rows.err"
  say "ncu cuDNN rows $rows: rc=$?"
done

{
  echo "forward, bf16, 10 calls back to back on both sides: flashstep (bench-gpu) and cuDNN (sdpa_bench.py)"
  grep -E '^ +[0-9]+ +(64|128) ' "$OUT/bench.txt" | awk '{printf "flashstep N %s d %s B %s H %s: %s ms %s TFLOP/s\n", $1, $2, $3, $4, $9, $10}'
  grep '^sdpa' "$OUT/sdpa.txt"
  python3 - "$OUT" <<'PY'
import glob, os, sys
import ncu_csv
out = sys.argv[1]
print("Nsight Compute, d = 128, N = 4096, non-causal, one launch (K+V of all heads: 2 MiB a head)")
for path in sorted(glob.glob(os.path.join(out, "ncu_*.csv"))):
    try:
        name, vals = ncu_csv.read(path)
    except Exception as e:
        print(f"{os.path.basename(path)}: no metrics ({e})")
        continue
    print(f"{os.path.basename(path)}: {name[:60]}: " + "; ".join(f"{k} {v[0]} {v[1]}" for k, v in sorted(vals.items())))
PY
  printf '%s\n' "${S[@]}"
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
