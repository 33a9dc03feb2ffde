#!/usr/bin/env bash
# One device call: the [gpu] tests, compute-sanitizer memcheck and racecheck on the test
# binary, verify on several shapes, bench-gpu. Run from the repo root on the GPU machine with
# build-gpu carried (built on the CPU machine: static CUDA runtime, Catch2 v2 compiled in).
# Logs go to $OUT; a short summary prints last.
#   usage: gpu/run_on_device.sh [all|tests|verify|bench]   (default all)
set -u
OUT=${OUT:-/tmp/flashstep-device}
mkdir -p "$OUT"
WHAT=${1:-all}
B=build-gpu
export FLASHSTEP_GOLDEN_DIR=$PWD/tests/golden
T=$B/tests/gpu/flashstep_gpu_tests
F=$B/app/flashstep
S=$OUT/summary.txt
: > "$S"
note() { echo "$*" | tee -a "$S"; }

note "device: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,memory.total --format=csv,noheader 2>&1)"

if [[ $WHAT == all || $WHAT == tests ]]; then
  "$T" "[gpu]" > "$OUT/tests.log" 2>&1
  note "tests [gpu]: rc=$? $(grep -E '^(All tests passed|test cases:)' "$OUT/tests.log" | tail -1)"
  timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 "$T" "[gpu]" > "$OUT/memcheck.log" 2>&1
  note "memcheck [gpu]: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
  timeout 300 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 \
    "$T" "[gpu]" > "$OUT/racecheck.log" 2>&1
  note "racecheck [gpu]: rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck.log" | tail -1)"
fi

if [[ $WHAT == all || $WHAT == verify ]]; then
  : > "$OUT/verify.log"
  run_verify() {
    echo "\$ flashstep verify $*" >> "$OUT/verify.log"
    "$F" verify "$@" >> "$OUT/verify.log" 2>&1
    local rc=$?
    note "verify $*: rc=$rc $(grep -E 'worst over j' "$OUT/verify.log" | tail -1)"
    grep -E '^(final|           (GPU|CPU))' "$OUT/verify.log" | tail -5 >> "$S"
  }
  run_verify --n 1000 --d 64 --M 128KiB
  run_verify --nq 300 --nk 513 --d 128 --M 128KiB
  run_verify --n 100 --d 32
  run_verify --nq 77 --nk 130 --d 40 --M 2048 --variant 1
  run_verify --n 4096 --d 64 --M 128KiB
  for bad in "verify --n 64 --d 64 --br 64 --bc 1024 --M 200000" \
             "gpu --n 64 --d 64 --br 8 --bc 8 --M 4096 --variant 2"; do
    msg=$("$F" $bad 2>&1)
    note "bad input: flashstep $bad -> rc=$? $msg"
  done
  "$F" gpu --n 256 --d 64 --M 128KiB --out-o /tmp/o.npy --out-lse /tmp/lse.npy >> "$OUT/verify.log" 2>&1
  note "gpu --out-o: rc=$? $(ls -l /tmp/o.npy /tmp/lse.npy | awk '{print $5, $9}' | tr '\n' ' ')"
fi

if [[ $WHAT == all || $WHAT == bench ]]; then
  timeout ${BENCH_TIMEOUT:-300} "$F" bench-gpu --json-file "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
  note "bench-gpu: rc=$?"
  # Variant 1 (plain) at the target point, and the Bc sweep at d = 128, for NOTES.md.
  timeout 120 "$F" bench-gpu --variant 1 --n 4096 --no-sweep > "$OUT/bench_extra.txt" 2>&1
  note "bench-gpu --variant 1: rc=$?"
  timeout 120 "$F" bench-gpu --n 4096 --d 128 --no-standard --sweep-d 128 >> "$OUT/bench_extra.txt" 2>&1
  note "bench-gpu sweep d=128: rc=$?"
  cat "$OUT/bench.txt" "$OUT/bench_extra.txt"
fi
echo "==== summary"
cat "$S"
