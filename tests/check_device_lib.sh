#!/usr/bin/env bash
# tools/device/lib.sh's Catch2 runner and many-block sanitizer runs, on stand-ins (no GPU needed):
# a run that made no assertion ("assertions: - none -": every case skipped) or ran no test ("No tests ran": a
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
# sanitize_many with a stand-in compute-sanitizer on PATH: each tool gets the command, the causal
# flag, the three inputs as they exist while it runs and the keys kept per batch entry; a tool
# that finds errors (exit 9) shows in its file's last line; the inputs are gone after.
mkdir -p "$OUT/fakebin"
cat > "$OUT/fakebin/compute-sanitizer" <<'FAKE'
#!/usr/bin/env bash
all="$*" q=""
echo "args: $all"
while [ $# -gt 0 ]; do [ "$1" = --q ] && q=$2; shift; done
echo "q $(head -c 128 "$q" | grep -ao "'shape': ([0-9, ]*)")"  # the .npy header
case "$all" in *synccheck*) echo "========= ERROR SUMMARY: 2 errors"; exit 9 ;; esac
echo "========= ERROR SUMMARY: 0 errors"
FAKE
chmod +x "$OUT/fakebin/compute-sanitizer"
PATH="$OUT/fakebin:$PATH" sanitize_many "$OUT/many" 64 echo gpu --backward
expect "sanitize_many: each tool's exit code is its file's last line" "rc=0 rc=0 rc=9 rc=0" \
  "$(for t in memcheck racecheck synccheck initcheck; do tail -1 "$OUT/many_$t.txt"; done | paste -sd' ')"
expect "the tool, the command and the flags reach compute-sanitizer" 1 \
  "$(grep -c -- '--tool racecheck --racecheck-report all --error-exitcode 9 echo gpu --backward --causal --q .*many_q.npy .*--kv-lens 1000 0 300' "$OUT/many_racecheck.txt")"
expect "the inputs are 3 x 16 heads of 64 queries at d = 64" "q 'shape': (3, 16, 64, 64, )" "$(grep "^q " "$OUT/many_memcheck.txt")"
expect "the summary line of a tool that found errors" "========= ERROR SUMMARY: 2 errors" "$(sanitized "$OUT/many_synccheck.txt")"
expect "the inputs are removed after" 0 "$(ls "$OUT"/many_*.npy 2>/dev/null | wc -l)"
# fwd_bench: both halves of the 8 points, 10 calls back to back, added to the file; a half that
# fails or runs past its time gives a non-zero status.
printf '#!/bin/sh\necho "$*"\n' > "$OUT/fakebin/fs" && chmod +x "$OUT/fakebin/fs"
echo "before" > "$OUT/fwd.txt"
fwd_bench "$OUT/fakebin/fs" "$OUT/fwd.txt" 5; expect "fwd_bench passes when both halves pass" 0 $?
expect "fwd_bench adds the non-causal and the causal half" \
  "before|bench-gpu --tensor-cores --dtype bf16 --n 4096 16384 --d 64 128 --no-sweep --back-to-back 10|bench-gpu --tensor-cores --dtype bf16 --n 4096 16384 --d 64 128 --no-sweep --back-to-back 10 --causal" \
  "$(paste -sd'|' "$OUT/fwd.txt")"
printf '#!/bin/sh\ncase "$*" in *causal*) exit 4 ;; esac\n' > "$OUT/fakebin/fs" && chmod +x "$OUT/fakebin/fs"
fwd_bench "$OUT/fakebin/fs" "$OUT/fwd2.txt" 5; expect "fwd_bench fails when a half fails" 4 $?
dev_gpu_env > /dev/null 2>&1
expect "the environment requires the GPU" 1 "$FLASHSTEP_REQUIRE_GPU"
[ "$bad" -eq 0 ] && echo "device lib ok"
exit "$bad"
