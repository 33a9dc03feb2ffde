#!/usr/bin/env bash
# One device call for the forward rungs after v15 (gpu/fa3_forward.cu): v17 (intra-warpgroup
# overlap), v18 (v17 persistent), v19 (v17 with 3 consumer warpgroups, Br 192). About 90 s:
#   1. in parallel: the [tc] tests of each new rung (FLASHSTEP_TC_VARIANTS, split by tag), one
#      verify --tensor-cores per rung against the CPU emulation (--p-dtype; one causal each),
#      memcheck and racecheck on one tiny v18 verify each, the SASS counts;
#   2. alone on the GPU: the bench of v15, v17, v18, v19 (bf16, N = 4096 and 16384, d = 64 and
#      128, causal and not; one process per rung, so that a rung that hangs costs only its own
#      figures) and PyTorch's cuDNN sdpa on the same shapes;
#   3. the summary: one line per check, then TFLOP/s and the ratio to cuDNN per point.
# Run from the repository root: bash tools/device/fa3_rungs.sh BIN OUT (BIN: flashstep,
# flashstep_tc_tests, flashstep_tc_bench; tools/device/lib.sh sets the environment).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
NEW="17 18 19"
S=()

# ---- 1. correctness, all at once ----
(timeout 30 cuobjdump --dump-sass "$BIN/flashstep_tc_bench" > "$OUT/sass.txt" 2>/dev/null) &
# Each test process prints its cases' durations (-d yes). A process killed by its timeout still
# prints Catch2's summary line as one failed test case ("due to a fatal error condition: SIGTERM"),
# which the summary below shows with the failures' first lines: the [persistent] case's float64
# reference once took longer than the 50 s it had among 19 processes here.
TC_TIMEOUT=75
start_rung_tests $TC_TIMEOUT $NEW
# v15 (the default) on the same [persistent] case, to tell the case from the new rungs.
FLASHSTEP_TC_VARIANTS=15 catch2 "$OUT/tc15_persistent.log" timeout $TC_TIMEOUT "$BIN/flashstep_tc_tests" -d yes "[tc][persistent]" &
# The bad-request case and the 16-bit-input case (the default variant; cheap: no backward cases).
catch2 "$OUT/tc_rest.log" \
  timeout $TC_TIMEOUT "$BIN/flashstep_tc_tests" -d yes "[tc]~[ragged]~[causal]~[padding]~[ring]~[small]~[persistent]~[tc_backward]" &
V="$BIN/flashstep verify --schedule fa2 --tensor-cores"
verify_args() {
  case $1 in
    17) echo "--dtype bf16 --p-dtype bf16 --nq 300 --nk 517 --d 128 --causal --kv-len 400" ;;
    18) echo "--dtype fp16 --p-dtype fp16 --nq 517 --nk 300 --d 64 --causal" ;;
    19) echo "--dtype bf16 --p-dtype bf16 --nq 1000 --nk 777 --d 64 --kv-len 700" ;;
  esac
}
for v in $NEW; do
  (timeout 40 $V $(verify_args $v) --variant $v; echo "rc=$?") > "$OUT/verify_v$v.txt" 2>&1 &
done
(timeout 50 compute-sanitizer --tool memcheck --error-exitcode 9 $V --dtype bf16 --p-dtype bf16 --nq 130 --nk 77 --d 64 \
  --causal --variant 18; echo "rc=$?") > "$OUT/memcheck.log" 2>&1 &
(timeout 50 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 $V --dtype fp16 --p-dtype fp16 \
  --nq 200 --nk 150 --d 128 --variant 18; echo "rc=$?") > "$OUT/racecheck.log" 2>&1 &
wait
S+=("correctness phase: $(($(date +%s) - T0)) s")
SASS=$OUT/sass.txt
S+=("SASS of flashstep_tc_bench: HGMMA $(grep -c HGMMA $SASS), UTMALDG $(grep -c UTMALDG $SASS), USETMAXREG $(grep -c USETMAXREG $SASS)")
declare -A OK
for v in $NEW; do
  rung_verdict $v "$OUT/verify_v$v.txt"
  rc=$(tail -1 "$OUT/verify_v$v.txt")
  S+=("verify v$v $(verify_args $v): $([ "$rc" = rc=0 ] && echo PASS || echo "FAIL ($rc)") | $(tail -2 "$OUT/verify_v$v.txt" | head -1)")
done
S+=("[tc] bad requests, 16-bit inputs: $(grep -E '^(All tests passed|test cases:)' "$OUT/tc_rest.log" | tr '\n' ';')")
P15=$OUT/tc15_persistent.log
S+=("v15 [tc][persistent]: $(grep -E '^(All tests passed|test cases:)|^[0-9.]+ s: ' "$P15" | cut -c1-80 | tr '\n' ';')")
grep -q "^All tests passed" "$P15" || S+=("  v15 [persistent] first failure: $(tc_failure "$P15")")
S+=("memcheck v18 tiny verify (130 x 77, d 64, causal): $(tail -1 "$OUT/memcheck.log") $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)")
S+=("racecheck v18 tiny verify (fp16 200 x 150, d 128): $(tail -1 "$OUT/racecheck.log") $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck.log" | tail -1)")

# ---- 2. speed, alone on the GPU ----
bench_rungs 100000 15 $NEW sdpa
S+=("total $(($(date +%s) - T0)) s")

# ---- 3. summary ----
{
  cat "$OUT/gpu.txt"
  printf '%s\n' "${S[@]}"
  python3 "$DEV_LIB_DIR/tc_tables.py" "$OUT/bench.txt" "$OUT/sdpa.txt" "15 17 18 19"
} | tee "$OUT/summary.txt"
