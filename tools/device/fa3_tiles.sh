#!/usr/bin/env bash
# One device call for the long-Bc forward rungs (gpu/fa3_forward.cu, FlashAttention-3's Hopper
# tiles): v20 (v17 with Bc 192 at d = 64, 176 at d = 128) and v21 (v18, persistent, with the same
# Bc). About 120 s, at most 150:
#   1. in parallel: the [tc] tests of v20 and v21 (FLASHSTEP_TC_VARIANTS, split by tag, the
#      [persistent] case included), two verify --tensor-cores per rung against the CPU emulation
#      (--p-dtype; ragged, causal, key length; bf16 and fp16; d = 64 and 128), memcheck and
#      racecheck on tiny verifies of each rung, the SASS counts (HGMMA of N = 176 and 192);
#   2. alone on the GPU: the bench of v15, v17, v18, v19, v20, v21 (bf16, N = 4096 and 16384,
#      d = 64 and 128, causal and not; one process per rung) and PyTorch's cuDNN sdpa on the same
#      shapes;
#   3. the summary: one line per check, then TFLOP/s and the ratio to cuDNN per point, with the
#      fastest rung whose tests passed.
# Run from the repository root: bash tools/device/fa3_tiles.sh BIN OUT (BIN: flashstep,
# flashstep_tc_tests, flashstep_tc_bench; tools/device/lib.sh sets the environment).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
NEW="20 21"
S=()

# ---- 1. correctness, all at once ----
(timeout 30 cuobjdump --dump-sass "$BIN/flashstep_tc_bench" > "$OUT/sass.txt" 2>/dev/null) &
# Each test process prints its cases' durations (-d yes); a process killed by its timeout shows
# as one failed test case ("fatal error condition: SIGTERM") in the failure's first lines below.
TC_TIMEOUT=70
start_rung_tests $TC_TIMEOUT $NEW
# The bad-request case, the persistent shapes' CPU check (v18, v21) and the 16-bit-input case.
catch2 "$OUT/tc_rest.log" \
  timeout $TC_TIMEOUT "$BIN/flashstep_tc_tests" -d yes "[tc]~[ragged]~[causal]~[padding]~[ring]~[small]~[persistent]~[tc_backward]" &
V="$BIN/flashstep verify --schedule fa2 --tensor-cores"
# Two per rung: Nk (or the key length) not a multiple of 176 or 192, causal with Nq < Nk and Nq > Nk.
verify_args() {
  case $1 in
    20a) echo "--dtype bf16 --p-dtype bf16 --nq 300 --nk 517 --d 128 --causal --kv-len 400" ;;
    20b) echo "--dtype fp16 --p-dtype fp16 --nq 1000 --nk 777 --d 64 --kv-len 700" ;;
    21a) echo "--dtype fp16 --p-dtype fp16 --nq 517 --nk 300 --d 128 --causal" ;;
    21b) echo "--dtype bf16 --p-dtype bf16 --nq 1000 --nk 777 --d 64 --causal --kv-len 700" ;;
  esac
}
VERIFIES="20a 20b 21a 21b"
for c in $VERIFIES; do
  (timeout 40 $V $(verify_args $c) --variant ${c%?}; echo "rc=$?") > "$OUT/verify_$c.txt" 2>&1 &
done
san() {  # tool variant dtype d extra...
  local tool=$1 v=$2 t=$3 d=$4
  shift 4
  local extra=""
  [ "$tool" = racecheck ] && extra="--racecheck-report all"
  (timeout 50 compute-sanitizer --tool $tool $extra --error-exitcode 9 $V --dtype $t --p-dtype $t --d $d "$@" --variant $v
   echo "rc=$?") > "$OUT/${tool}_v$v.log" 2>&1
}
san memcheck 21 bf16 128 --nq 130 --nk 77 --causal &
san memcheck 20 fp16 64 --nq 130 --nk 200 --kv-len 190 &
san racecheck 21 fp16 128 --nq 200 --nk 150 &
san racecheck 20 bf16 64 --nq 200 --nk 250 --causal &
wait
S+=("correctness phase: $(($(date +%s) - T0)) s")
SASS=$OUT/sass.txt
S+=("SASS of flashstep_tc_bench: HGMMA $(grep -c HGMMA $SASS) (64x176: $(grep -c 'HGMMA.64x176x16' $SASS), 64x192: $(grep -c 'HGMMA.64x192x16' $SASS)), UTMALDG $(grep -c UTMALDG $SASS), USETMAXREG $(grep -c USETMAXREG $SASS)")
declare -A OK
for v in $NEW; do
  rung_verdict $v "$OUT/verify_${v}a.txt" "$OUT/verify_${v}b.txt"
  for c in ${v}a ${v}b; do
    rc=$(tail -1 "$OUT/verify_$c.txt")
    S+=("verify v$v $(verify_args $c | sed 's/--p-dtype [a-z0-9]* //'): $([ "$rc" = rc=0 ] && echo PASS || echo "FAIL ($rc)") | $(tail -2 "$OUT/verify_$c.txt" | head -1 | cut -c1-110)")
  done
done
S+=("[tc] bad requests, persistent shapes, 16-bit inputs: $(grep -E '^(All tests passed|test cases:)' "$OUT/tc_rest.log" | tr '\n' ';')")
grep -q "^All tests passed" "$OUT/tc_rest.log" || S+=("  tc_rest first failure: $(tc_failure "$OUT/tc_rest.log")")
for f in "$OUT"/memcheck_v*.log "$OUT"/racecheck_v*.log; do
  S+=("$(basename "$f" .log) tiny verify: $(tail -1 "$f") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$f" | tail -1)")
done

# ---- 2. speed, alone on the GPU ----
# The new rungs first, then cuDNN, then the old rungs; a step that would start past 130 s is
# skipped and says so (the call's budget is 150 s; each step takes a few seconds when all is well).
bench_rungs 130 $NEW sdpa 15 18 19 17
S+=("total $(($(date +%s) - T0)) s")

# ---- 3. summary ----
{
  cat "$OUT/gpu.txt"
  printf '%s\n' "${S[@]}" | tr -s ' '
  # v15-v19 were shown correct before; v20 and v21 count only if their tests passed here.
  CORRECT="15 17 18 19"
  for v in 20 21; do [ "${OK[$v]}" = PASS ] && CORRECT="$CORRECT $v"; done
  python3 "$DEV_LIB_DIR/tc_tables.py" "$OUT/bench.txt" "$OUT/sdpa.txt" "15 17 18 19 20 21" "$CORRECT"
} | tee "$OUT/summary.txt"
