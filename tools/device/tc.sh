#!/usr/bin/env bash
# One device call for the tensor-core ladder, run from a folder holding flashstep_tc_bench,
# flashstep_tc_tests, sdpa_bench.py and sdpa_timing.py (built on the CPU machine). Logs under $OUT.
#   tc.sh tests|bench|sdpa|sanitize ... (several modes in one call, in order)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
OUT=${OUT:-/tmp/tc}
mkdir -p "$OUT"
dev_libs
dev_gpu_env
for mode in "$@"; do
  case $mode in
    tests) catch2 "$OUT/tests.log" ./flashstep_tc_tests "[tc]"
           echo "tests [tc]: rc=$? $(catch2_line "$OUT/tests.log")" ;;
    sanitize)
      catch2 "$OUT/memcheck.log" timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 ./flashstep_tc_tests "[small]"
      echo "memcheck [small]: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
      catch2 "$OUT/racecheck.log" timeout 240 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 ./flashstep_tc_tests "[small]"
      echo "racecheck [small]: rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck.log" | tail -1)" ;;
    bench:*) ./flashstep_tc_bench ${mode#bench:} >> "$OUT/bench.txt" 2>&1; echo "bench ${mode#bench:}: rc=$?" ;;
    sdpa:*) PYTHONUNBUFFERED=1 python3 sdpa_bench.py ${mode#sdpa:} >> "$OUT/sdpa.txt" 2>&1; echo "sdpa ${mode#sdpa:}: rc=$?" ;;
  esac
done
echo "==== tests"; grep -E "FAILED|failed|SKIPPED" "$OUT/tests.log" 2>/dev/null | head -20
echo "==== sdpa"; grep -E "^sdpa|Error" "$OUT/sdpa.txt" 2>/dev/null
echo "==== bench"; grep -vE "^verify .*PASS" "$OUT/bench.txt" 2>/dev/null | tail -60
