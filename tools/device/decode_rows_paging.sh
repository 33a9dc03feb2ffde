#!/usr/bin/env bash
# Decode's split kernel with paging as a run-time switch (the chunk loop compiled per layout inside
# one kernel) and variant 3's single query row in its four-row kernel (rows past Nq skipped),
# against the build before it and against a build B that keeps a one-row kernel for variant 3:
# first the times of the kernels concerned (variant 3 in float32, variant 5 paged), then the
# [decode] tests, then the sanitizers on each decode layout, each step only while BUDGET seconds
# (default 300) last. The summary is written as it goes ($OUT/summary.txt) and printed last.
# Usage, from the repository root on the GPU machine: bash tools/device/decode_rows_paging.sh BIN OUT
# BIN holds flashstep (A), flashstep_b, flashstep_old and flashstep_gpu_tests (A's).
set -u
BIN=${1:?usage: decode_rows_paging.sh BIN OUT}
OUT=${2:?usage: decode_rows_paging.sh BIN OUT}
BUDGET=${BUDGET:-300}
mkdir -p "$OUT"
export FLASHSTEP_REQUIRE_GPU=1 FLASHSTEP_GOLDEN_DIR=$PWD/tests/golden
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
left() { [ $(( BUDGET - $(el) )) -gt "$1" ]; }  # left N: more than N seconds of the budget remain
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
FS=$BIN/flashstep
med() { python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['rows'][0]; print('%.4f' % r[sys.argv[2]]['median_ms'])" "$@" 2>/dev/null || echo "-"; }
for side in A B old; do
  bin=$FS; [ $side = B ] && bin=$BIN/flashstep_b; [ $side = old ] && bin=$BIN/flashstep_old
  timeout 30 "$bin" bench-gpu --decode --dtype fp32 --d 64 --nk 65536 --heads 32 --json-file "$OUT/fp32_$side.json" > "$OUT/fp32_$side.txt" 2>&1
  say "fp32 d 64 Nk 65536 BxH 32, variant 3, $side: decode $(med "$OUT/fp32_$side.json" decode) ms at $(el) s"
done
for side in A old; do
  left 40 || break
  bin=$FS; [ $side = old ] && bin=$BIN/flashstep_old
  timeout 30 "$bin" bench-gpu --decode --dtype bf16 --d 128 --nk 262144 --heads 32 --page-size 16 \
    --json-file "$OUT/paged_$side.json" > "$OUT/paged_$side.txt" 2>&1
  say "bf16 d 128 Nk 262144 BxH 32, $side: decode $(med "$OUT/paged_$side.json" decode) ms, paged (variant 5) $(med "$OUT/paged_$side.json" decode_paged) ms at $(el) s"
done
if left 40; then
  timeout $(( BUDGET - $(el) - 10 )) "$BIN/flashstep_gpu_tests" "[decode]" > "$OUT/tests_decode.log" 2>&1
  say "[decode] tests: rc=$? $(grep -E 'test cases|All tests' "$OUT/tests_decode.log" | tail -1) at $(el) s"
fi
declare -a CASES=(
  "fp32-v3-row1    verify --schedule decode --nq 1 --nk 2000 --d 64 --splits 3 --page-size 7"
  "bf16-paged-v5   verify --schedule decode --dtype bf16 --nq 1 --nk 3000 --d 64 --splits 4 --page-size 16"
  "fp8-paged-v9    verify --schedule decode --dtype fp8 --nq 3 --nk 2000 --d 64 --fp8-scale per-block --page-size 16 --splits 3"
  "bf16-d32-v3     verify --schedule decode --dtype bf16 --nq 2 --nk 1500 --d 32 --splits 2"
)
for tool in memcheck racecheck synccheck initcheck; do
  for c in "${CASES[@]}"; do
    left 15 || break 2
    name=${c%% *}; cmd=${c#* }; cmd=${cmd#"${cmd%%[![:space:]]*}"}
    timeout 40 compute-sanitizer --tool $tool --error-exitcode 9 $FS $cmd > "$OUT/san_${name}_$tool.log" 2>&1
    say "$tool $name: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${name}_$tool.log" | tail -1 | sed 's/=========//') $(grep -c PASS "$OUT/san_${name}_$tool.log") PASS"
  done
done
say "done at $(el) s"
