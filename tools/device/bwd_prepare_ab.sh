#!/usr/bin/env bash
# Two default builds' tensor-core backward side by side in one device call, for a change outside
# the main kernel's loop (written for the pre-kernel that zeroes dQ's accumulator, then used for dQ's
# conversion as the main kernel's dependent launch; ladder notes "Backward: dQ's accumulator zeroed
# by the pre-kernel" and "Backward: dQ's conversion under the main kernel's last blocks"): NEW's
# checks ([tc_backward] tests; the four compute-sanitizer tools on one causal fp16 shape, memcheck on
# a d = 64 one, and the four on 48 heads x 8 K/V blocks, more blocks than SMs; the 52 odd-shape
# verifies when NEW is build-carry/bin), then bench-gpu --backward --tensor-cores of OLD, NEW,
# PyTorch's cuDNN backward, NEW, OLD (bf16, B = 16, H = 16, 3 calls back to back on both sides),
# the second round as time allows, and NEW once more with NEW_ENV set (VAR=VALUE: an environment
# variable that switches the change off, where it has one) if given and time allows; the table
# (each build's TFLOP/s, NEW / OLD, each / cuDNN) last.
# Usage (repository root, on the GPU machine): bash tools/device/bwd_prepare_ab.sh OLD NEW OUT
# (OLD and NEW: folders holding flashstep and flashstep_tc_tests; about 6-8 minutes.)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ $# -eq 3 ] || { echo "usage: bash tools/device/bwd_prepare_ab.sh OLD NEW OUT"; exit 2; }
OLD=$1 NEW=$2 OUT=$3
mkdir -p "$OUT"
dev_libs build-carry/lib
export FLASHSTEP_REQUIRE_GPU=1
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
catch2 "$OUT/tests_bwd.log" timeout 120 "$NEW/flashstep_tc_tests" "[tc_backward]"
echo "tests [tc_backward] rc=$? $(tail -2 "$OUT/tests_bwd.log" | head -1)"
A="--nq 333 --nk 200 --d 128 --causal --dtype fp16"
for run in memcheck racecheck synccheck initcheck memcheck64; do
  a=$A tool=$run
  [ $run = memcheck64 ] && { tool=memcheck; a="--nq 700 --nk 333 --d 64 --causal --dtype bf16"; }
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 "$NEW/flashstep" gpu --schedule fa2 --backward \
    --tensor-cores $a > "$OUT/sanitizer_$run.log" 2>&1
  echo "$tool [$a] rc=$? $(sanitized "$OUT/sanitizer_$run.log")"
done
# 48 heads (B x H = 3 x 16) of 64 queries and 1000 keys, causal, batch entry 1 keeping no key and
# entry 2 300: 384 blocks, so that some start only after others have finished.
sanitize_many "$OUT/sanitizer_many" 128 "$NEW/flashstep" gpu --schedule fa2 --backward --tensor-cores --dtype bf16
for tool in memcheck racecheck synccheck initcheck; do
  echo "$tool [48 heads x 8 K/V blocks] $(tail -1 "$OUT/sanitizer_many_$tool.txt") $(sanitized "$OUT/sanitizer_many_$tool.txt")"
done
[ "$NEW" = build-carry/bin ] && timeout 90 bash tools/device/bwd_odd_shapes.sh 2>&1 | tail -3
echo "checks done at $(($(date +%s) - T0)) s"
bench() {
  local c
  for c in "" "--causal"; do
    timeout 60 "$1/flashstep" bench-gpu --backward --tensor-cores --dtype bf16 --n 4096 --d 64 128 --no-fp32 --back-to-back 3 $c
    timeout 60 "$1/flashstep" bench-gpu --backward --tensor-cores --dtype bf16 --n 16384 --d 128 --no-fp32 --back-to-back 3 $c
  done
}
bench "$OLD" > "$OUT/bench_base1.txt" 2>&1; echo "old, round 1: $(($(date +%s) - T0)) s"
bench "$NEW" > "$OUT/bench_new1.txt" 2>&1; echo "new, round 1: $(($(date +%s) - T0)) s"
{ timeout 150 python3 gpu/tools/sdpa_bwd_bench.py --dtype bf16 --backends cudnn --ns 4096 --ds 64,128 --causal both --back-to-back 3
  timeout 120 python3 gpu/tools/sdpa_bwd_bench.py --dtype bf16 --backends cudnn --ns 16384 --ds 128 --causal both --back-to-back 3
} > "$OUT/sdpa.txt" 2>&1; echo "cuDNN: $(($(date +%s) - T0)) s"
if [ $(($(date +%s) - T0)) -lt 330 ]; then
  bench "$NEW" > "$OUT/bench_new2.txt" 2>&1; echo "new, round 2: $(($(date +%s) - T0)) s"
  bench "$OLD" > "$OUT/bench_base2.txt" 2>&1; echo "old, round 2: $(($(date +%s) - T0)) s"
fi
if [ -n "${NEW_ENV:-}" ] && [ $(($(date +%s) - T0)) -lt 420 ]; then
  (export $NEW_ENV; bench "$NEW") > "$OUT/bench_newenv.txt" 2>&1
  echo "new with $NEW_ENV: $(($(date +%s) - T0)) s"
fi
PYTHONPATH=tools/device python3 tools/device/bwd_ab_table.py "$OUT" | tee "$OUT/table.txt"
echo "total $(($(date +%s) - T0)) s"
