#!/usr/bin/env bash
# tools/device/lib.sh's Catch2 runner, on stand-in test binaries (no GPU needed): a run that made
# no assertion ("assertions: - none -": every case skipped) or ran no test ("No tests ran": a
# filter that matched nothing) fails with 3, a failing run keeps its exit code, a passing run
# passes; the summary lines say which. Usage: check_device_lib.sh REPO_ROOT
set -u
root=${1:?usage: check_device_lib.sh REPO_ROOT}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
source "$root/tools/device/lib.sh"
source "$root/tests/check_expect.sh"
skipped() { printf '%s\n' "===" "test cases: 2 | 2 passed" "assertions: - none -"; }
matched_nothing() { printf '%s\n' "No test cases matched '[nothing]'" "===" "No tests ran"; }
passed() { echo "All tests passed (12 assertions in 2 test cases)"; }
failed() { printf '%s\n' "test cases: 2 | 1 passed | 1 failed" "assertions: 12 | 11 passed | 1 failed"; return 1; }

catch2 "$OUT/skipped.log" skipped; expect "every case skipped fails" 3 $?
case "$(catch2_line "$OUT/skipped.log")" in *"no assertion ran: FAIL"*) r=named ;; *) r=silent ;; esac
expect "its summary line names the failure" named $r
catch2 "$OUT/nothing.log" matched_nothing; expect "a filter that matched nothing fails" 3 $?
expect "tests_line says so" "rc=0 FAIL: no test matched the filter or none asserted" "$(tests_line "$OUT/nothing.log" 0)"
catch2 "$OUT/passed.log" passed; expect "a passing run passes" 0 $?
expect "its count line" "All tests passed (12 assertions in 2 test cases)" "$(catch2_line "$OUT/passed.log")"
catch2 "$OUT/failed.log" failed; expect "a failing run keeps its exit code" 1 $?
catch2 "$OUT/a.log" passed & catch2 "$OUT/b.log" skipped & wait_jobs; expect "wait_jobs reports a skipped part" 3 $?
S=(); : > "$OUT/summary.txt"
T0=$(($(date +%s) - 100))
before 1000 "a step with time left"; expect "before: a step with time left starts" 0 $?
before 50 "a late step"; expect "before: a step past its start time is skipped" 1 $?
say "a line"
expect "the skipped step and the line are in the summary file" "skipped (past 50 s): a late step|a line" \
  "$(paste -sd'|' "$OUT/summary.txt")"
expect "and in S" 2 "${#S[@]}"
dev_gpu_env > /dev/null 2>&1
expect "the environment requires the GPU" 1 "$FLASHSTEP_REQUIRE_GPU"
[ "$bad" -eq 0 ] && echo "device lib ok"
exit "$bad"
