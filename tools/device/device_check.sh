#!/usr/bin/env bash
# One short device call after a refactor: the [gpu] and [tc] tests, memcheck and racecheck on
# the small golden cases, the backward benchmark, the tensor-core ladder's default variants, and
# the DRAM measurement (tools/device/ncu_dram.sh). Run from the repo root on the GPU machine with the
# binaries carried in build-gpu/ (built on the CPU machine). Logs under $OUT; a summary last.
set -u
OUT=${OUT:-/tmp/flashstep-device}
mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
S=$OUT/summary.txt
: > "$S"
B=${B:-build-gpu}
dev_libs
note "device: $(dev_gpu_env)"
t0=$(date +%s)
catch2 "$OUT/gpu_tests.log" $B/tests/gpu/flashstep_gpu_tests "[gpu]"
rc=$?
note "tests [gpu]: rc=$rc $(catch2_line "$OUT/gpu_tests.log") ($(( $(date +%s) - t0 )) s)"
expect 0 "$rc"
catch2 "$OUT/tc_tests.log" $B/tests/gpu/flashstep_tc_tests "[tc]"
rc=$?
note "tests [tc]: rc=$rc $(catch2_line "$OUT/tc_tests.log") ($(( $(date +%s) - t0 )) s)"
expect 0 "$rc"
for tool in memcheck racecheck; do
  catch2 "$OUT/${tool}.log" timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $B/tests/gpu/flashstep_gpu_tests "[golden]"
  rc=$?
  note "$tool [golden]: rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/${tool}.log" | tail -1) ($(( $(date +%s) - t0 )) s)"
  expect 0 "$rc"
done
$B/app/flashstep bench-gpu --backward --n 4096 --d 64 128 > "$OUT/backward_bench.log" 2>&1
rc=$?
note "backward bench: rc=$rc"
expect 0 "$rc"
grep -iE "tflop|ms" "$OUT/backward_bench.log" | grep -v "^  *$" | head -12 | tee -a "$S"
if [ -x $B/app/flashstep_tc_bench ]; then
  timeout 60 $B/app/flashstep_tc_bench --no-verify --ns 4096 --ds 64,128 > "$OUT/tc_bench.txt" 2>&1
  rc=$?
  note "tc bench: rc=$rc ($(( $(date +%s) - t0 )) s)"
  expect 0 "$rc"
  tail -12 "$OUT/tc_bench.txt" | tee -a "$S"
fi
SHAPES=${SHAPES:-"1024:64 4096:64 4096:128"} FA1_SAMPLE=0 BUDGET=150 MODEL_TIMEOUT=190 FLASHSTEP=$B/app/flashstep \
  timeout 200 tools/device/ncu_dram.sh "$OUT/dram.json" \
  > "$OUT/dram.txt" 2>&1
rc=$?
note "ncu dram: rc=$rc ($(( $(date +%s) - t0 )) s)"
expect 0 "$rc"
cat "$OUT/dram.txt" | tail -12 | tee -a "$S"
print_summary
