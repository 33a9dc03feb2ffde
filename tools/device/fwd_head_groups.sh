#!/usr/bin/env bash
# One device call for the forward's rungs 44 and 45 (the defaults with the causal tiles longest
# first within groups of heads; 45 with each group's rounds dealt alternately, gpu/tile_order.h)
# from a ladder build:
#   1. the [tc] tests of 45 (four processes) and [tc][order]: O and lse of 44 and 45 against the
#      default's bit for bit on causal shapes of 10 heads where the groups apply (the same tiles
#      with the same arithmetic, only their order differs);
#   2. alone on the GPU, causal only (the order of non-causal tiles is the defaults'): bench-gpu
#      --tensor-cores --no-standard for 0, 44 and 45 at the forward's benchmark points (B x H x N =
#      131072, H = 8) and at 256 heads (the backward's B = 16, H = 16 shapes), and PyTorch's cuDNN
#      forward at the same points in the same call.
# Usage (repository root): bash tools/device/fwd_head_groups.sh BIN OUT   (VARIANTS="0 44 45")
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
VARIANTS=${VARIANTS:-0 44 45}
start_rung_tests 150 45
catch2 "$OUT/tc_order.log" timeout 150 "$BIN/flashstep_tc_tests" -d yes "[tc][order]" &
wait_jobs > /dev/null
for f in "$OUT"/tc_v45_*.log "$OUT/tc_order.log"; do say "$(basename "$f"): $(catch2_line "$f")"; done
B="$FS bench-gpu --tensor-cores --dtype bf16 --no-sweep --no-standard --causal"
for v in $VARIANTS; do
  timeout 120 $B --variant $v --n 4096 16384 --d 64 128 > "$OUT/bench_v${v}_h8.txt" 2>&1; say "bench v$v H = 8: rc=$?"
  timeout 120 $B --variant $v --n 4096 --rows 1048576 --d 64 128 > "$OUT/bench_v${v}_256_4096.txt" 2>&1; say "bench v$v 256 heads, 4096: rc=$?"
  timeout 120 $B --variant $v --n 16384 --rows 4194304 --d 64 128 > "$OUT/bench_v${v}_256_16384.txt" 2>&1; say "bench v$v 256 heads, 16384: rc=$?"
done
timeout 120 python3 gpu/tools/sdpa_bench.py --backend cudnn --causal --ns 4096,16384 >> "$OUT/sdpa.txt" 2>&1
timeout 120 python3 gpu/tools/sdpa_bench.py --backend cudnn --causal --ns 4096 --rows 1048576 >> "$OUT/sdpa.txt" 2>&1
timeout 120 python3 gpu/tools/sdpa_bench.py --backend cudnn --causal --ns 16384 --rows 4194304 >> "$OUT/sdpa.txt" 2>&1
say "total $(($(date +%s) - T0)) s"
echo "==== summary"; cat "$OUT/summary.txt"
for f in "$OUT"/bench_v*.txt; do echo "== $(basename "$f")"; grep -E "^ +[0-9]+ +(64|128) " "$f"; done
grep "sdpa cudnn" "$OUT/sdpa.txt"
