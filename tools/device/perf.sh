#!/usr/bin/env bash
# One device call for the speed work of the backward and the tensor cores (the float32 backward's variant 3, the
# tensor-core ladder's new rungs): tests and sanitizers of what changed, then the sweeps, with
# a short table last. Run from the repository root on the GPU machine, with the stripped
# binaries (flashstep_gpu_tests, flashstep_tc_tests, flashstep_tc_bench, optionally flashstep)
# in the folder $BIN (default .carry_perf). Logs under $OUT.
#   perf.sh STEP... where STEP is one of
#     bwd-tests      flashstep_gpu_tests "[backward]"
#     bwd-sanitize   memcheck and racecheck on "[backward][sanitize]"
#     bwd-bench      the backward's bench-gpu --backward table (N = 4096, d = 64, 128; needs flashstep)
#     tc-tests       flashstep_tc_tests "[tc]", in four parts at once
#     tc-sanitize    memcheck and racecheck on "[small]"
#     tc-bench:ARGS  flashstep_tc_bench --no-verify ARGS (commas inside ARGS, ';' for spaces)
#     cli:ARGS       flashstep ARGS (';' for spaces), output appended to cli.txt
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
OUT=${OUT:-/tmp/perf}
BIN=${BIN:-.carry_perf}
mkdir -p "$OUT"
dev_libs
dev_gpu_env
summary=()
for step in "$@"; do
  t0=$(date +%s)
  case $step in
    bwd-tests)
      catch2 "$OUT/bwd_tests.log" timeout 200 "$BIN/flashstep_gpu_tests" "[backward]"
      summary+=("bwd [backward]: rc=$? $(catch2_line "$OUT/bwd_tests.log")") ;;
    bwd-sanitize)
      for tool in memcheck racecheck; do
        catch2 "$OUT/bwd_$tool.log" \
          timeout ${SAN_TIMEOUT:-150} compute-sanitizer --tool $tool --error-exitcode 9 "$BIN/flashstep_gpu_tests" "[backward][sanitize]"
        summary+=("bwd $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/bwd_$tool.log" | tail -1)")
      done ;;
    bwd-bench)
      timeout 200 "$BIN/flashstep" bench-gpu --backward --n 4096 --d 64 128 > "$OUT/bwd_bench.txt" 2>&1
      summary+=("bwd bench: rc=$?") ;;
    tc-tests)  # the [tc] cases in four processes at once (the float64 references are on the CPU)
      for part in "[tc][ragged]" "[tc][causal]" "[tc][padding]" "[tc]~[ragged]~[causal]~[padding]"; do
        catch2 "$OUT/tc_tests_$(echo "$part" | tr -dc a-z).log" timeout 330 "$BIN/flashstep_tc_tests" "$part" &
      done
      wait_jobs; rc=$?
      cat "$OUT"/tc_tests_*.log > "$OUT/tc_tests.log"; rm -f "$OUT"/tc_tests_*.log
      summary+=("tc [tc] in 4 parts: rc=$rc $(parts_line "$OUT/tc_tests.log")") ;;
    tc-sanitize)
      catch2 "$OUT/tc_memcheck.log" \
        timeout ${SAN_TIMEOUT:-150} compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/flashstep_tc_tests" "[small]"
      summary+=("tc memcheck: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/tc_memcheck.log" | tail -1)")
      catch2 "$OUT/tc_racecheck.log" timeout ${SAN_TIMEOUT:-150} compute-sanitizer --tool racecheck --racecheck-report all \
        --error-exitcode 9 "$BIN/flashstep_tc_tests" "[small]"
      summary+=("tc racecheck: rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/tc_racecheck.log" | tail -1)") ;;
    tc-bench:*)
      args=${step#tc-bench:}
      timeout 200 "$BIN/flashstep_tc_bench" --no-verify ${args//;/ } >> "$OUT/tc_bench.txt" 2>&1
      summary+=("tc bench ${args}: rc=$?") ;;
    cli:*)
      args=${step#cli:}
      echo "\$ flashstep ${args//;/ }" >> "$OUT/cli.txt"
      timeout 200 "$BIN/flashstep" ${args//;/ } >> "$OUT/cli.txt" 2>&1
      summary+=("cli ${args}: rc=$?") ;;
  esac
  summary[-1]="${summary[-1]} ($(( $(date +%s) - t0 )) s)"
done
echo "==== failures"; grep -hE "FAILED|failed" "$OUT"/*tests.log 2>/dev/null | head -20
echo "==== tc bench"; grep -vE "^verify .*PASS" "$OUT/tc_bench.txt" 2>/dev/null | tail -40
echo "==== backward bench"; cat "$OUT/bwd_bench.txt" 2>/dev/null | grep -vE "^(Filters|=+|-+|~+)$" | tail -16
echo "==== summary"; printf '%s\n' "${summary[@]}"
