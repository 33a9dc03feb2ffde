# Shell helpers shared by the decode device scripts, on top of lib.sh (decode_paged.sh, decode_tma.sh):
# source it after setting BIN and OUT.
#   decode_device_setup         FS, T (the binaries), the test environment, OUT/gpu.txt, $start
#   start_decode_tests SECS     the GPU tests [paged],[variants] and the other [decode] tests, side
#                               by side in the background, each under `timeout SECS`, into
#                               OUT/tests_paged_variants.log, OUT/tests_decode.log ($pid_pv, $pid_dec)
#   run_verify_list FILE SECS   runs `flashstep verify --schedule decode ARGS` for each entry of
#                               the array VERIFY, each under `timeout SECS`, into FILE
#                               ("== verify ..." then the output then "rc=N" per entry)
#   cases LOG                   a Catch2 log's count line (lib.sh's catch2_line)
#   check_line WHAT RESULT FIG  one summary line (columns $CHECK_WIDTH wide, default 46)
#   verify_lines FILE           a check_line per entry of run_verify_list's FILE: the options,
#                               PASS/FAIL, the kernel and S, the final errors, paged==unpaged
#   points FILE                 the rows of a bench-gpu --decode table or sweep in FILE
#   summary_head NAME WHAT      a summary's first lines: NAME, the GPU and the times, the column
#                               header, the two test lines of start_decode_tests (WHAT: the
#                               variants the [paged],[variants] tests cover)
# (verdict, sanitized and the environment come from lib.sh: FLASHSTEP_REQUIRE_GPU=1, PYTHONPATH
# holding tools/device for the summaries' `from decode_json import load`.)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
decode_device_setup() {
  mkdir -p "$OUT"
  FS=$BIN/flashstep
  T=$BIN/flashstep_gpu_tests
  dev_libs
  dev_gpu_env > "$OUT/gpu.txt"
  start=$(date +%s)
}
start_decode_tests() {
  catch2 "$OUT/tests_paged_variants.log" timeout "$1" "$T" "[paged],[variants]" &
  pid_pv=$!
  catch2 "$OUT/tests_decode.log" timeout "$1" "$T" "[decode]~[paged]~[variants]" &
  pid_dec=$!
}
run_verify_list() {
  local file=$1 secs=$2 args
  for args in "${VERIFY[@]}"; do
    echo "== verify --schedule decode $args"
    timeout "$secs" "$FS" verify --schedule decode $args; echo "rc=$?"
  done > "$file" 2>&1
}
cases() { catch2_line "$1"; }
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
summary_head() {
  echo "$1: $(head -1 "$OUT/gpu.txt"), correctness ${t_correct} s, total $(( $(date +%s) - start )) s"
  check_line "check" "result" "figure"
  check_line "tests [paged],[variants] ($2)" "$(verdict $rc_pv)" "$(cases "$OUT/tests_paged_variants.log")"
  check_line "tests [decode] (default variant)" "$(verdict $rc_dec)" "$(cases "$OUT/tests_decode.log")"
}
