#!/usr/bin/env bash
# One device call for the tensor-core ladder, run from a folder holding flashstep_tc_bench,
# flashstep_tc_tests, sdpa_bench.py and sdpa_timing.py (built on the CPU machine). Logs under $OUT.
#   tc_device.sh tests|bench|sdpa|sanitize ... (several modes in one call, in order)
set -u
OUT=${OUT:-/tmp/tc}
mkdir -p "$OUT"
lib=$(find /usr/local /opt /usr/lib -name 'libcublasLt.so.13*' 2>/dev/null | head -1)
[ -n "$lib" ] && export LD_LIBRARY_PATH=$(dirname "$lib"):${LD_LIBRARY_PATH:-}
echo "cublas from: ${lib:-not found}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for mode in "$@"; do
  case $mode in
    tests) ./flashstep_tc_tests "[tc]" > "$OUT/tests.log" 2>&1
           echo "tests [tc]: rc=$? $(grep -E '^(All tests passed|test cases:)' "$OUT/tests.log" | tail -1)" ;;
    sanitize)
      timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 ./flashstep_tc_tests "[small]" > "$OUT/memcheck.log" 2>&1
      echo "memcheck [small]: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
      timeout 240 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 ./flashstep_tc_tests "[small]" > "$OUT/racecheck.log" 2>&1
      echo "racecheck [small]: rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck.log" | tail -1)" ;;
    bench:*) ./flashstep_tc_bench ${mode#bench:} >> "$OUT/bench.txt" 2>&1; echo "bench ${mode#bench:}: rc=$?" ;;
    sdpa:*) PYTHONUNBUFFERED=1 python3 sdpa_bench.py ${mode#sdpa:} >> "$OUT/sdpa.txt" 2>&1; echo "sdpa ${mode#sdpa:}: rc=$?" ;;
  esac
done
echo "==== tests"; grep -E "FAILED|failed|SKIPPED" "$OUT/tests.log" 2>/dev/null | head -20
echo "==== sdpa"; grep -E "^sdpa|Error" "$OUT/sdpa.txt" 2>/dev/null
echo "==== bench"; grep -vE "^verify .*PASS" "$OUT/bench.txt" 2>/dev/null | tail -60
