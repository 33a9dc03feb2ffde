#!/usr/bin/env bash
# One device call that checks every default kernel of a build and times it fairly:
#   1. compute-sanitizer's memcheck, racecheck, synccheck and initcheck on each default kernel,
#      through the CLI on small ragged shapes: the tensor-core forward (d = 64, 128, causal or
#      not), the tensor-core backward (d = 64 causal, d = 128 causal or not), the FP8 forward (d = 64
#      causal, d = 128 per block with key padding), decode (split-KV and combine), paged decode,
#      float32 decode (variant 3) and FP8 paged decode, and the float32 step engine (fa2);
#   2. where the softmax sits against the waits in the forward's machine code (sass_overlap.py);
#   3. the [gpu] tests ROUNDS times in a row (default 5) and the [tc] tests, FLASHSTEP_REQUIRE_GPU=1;
#   4. the forward, backward and decode benchmarks beside PyTorch in the same call, both sides
#      timed the same way: 10 calls back to back (bench-gpu's default; gpu/tools/sdpa_timing.py),
#      2 for the backward, whose calls take 5-250 ms (a launch's host time is then under 0.1%);
#      an older flashstep binary beside them when OLD is given.
# Usage, from the repository root on the GPU machine:
#   bash tools/device/defaults_check.sh BIN OUT [OLD]
# PHASE=checks runs 1-3 only, PHASE=bench 4 only (one device command is limited to 10 minutes).
# CASES_ONLY="bwd-d128 bwd-d128-c" runs step 1 on those cases alone (a new default of one kernel,
# the others' machine code unchanged and checked before).
# BIN holds flashstep, flashstep_gpu_tests, flashstep_tc_tests; OLD an older flashstep. A summary
# table is printed last; the exit status is 1 if any check failed.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # fwd_bench, fwd_bench_cudnn (its note is replaced below)
BIN=${1:?usage: defaults_check.sh BIN OUT [OLD]}
OUT=${2:?usage: defaults_check.sh BIN OUT [OLD]}
OLD=${3:-}
mkdir -p "$OUT"
FS=$BIN/flashstep
export FLASHSTEP_REQUIRE_GPU=1 FLASHSTEP_GOLDEN_DIR=$PWD/tests/golden
T0=$(date +%s)
S=()
fails=0
note() { S+=("$*"); echo "$*"; }
check() {  # check NAME RC: a line in the summary, counted as a failure unless RC is 0
  if [ "$2" -eq 0 ]; then note "ok    $1"; else note "FAIL  $1 (rc=$2)"; fails=$((fails + 1)); fi
}

note "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"

PHASE=${PHASE:-all}
if [ "$PHASE" != bench ]; then
# ---- 1. the four sanitizers on every default kernel ----
V="$FS verify --schedule fa2 --tensor-cores"
declare -a CASES=(
  "fwd-d64      $V --dtype bf16 --p-dtype bf16 --nq 333 --nk 517 --d 64"
  "fwd-d64-c    $V --dtype bf16 --p-dtype bf16 --nq 333 --nk 517 --d 64 --causal"
  "fwd-d128     $V --dtype fp16 --p-dtype fp16 --nq 333 --nk 517 --d 128 --kv-len 400"
  "fwd-d128-c   $V --dtype bf16 --p-dtype bf16 --nq 333 --nk 517 --d 128 --causal"
  "bwd-d64-c    $FS gpu --schedule fa2 --backward --tensor-cores --dtype bf16 --nq 700 --nk 333 --d 64 --causal"
  "bwd-d128     $FS gpu --schedule fa2 --backward --tensor-cores --dtype bf16 --nq 200 --nk 333 --d 128"
  "bwd-d128-c   $FS gpu --schedule fa2 --backward --tensor-cores --dtype fp16 --nq 333 --nk 200 --d 128 --causal"
  "fp8-d64      $V --dtype fp8 --nq 333 --nk 200 --d 64 --causal"
  "fp8-d128     $V --dtype fp8 --nq 200 --nk 333 --d 128 --fp8-scale per-block --kv-len 300"
  "decode       $FS verify --schedule decode --dtype bf16 --nq 1 --nk 3000 --d 128 --splits 4"
  "decode-paged $FS verify --schedule decode --dtype bf16 --nq 1 --nk 3000 --d 64 --splits 4 --page-size 16"
  "decode-fp32  $FS verify --schedule decode --nq 1 --nk 2000 --d 64 --splits 3"
  "decode-fp8   $FS verify --schedule decode --dtype fp8 --nq 3 --nk 2000 --d 64 --fp8-scale per-block --page-size 16 --splits 3"
  "fp32-fa2     $FS verify --schedule fa2 --n 200 --d 64 --M 64KiB"
)
for c in "${CASES[@]}"; do
  name=${c%% *}
  if [ -n "${CASES_ONLY:-}" ]; then case " $CASES_ONLY " in *" $name "*) ;; *) continue ;; esac; fi
  cmd=${c#* }
  cmd=${cmd#"${cmd%%[![:space:]]*}"}
  for tool in memcheck racecheck synccheck initcheck; do
    log="$OUT/san_${name}_$tool.log"
    timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 $cmd > "$log" 2>&1
    rc=$?
    check "$tool $name: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1 | sed 's/=========//')" $rc
  done
done

# ---- 2. the softmax under O += P~ V in the machine code ----
if command -v cuobjdump > /dev/null; then
  cuobjdump --dump-sass "$FS" > "$OUT/sass.txt" 2>/dev/null
  python3 gpu/tools/sass_overlap.py "$OUT/sass.txt" > "$OUT/overlap.txt" 2>&1
  check "sass overlap: $(tr '\n' ';' < "$OUT/overlap.txt" | cut -c1-200)" $(grep -q " none " "$OUT/overlap.txt"; echo $(( $? == 0 )))
fi

# ---- 3. the tests ----
for k in $(seq "${ROUNDS:-5}"); do
  $BIN/flashstep_gpu_tests "[gpu]" > "$OUT/gpu_tests_$k.log" 2>&1
  rc=$?
  check "[gpu] tests, round $k: $(grep -E '^(All tests passed|test cases:)' "$OUT/gpu_tests_$k.log" | tail -1)" $rc
done
$BIN/flashstep_tc_tests "[tc]" > "$OUT/tc_tests.log" 2>&1
check "[tc] tests: $(grep -E '^(All tests passed|test cases:)' "$OUT/tc_tests.log" | tail -1)" $?
note "checks done at $(($(date +%s) - T0)) s"
fi

if [ "$PHASE" != checks ]; then
# ---- 4. speed, both sides 10 calls back to back ----
fwd_bench "$FS" "$OUT/fwd_new.txt" 120
[ -n "$OLD" ] && fwd_bench "$OLD" "$OUT/fwd_old.txt" 120
fwd_bench_cudnn "$OUT/fwd_sdpa.txt" 120
for c in "" "--causal"; do
  timeout 240 "$FS" bench-gpu --backward --tensor-cores --dtype bf16 --n 4096 16384 --d 64 128 --back-to-back 2 $c \
    >> "$OUT/bwd_new.txt" 2>&1
done
timeout 300 python3 gpu/tools/sdpa_bwd_bench.py --backends flash,cudnn --ns 4096,16384 --ds 64,128 --back-to-back 2 \
  > "$OUT/bwd_sdpa.txt" 2>&1
timeout 200 python3 gpu/tools/sdpa_decode_bench.py --nks 65536,262144 --back-to-back 10 --json "$OUT/decode_sdpa.json" \
  > "$OUT/decode_sdpa.txt" 2>&1
timeout 200 "$FS" bench-gpu --decode --dtype bf16 --nk 65536 262144 --back-to-back 10 --sdpa "$OUT/decode_sdpa.json" \
  > "$OUT/decode_new.txt" 2>&1
note "benchmarks done at $(($(date +%s) - T0)) s"
fi

{
  printf '%s\n' "${S[@]}"
  python3 tools/device/defaults_table.py "$OUT"
  echo "failed checks: $fails"
} | tee "$OUT/summary.txt"
[ "$fails" -eq 0 ]
