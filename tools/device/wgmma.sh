#!/usr/bin/env bash
# One device call for variants 13 and 14 (gpu/fa2_wgmma.cu, the ladder's first Hopper rungs):
# the [tc] tests for v11 (whose softmax, block index and launch it now shares) and v13, v14 in
# four processes at once, memcheck on the small v13/v14 cases, the count of HGMMA instructions
# in the SASS, the bench of v11 against v13 and v14 at N = 4096 (table last), racecheck last.
# Run from the repository root on the GPU machine with the stripped flashstep_tc_tests and
# flashstep_tc_bench in $BIN (default .carry_hop); logs under $OUT.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
OUT=${OUT:-/tmp/wgmma}
BIN=${BIN:-.carry_hop}
mkdir -p "$OUT"
dev_libs
dev_gpu_env
echo "HGMMA instructions in flashstep_tc_bench: $(cuobjdump --dump-sass "$BIN/flashstep_tc_bench" 2>/dev/null | grep -c HGMMA)"
summary=()
t0=$(date +%s)
for part in "[tc][ragged]" "[tc][causal]" "[tc][padding]" "[tc]~[ragged]~[causal]~[padding]"; do
  FLASHSTEP_TC_VARIANTS=11,13,14 catch2 "$OUT/tc_tests_$(echo "$part" | tr -dc a-z).log" \
    timeout 150 "$BIN/flashstep_tc_tests" "$part" &
done
wait_jobs; rc=$?
cat "$OUT"/tc_tests_*.log > "$OUT/tc_tests.log"; rm -f "$OUT"/tc_tests_*.log
summary+=("v11,13,14 [tc] in 4 parts: rc=$rc $(parts_line "$OUT/tc_tests.log") ($(($(date +%s) - t0)) s)")
FLASHSTEP_TC_VARIANTS=13,14 catch2 "$OUT/memcheck.log" \
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/flashstep_tc_tests" "[small]"
summary+=("v13,14 memcheck [small]: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)")
for v in 11 13,14; do  # apart, so that a failing Hopper kernel leaves v11's table standing
  timeout 60 "$BIN/flashstep_tc_bench" --no-verify --no-standard --variants $v --ds 64,128 --ns 4096 \
    --dtypes bf16,fp16 --causal both >> "$OUT/bench.txt" 2>&1
  summary+=("bench v$v: rc=$?")
done
FLASHSTEP_TC_VARIANTS=13,14 catch2 "$OUT/racecheck.log" \
  timeout 40 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 "$BIN/flashstep_tc_tests" "[small]"
summary+=("v13,14 racecheck [small]: rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck.log" | tail -1)")
grep -B2 -A12 -E "FAILED|failed" "$OUT/tc_tests.log" | head -60
grep -E "Invalid|out of bounds|Error" "$OUT/memcheck.log" | sort | uniq -c | head -10
printf '%s\n' "${summary[@]}"
cat "$OUT/bench.txt"
