#!/usr/bin/env bash
# One fuzz target for CI (.ci/run runs them side by side, one per core): replay its seed corpus
# as regression tests, then fuzz it for SECONDS s. New inputs go to build-asan/corpus-TARGET, not
# into the repository. The output goes to build-asan/fuzz-TARGET.log and is printed whole when the
# target ends, so that targets running at the same time do not mix their lines.
# Usage: .ci/fuzz-one.sh TARGET SECONDS    (from the repository root, after the sanitizer build)
set -uo pipefail
target=${1:?usage: fuzz-one.sh TARGET SECONDS} seconds=${2:?usage: fuzz-one.sh TARGET SECONDS}
bin=./build-asan/tests/fuzz/fuzz_$target corpus=tests/fuzz/corpus/$target work=build-asan/corpus-$target
log=build-asan/fuzz-$target.log
mkdir -p "$work"
echo "fuzz_$target: replaying $corpus" > "$log"
"$bin" "$corpus"/* >> "$log" 2>&1 &&
  echo "fuzz_$target: fuzzing for $seconds s" >> "$log" &&
  "$bin" -max_total_time="$seconds" -rss_limit_mb=4096 -artifact_prefix="build-asan/crash-$target-" \
    "$work" "$corpus" >> "$log" 2>&1
status=$?
cat "$log"
[ "$status" -eq 0 ] || echo "fuzz_$target: FAILED (exit $status)"
exit "$status"
