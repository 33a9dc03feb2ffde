#!/usr/bin/env bash
# One device call: the [gpu] tests, compute-sanitizer memcheck and racecheck on the test
# binary, verify on several shapes, bench-gpu. Run from the repo root on the GPU machine with
# build-gpu carried (built on the CPU machine: static CUDA runtime, Catch2 v2 compiled in).
# Logs go to $OUT; a short summary prints last.
#   usage: tools/device/run_on_device.sh [all|tests|verify|bench|bwd|tc|dram|snap]   (default all; all excludes bwd, tc, dram, snap)
# bwd: the backward's commands: verify --backward on several shapes, gpu --backward
# with outputs, bad input, bench-gpu --backward. tc: the tensor-core path through the CLI,
# verify --tensor-cores and bench-gpu --tensor-cores (docs/tensor-cores.md). dram: tools/device/ncu_dram.sh
# (the DRAM measurement beside the L2 model; its comparison table prints last). snap: snapshots as
# files: the [snapshot] tests, then for fa1 and fa2 on ragged shapes (Nq != Nk) with
# masks, dropout, fp16/bf16 storage and the backward, `gpu --snapshots` and `run --snapshots`
# on the same flags and `compare` of the two (and of the GPU folder against the run flags).
set -u
OUT=${OUT:-/tmp/flashstep-device}
mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
S=$OUT/summary.txt
: > "$S"
WHAT=${1:-all}
B=build-gpu
# flashstep links cuBLAS dynamically (the tensor-core path): the device has it with its toolkit.
dev_libs /usr/local/cuda/lib64 /usr/local/cuda-13.0/targets/x86_64-linux/lib
dev_gpu_env > /dev/null
T=$B/tests/gpu/flashstep_gpu_tests
F=$B/app/flashstep

note "device: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used,memory.total --format=csv,noheader 2>&1)"

if [[ $WHAT == all || $WHAT == tests ]]; then
  catch2 "$OUT/tests.log" "$T" "[gpu]"
  rc=$?
  note "tests [gpu]: rc=$rc $(catch2_line "$OUT/tests.log")"
  expect 0 "$rc"
  grep -E 'bit-identical' "$OUT/tests.log" | sed 's/^ *//' | sort -u | tee -a "$S"
  catch2 "$OUT/memcheck.log" timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 "$T" "[gpu]"
  rc=$?
  note "memcheck [gpu]: rc=$rc $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
  expect 0 "$rc"
  catch2 "$OUT/racecheck.log" timeout 300 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 \
    "$T" "[gpu]"
  rc=$?
  note "racecheck [gpu]: rc=$rc $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck.log" | tail -1)"
  expect 0 "$rc"
fi

if [[ $WHAT == all || $WHAT == verify ]]; then
  : > "$OUT/verify.log"
  run_verify() {
    "$F" verify "$@" > "$OUT/one.log" 2>&1
    local rc=$?
    { echo "\$ flashstep verify $*"; cat "$OUT/one.log"; } >> "$OUT/verify.log"
    note "verify $*: rc=$rc $(grep -E 'worst over j|^flashstep: error' "$OUT/one.log" | tail -1)"
    expect 0 "$rc"
    grep -E '^(final|           (GPU|CPU|O elements))' "$OUT/one.log" >> "$S"
  }
  run_verify --n 1000 --d 64 --M 128KiB
  run_verify --nq 300 --nk 513 --d 128 --M 128KiB
  run_verify --n 100 --d 32
  run_verify --nq 77 --nk 130 --d 40 --M 2048 --variant 1
  run_verify --n 4096 --d 64 --M 128KiB
  # fa2, masks, dropout, storage precision (fa2 and standard: final state only)
  run_verify --schedule fa2 --n 1000 --d 64 --M 128KiB
  run_verify --schedule fa2 --nq 300 --nk 513 --d 128 --M 128KiB
  run_verify --schedule fa2 --nq 77 --nk 130 --d 40 --M 2048
  run_verify --schedule fa2 --n 4096 --d 64 --M 128KiB --causal
  run_verify --schedule fa2 --nq 500 --nk 700 --d 64 --M 128KiB --causal --dropout 0.1 --seed 7
  run_verify --schedule fa2 --n 1000 --d 64 --M 128KiB --window 128,0 --kv-len 900
  run_verify --schedule fa2 --n 1000 --d 64 --M 128KiB --dtype fp16 --causal
  run_verify --schedule fa2 --n 1000 --d 64 --M 128KiB --dtype bf16 --causal
  run_verify --schedule fa2 --n 1000 --d 128 --M 128KiB --dtype fp16
  run_verify --nq 700 --nk 500 --d 64 --M 128KiB --causal --dropout 0.2
  run_verify --nq 300 --nk 513 --d 64 --M 128KiB --causal --dtype fp16
  run_verify --n 1000 --d 128 --M 128KiB --dtype bf16 --window 200,0
  run_verify --n 1000 --d 64 --M 128KiB --window 64,64 --kv-len 800
  run_verify --schedule standard --nq 300 --nk 400 --d 64 --causal --dropout 0.3 --M 128KiB
  for bad in "verify --n 64 --d 64 --br 64 --bc 1024 --M 200000" \
             "gpu --n 64 --d 64 --br 8 --bc 8 --M 4096 --variant 2" \
             "verify --schedule standard --n 64 --d 64 --dtype fp16" \
             "verify --schedule fa2 --n 64 --d 64 --dropout 1" \
             "verify --schedule fa2 --n 64 --d 64 --window -2,0" \
             "verify --schedule fa2 --n 64 --d 64 --kv-len 65" \
             "gpu --schedule fa3 --n 64 --d 64" \
             "gpu --schedule fa2 --n 64 --d 64 --dtype fp8" \
             "gpu --schedule fa2 --n 64 --d 64 --kv-lens 3 4"; do
    msg=$("$F" $bad 2>&1)
    rc=$?
    note "bad input: flashstep $bad -> rc=$rc $msg"
    expect_refusal "$rc" "$msg"
  done
  "$F" gpu --n 256 --d 64 --M 128KiB --out-o /tmp/o.npy --out-lse /tmp/lse.npy >> "$OUT/verify.log" 2>&1
  rc=$?
  note "gpu --out-o: rc=$rc $(ls -l /tmp/o.npy /tmp/lse.npy | awk '{print $5, $9}' | tr '\n' ' ')"
  expect 0 "$rc"
  "$F" gpu --schedule fa2 --dtype bf16 --causal --n 256 --d 64 --M 128KiB --out-o /tmp/o2.npy >> "$OUT/verify.log" 2>&1
  rc=$?
  note "gpu --schedule fa2 --dtype bf16 --causal: rc=$rc $(ls -l /tmp/o2.npy | awk '{print $5}')"
  expect 0 "$rc"
fi

if [[ $WHAT == all || $WHAT == bench ]]; then
  timeout ${BENCH_TIMEOUT:-300} "$F" bench-gpu --json-file "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
  rc=$?
  note "bench-gpu: rc=$rc"
  expect 0 "$rc"
  # fa2 variant 1, causal (block skipping), fp16 and bf16 storage at the target point.
  : > "$OUT/bench_extra.txt"
  for extra in "--variant 1 --no-fa1 --no-standard" "--causal --no-fa1 --no-standard" \
               "--dtype fp16 --no-fa1 --no-standard" "--dtype bf16 --no-fa1 --no-standard"; do
    echo "\$ bench-gpu --n 4096 --d 64 --no-sweep $extra" >> "$OUT/bench_extra.txt"
    timeout 120 "$F" bench-gpu --n 4096 --d 64 --no-sweep $extra >> "$OUT/bench_extra.txt" 2>&1
    rc=$?
    note "bench-gpu $extra: rc=$rc"
    expect 0 "$rc"
  done
  cat "$OUT/bench.txt" "$OUT/bench_extra.txt"
fi
if [[ $WHAT == bwd ]]; then  # not in all: a device call of its own
  : > "$OUT/bwd_verify.log"
  run_bwd() {
    "$F" verify --backward "$@" > "$OUT/one.log" 2>&1
    local rc=$?
    { echo "\$ flashstep verify --backward $*"; cat "$OUT/one.log"; } >> "$OUT/bwd_verify.log"
    note "verify --backward $*: rc=$rc $(grep -E '^(PASS|FAIL|flashstep: error)' "$OUT/one.log" | tail -1)"
    expect 0 "$rc"
    grep -E '^(worst over j|final|           (GPU|CPU) vs)' "$OUT/one.log" >> "$S"
  }
  for sch in fa1 fa2 standard; do
    run_bwd --schedule $sch --n 1000 --d 64 --M 128KiB                   # ragged: 1000 = 15 x 64 + 40
    run_bwd --schedule $sch --nq 300 --nk 513 --d 128 --M 128KiB         # Nq != Nk, d = 128
    run_bwd --schedule $sch --nq 700 --nk 500 --d 64 --M 128KiB --causal  # rows that see no key
    run_bwd --schedule $sch --n 1000 --d 64 --M 128KiB --window 128,0 --kv-len 900
    run_bwd --schedule $sch --nq 500 --nk 700 --d 64 --M 128KiB --causal --dropout 0.1 --seed 7
    run_bwd --schedule $sch --nq 77 --nk 130 --d 40 --M 2048 --variant 1
  done
  run_bwd --schedule fa1 --n 4096 --d 64 --M 128KiB
  run_bwd --schedule fa2 --n 2048 --d 32 --M 128KiB --causal
  for bad in "gpu --n 64 --d 64 --do /tmp/x.npy" \
             "gpu --n 64 --d 64 --backward --dtype fp16" \
             "verify --backward --schedule fa2 --n 64 --d 64 --dtype bf16" \
             "bench-gpu --backward --dtype fp16" \
             "verify --backward --n 64 --d 64 --br 8 --bc 8 --M 4096 --variant 2"; do
    msg=$("$F" $bad 2>&1)
    rc=$?
    note "bad input: flashstep $bad -> rc=$rc $msg"
    expect_refusal "$rc" "$msg"
  done
  for sch in fa1 fa2 standard; do
    rm -f /tmp/bwd_*.npy
    "$F" gpu --backward --schedule $sch --nq 300 --nk 513 --d 64 --M 128KiB --causal --out-o /tmp/bwd_o.npy \
      --out-dq /tmp/bwd_dq.npy --out-dk /tmp/bwd_dk.npy --out-dv /tmp/bwd_dv.npy >> "$OUT/bwd_verify.log" 2>&1
    rc=$?
    note "gpu --backward --schedule $sch (300 x 513, d 64, causal): rc=$rc $(ls -l /tmp/bwd_*.npy | awk '{print $9 ":" $5}' | tr '\n' ' ')"
    expect 0 "$rc"
  done
  timeout ${BENCH_TIMEOUT:-400} "$F" bench-gpu --backward --json-file "$OUT/bench_backward.json" \
    > "$OUT/bench_backward.txt" 2>&1
  rc=$?
  note "bench-gpu --backward: rc=$rc"
  expect 0 "$rc"
  cat "$OUT/bench_backward.txt"
fi

if [[ $WHAT == tc ]]; then
  : > "$OUT/tc_verify.log"
  tc_verify() {
    "$F" verify --schedule fa2 --tensor-cores "$@" > "$OUT/one.log" 2>&1
    local rc=$?
    { echo "\$ flashstep verify --schedule fa2 --tensor-cores $*"; cat "$OUT/one.log"; } >> "$OUT/tc_verify.log"
    note "verify --tensor-cores $*: rc=$rc $(grep -E '^(PASS|FAIL|flashstep: error)' "$OUT/one.log" | tail -1)"
    expect 0 "$rc"
    grep -E '^           (vs float64, O|O elements)|^final' "$OUT/one.log" >> "$S"
  }
  for t in bf16 fp16; do
    tc_verify --dtype $t --p-dtype $t --n 1000 --d 64
    tc_verify --dtype $t --p-dtype $t --nq 300 --nk 517 --d 128
    tc_verify --dtype $t --p-dtype $t --nq 517 --nk 300 --d 64 --causal
    tc_verify --dtype $t --p-dtype $t --nq 300 --nk 517 --d 128 --causal --kv-len 400
    tc_verify --dtype $t --p-dtype $t --n 17 --d 64
    tc_verify --dtype $t --p-dtype $t --nq 1 --nk 3 --d 128
    tc_verify --dtype $t --p-dtype $t --n 2048 --d 128 --causal --pattern large
    tc_verify --dtype $t --p-dtype $t --nq 333 --nk 333 --d 64 --kv-len 250 --variant 1
  done
  for bad in "verify --schedule fa2 --dtype fp32 --tensor-cores --n 64 --d 64" \
             "verify --schedule fa2 --dtype bf16 --p-dtype bf16 --tensor-cores --n 64 --d 96" \
             "verify --schedule fa1 --dtype bf16 --p-dtype bf16 --tensor-cores --n 64 --d 64" \
             "bench-gpu --tensor-cores --dtype fp32"; do
    msg=$("$F" $bad 2>&1)
    rc=$?
    note "bad input: flashstep $bad -> rc=$rc $msg"
    expect_refusal "$rc" "$msg"
  done
  : > "$OUT/tc_bench.txt"
  for extra in "--dtype bf16" "--dtype bf16 --causal" "--dtype fp16" "--dtype fp16 --causal"; do
    name=$(echo "$extra" | tr -d ' -')
    echo "\$ flashstep bench-gpu --tensor-cores $extra --json-file tc_bench_$name.json" >> "$OUT/tc_bench.txt"
    timeout 150 "$F" bench-gpu --tensor-cores $extra --json-file "$OUT/tc_bench_$name.json" >> "$OUT/tc_bench.txt" 2>&1
    rc=$?
    note "bench-gpu --tensor-cores $extra: rc=$rc"
    expect 0 "$rc"
  done
  cat "$OUT/tc_bench.txt"
fi
if [[ $WHAT == snap ]]; then
  # All [gpu] tests: the snapshot kernel is new, fa2's backward takes a range of j now.
  catch2 "$OUT/snap_tests.log" "$T" "[gpu]"
  rc=$?
  note "tests [gpu] (with [snapshot]): rc=$rc $(catch2_line "$OUT/snap_tests.log")"
  expect 0 "$rc"
  timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 "$T" "[snapshot]" > "$OUT/snap_memcheck.log" 2>&1
  rc=$?
  note "memcheck [snapshot]: rc=$rc $(grep -E 'ERROR SUMMARY' "$OUT/snap_memcheck.log" | tail -1)"
  expect 0 "$rc"
  D=/tmp/flashstep-snap  # the folders stay on the device; the logs come back
  rm -rf "$D" && mkdir -p "$D"
  : > "$OUT/snap_compare.log"
  n=0
  snap_case() {
    n=$((n + 1))
    local g=$D/$n.gpu c=$D/$n.cpu
    "$F" gpu "$@" --snapshots "$g" > "$OUT/one.log" 2>&1
    local rg=$?
    "$F" run "$@" --snapshots "$c" >> "$OUT/one.log" 2>&1
    local rr=$?
    "$F" compare --snapshots "$g" --against "$c" >> "$OUT/one.log" 2>&1
    local rc=$?
    "$F" compare --snapshots "$g" "$@" > "$OUT/one2.log" 2>&1
    local rf=$?
    { echo "\$ flashstep gpu $* --snapshots $g; flashstep run ... --snapshots $c; flashstep compare --snapshots $g --against $c"
      cat "$OUT/one.log"; echo "\$ flashstep compare --snapshots $g $*"; tail -2 "$OUT/one2.log"; } >> "$OUT/snap_compare.log"
    note "snap $*: gpu rc=$rg run rc=$rr compare rc=$rc (vs run flags rc=$rf) $(grep -E '^(PASS|FAIL|flashstep: error)' "$OUT/one.log" | tail -1)"
    for r in "$rg" "$rr" "$rc" "$rf"; do expect 0 "$r"; done
    rm -rf "$g" "$c"
  }
  for sch in fa1 fa2; do
    snap_case --schedule $sch --nq 300 --nk 513 --d 64 --M 128KiB
    snap_case --schedule $sch --nq 77 --nk 130 --d 40 --M 2048
    snap_case --schedule $sch --nq 513 --nk 300 --d 64 --M 128KiB --causal     # rows that see no key
    snap_case --schedule $sch --nq 500 --nk 700 --d 64 --M 128KiB --window 128,0 --kv-len 650
    snap_case --schedule $sch --nq 500 --nk 700 --d 64 --M 128KiB --causal --dropout 0.1 --seed 7
    snap_case --schedule $sch --nq 300 --nk 513 --d 128 --M 128KiB --dtype fp16 --causal
    snap_case --schedule $sch --nq 300 --nk 513 --d 64 --M 128KiB --dtype bf16 --window 64,64
    snap_case --schedule $sch --nq 700 --nk 500 --d 64 --M 128KiB --dtype bf16 --dropout 0.2 --kv-len 450
    snap_case --schedule $sch --nq 300 --nk 513 --d 64 --M 128KiB --causal --backward
    snap_case --schedule $sch --nq 500 --nk 700 --d 64 --M 128KiB --window 100,20 --dropout 0.1 --backward
  done
  snap_case --schedule standard --nq 300 --nk 400 --d 64 --causal --dropout 0.3
  for bad in "gpu --schedule fa2 --n 256 --d 64 --M 128KiB --variant 2 --snapshots $D/bad" \
             "gpu --n 4096 --d 64 --M 1024 --snapshots $D/bad" \
             "gpu --schedule fa2 --n 64 --d 64 --kv-lens 3 --snapshots $D/bad" \
             "gpu --n 64 --d 64 --backward --dtype bf16 --snapshots $D/bad"; do
    msg=$("$F" $bad 2>&1)
    rc=$?
    note "bad input: flashstep $bad -> rc=$rc $msg"
    expect_refusal "$rc" "$msg"
  done
  rm -rf "$D" "$OUT/one2.log"
fi
rm -f "$OUT/one.log"
if [[ $WHAT == dram ]]; then  # a device call of its own (about 7.5 minutes at most); its table last
  FLASHSTEP=$F TC_BENCH=$B/app/flashstep_tc_bench OUT=$OUT tools/device/ncu_dram.sh "$OUT/dram.json"
  exit $?
fi
print_summary
