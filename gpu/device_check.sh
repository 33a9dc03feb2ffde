#!/usr/bin/env bash
# One short device call after a refactor: the [gpu] and [tc] tests, memcheck and racecheck on
# the small golden cases, the backward benchmark, the tensor-core ladder's default variants, and
# the DRAM measurement (gpu/ncu_dram.sh). Run from the repo root on the GPU machine with the
# binaries carried in build-gpu/ (built on the CPU machine). Logs under $OUT; a summary last.
set -u
OUT=${OUT:-/tmp/flashstep-device}
mkdir -p "$OUT"
source "$(dirname "$0")/device_steps.sh"
B=${B:-build-gpu}
export FLASHSTEP_GOLDEN_DIR=$PWD/tests/golden
lib=$(find /usr/local /opt /usr/lib -name 'libcublasLt.so.13*' 2>/dev/null | head -1)
[ -n "$lib" ] && export LD_LIBRARY_PATH=$(dirname "$lib"):${LD_LIBRARY_PATH:-}
note "device: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1)"
t0=$(date +%s)
$B/tests/gpu/flashstep_gpu_tests "[gpu]" > "$OUT/gpu_tests.log" 2>&1
rc=$?
note "tests [gpu]: rc=$rc $(grep -E '^(All tests passed|test cases:)' "$OUT/gpu_tests.log" | tail -1) ($(( $(date +%s) - t0 )) s)"
expect 0 "$rc"
$B/tests/gpu/flashstep_tc_tests "[tc]" > "$OUT/tc_tests.log" 2>&1
rc=$?
note "tests [tc]: rc=$rc $(grep -E '^(All tests passed|test cases:)' "$OUT/tc_tests.log" | tail -1) ($(( $(date +%s) - t0 )) s)"
expect 0 "$rc"
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $B/tests/gpu/flashstep_gpu_tests "[golden]" \
    > "$OUT/${tool}.log" 2>&1
  rc=$?
  note "$tool [golden]: rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/${tool}.log" | tail -1) ($(( $(date +%s) - t0 )) s)"
  expect 0 "$rc"
done
$B/tests/gpu/flashstep_gpu_tests "[.backward_bench]" -s > "$OUT/backward_bench.log" 2>&1
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
  timeout 200 gpu/ncu_dram.sh "$OUT/dram.json" \
  > "$OUT/dram.txt" 2>&1
rc=$?
note "ncu dram: rc=$rc ($(( $(date +%s) - t0 )) s)"
expect 0 "$rc"
cat "$OUT/dram.txt" | tail -12 | tee -a "$S"
print_summary
