# Shell helpers shared by the decode device scripts (decode_paged_device.sh, decode_tma_device.sh):
# source it after setting BIN and OUT.
#   decode_device_setup         FS, T (the binaries), the test environment, OUT/gpu.txt, $start
#   start_decode_tests SECS     the GPU tests [paged],[variants] and the other [decode] tests, side
#                               by side in the background, each under `timeout SECS`, into
#                               OUT/tests_paged_variants.log, OUT/tests_decode.log ($pid_pv, $pid_dec)
#   run_verify_list FILE SECS   runs `flashstep verify --schedule decode ARGS` for each entry of
#                               the array VERIFY, each under `timeout SECS`, into FILE
#                               ("== verify ..." then the output then "rc=N" per entry)
#   verdict RC, cases LOG       PASS / FAIL(rc=N); a Catch2 log's last count line
#   check_line WHAT RESULT FIG  one summary line (columns $CHECK_WIDTH wide, default 46)
#   verify_lines FILE           a check_line per entry of run_verify_list's FILE: the options,
#                               PASS/FAIL, the kernel and S, the final errors, paged==unpaged
#   points FILE                 the rows of a bench-gpu --decode table or sweep in FILE
#   sanitized LOG               compute-sanitizer's summary line in LOG
#   summary_head NAME WHAT      a summary's first lines: NAME, the GPU and the times, the column
#                               header, the two test lines of start_decode_tests (WHAT: the
#                               variants the [paged],[variants] tests cover)
#   PYTHONPATH                  holds gpu/tools, for the summaries' `from decode_json import load`
decode_device_setup() {
  mkdir -p "$OUT"
  FS=$BIN/flashstep
  T=$BIN/flashstep_gpu_tests
  export FLASHSTEP_REQUIRE_GPU=${FLASHSTEP_REQUIRE_GPU:-1}
  export FLASHSTEP_GOLDEN_DIR=${FLASHSTEP_GOLDEN_DIR:-$PWD/tests/golden}
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/gpu.txt" 2>&1
  start=$(date +%s)
  export PYTHONPATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
}
start_decode_tests() {
  timeout "$1" "$T" "[paged],[variants]" > "$OUT/tests_paged_variants.log" 2>&1 &
  pid_pv=$!
  timeout "$1" "$T" "[decode]~[paged]~[variants]" > "$OUT/tests_decode.log" 2>&1 &
  pid_dec=$!
}
run_verify_list() {
  local file=$1 secs=$2 args
  for args in "${VERIFY[@]}"; do
    echo "== verify --schedule decode $args"
    timeout "$secs" "$FS" verify --schedule decode $args; echo "rc=$?"
  done > "$file" 2>&1
}
verdict() { [ "$1" = 0 ] && echo PASS || echo "FAIL(rc=$1)"; }
cases() { grep -E "^(All tests passed|test cases:)" "$1" | tail -1; }
check_line() { printf "%-${CHECK_WIDTH:-46}s %-11s %s\n" "$1" "$2" "$3"; }
verify_lines() {
  local n=0 line what fig
  while read -r line; do
    case "$line" in
      "== verify"*) what=${line#== verify --schedule decode }; n=$((n + 1)) ;;
      rc=*) fig=$(awk -v k="$what" 'index($0, "== verify --schedule decode " k) {f=1; next}
                   f && /split kernel variant/ {match($0, /variant [0-9]+\), S = [0-9]+/); v = substr($0, RSTART, RLENGTH); gsub(/\),/, "", v)}
                   f && /^final/ {fin = sprintf("O rel %s lse rel %s %s", $9, $14, $15)}
                   f && /^paged/ {pg = "; paged==unpaged " $NF}
                   f && /^rc=/ {printf "%s", fin != "" ? v "; " fin pg : substr(last, 1, 70); exit} f {last=$0}' "$1")
            check_line "verify $n: $what" "$(verdict ${line#rc=})" "$fig" ;;
    esac
  done < "$1"
}
points() { grep -cE '^ +[0-9]+ +(64|128) ' "$1" 2>/dev/null; }
sanitized() { grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$1" | tail -1; }
summary_head() {
  echo "$1: $(head -1 "$OUT/gpu.txt"), correctness ${t_correct} s, total $(( $(date +%s) - start )) s"
  check_line "check" "result" "figure"
  check_line "tests [paged],[variants] ($2)" "$(verdict $rc_pv)" "$(cases "$OUT/tests_paged_variants.log")"
  check_line "tests [decode] (default variant)" "$(verdict $rc_dec)" "$(cases "$OUT/tests_decode.log")"
}
