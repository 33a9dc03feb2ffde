#!/usr/bin/env bash
# Every speed target of the GPU issues measured in one device call on an H200 (about 8-9 minutes),
# from a default build's binaries, both sides timed back to back:
#   1. bench_assets.sh: the forward (10 calls back to back) and forward + backward (2) at the points
#      of assets/bench/h200.json (then, on any machine, with OUT/raw.tar.gz extracted in OUT:
#      python3 tools/device/bench_assets.py OUT/raw/bench/assets rewrites its tensor-core runs);
#   2. PyTorch's cuDNN forward (10 back to back) and backward (2) at the same points, and
#      defaults_table.py's table: each target against cuDNN met or not;
#   3. the FP8 forward beside the bf16 default (bench-gpu --tensor-cores --dtype fp8, 8 points);
#   4. fp8_decode_paged.sh with RUNS="p0 p16a3 p128": the FP8 cache's decode unpaged and paged beside
#      PyTorch's bf16, with its verifies, [fp8] tests and sanitizers;
#   5. a second forward round, cuDNN first, if time allows.
# Usage (repository root, on the GPU machine): bash tools/device/targets_h200.sh BIN OUT
# BIN holds flashstep, flashstep_gpu_tests, flashstep_tc_tests (and lib/ with libstb.so.0 where
# the machine lacks it). On another card it stops at once unless ANY_CARD=1 (the targets are the
# H200's). OUT keeps the summaries; the raw logs go into OUT/raw.tar.gz (a call returns 8 files).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_args "$0" "${1:-}" "${2:-}"
[ -d "$BIN/lib" ] && dev_libs "$BIN/lib" || dev_libs
export FLASHSTEP_REQUIRE_GPU=1 FLASHSTEP_GOLDEN_DIR=$PWD/tests/golden PYTHONPATH=$PWD/tools/device:$PWD/gpu/tools
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
case "$(cat "$OUT/gpu.txt")" in *H200*) ;; *) [ "${ANY_CARD:-0}" = 1 ] || { echo "not an H200: nothing run"; exit 3; } ;; esac
at() { echo "$1 rc=$2 at $(($(date +%s) - T0)) s" | tee -a "$OUT/gpu.txt"; }
R=$OUT/raw W=$OUT/raw/bench F=$OUT/raw/fp8f
mkdir -p "$W" "$F"
timeout 220 bash tools/device/bench_assets.sh "$BIN" "$W/assets" > "$W/assets_log.txt" 2>&1; at "bench_assets" $?
cat "$W/assets/fwd.txt" "$W/assets/fwd_causal.txt" > "$W/fwd_new.txt" 2>/dev/null
cat "$W/assets/bwd.txt" "$W/assets/bwd_causal.txt" > "$W/bwd_new.txt" 2>/dev/null
fwd_bench_cudnn "$W/fwd_sdpa.txt" 45; at "forward, cuDNN" $?
timeout 150 python3 gpu/tools/sdpa_bwd_bench.py --backends cudnn --ns 4096,16384 --ds 64,128 --causal both --back-to-back 2 \
  > "$W/bwd_sdpa.txt" 2>&1; at "backward, cuDNN" $?
python3 tools/device/defaults_table.py "$W" > "$OUT/bench_summary.txt" 2>&1
for c in "" "--causal"; do
  timeout 50 "$BIN/flashstep" bench-gpu --tensor-cores --dtype fp8 --no-sweep --n 4096 16384 --d 64 128 $c >> "$F/bench8.txt" 2>&1
done; at "fp8 forward" $?
cp "$F/bench8.txt" "$OUT/fp8_forward.txt"
RUNS="p0 p16a3 p128" BUDGET=130 timeout 150 bash tools/device/fp8_decode_paged.sh "$BIN" "$R/fp8d" > "$R/fp8d_log.txt" 2>&1
at "fp8 paged decode" $?
cp "$R/fp8d/table.txt" "$OUT/fp8_decode_table.txt" 2>/dev/null
if [ $(($(date +%s) - T0)) -lt 470 ]; then
  W2=$R/bench2; mkdir -p "$W2"
  fwd_bench_cudnn "$W2/fwd_sdpa.txt" 45; fwd_bench "$BIN/flashstep" "$W2/fwd_new.txt" 45; at "forward, round 2" $?
  python3 tools/device/defaults_table.py "$W2" > "$OUT/bench2_summary.txt" 2>&1
fi
echo "done at $(($(date +%s) - T0)) s" | tee -a "$OUT/gpu.txt"
tar -C "$OUT" -czf "$OUT/raw.tar.gz" raw && rm -rf "$R"
head -12 "$OUT/bench2_summary.txt" 2>/dev/null
grep -v '^$' "$OUT/fp8_forward.txt" | tail -14
tail -25 "$OUT/fp8_decode_table.txt" 2>/dev/null
cat "$OUT/bench_summary.txt"
