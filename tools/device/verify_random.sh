#!/usr/bin/env bash
# `flashstep verify` on random shapes (verify_random.py), then the four compute-sanitizer tools
# on a few smaller random shapes of every GPU family, in one device call.
#   bash tools/device/verify_random.sh BIN OUT [SEED] [COUNT] [SAN_COUNT]
# BIN holds flashstep; SEED (default 1) picks the shapes, COUNT (default 60) verifies,
# SAN_COUNT (default 6) small shapes under each of memcheck, racecheck, synccheck, initcheck.
# Each case ends as PASS (exit 0), FAIL (exit 1: a tolerance broken), REFUSED (exit 2 with
# flashstep's one error line: a combination the product does not take) or CRASH (anything else,
# a timeout included). A sanitizer run is clean when its exit status is 0 (--error-exitcode 9).
# BUDGET (seconds, default 540) stops starting new cases; the summary is printed last and the
# exit status is 1 if any case failed or crashed.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "${1:-}" "${2:-}"
SEED=${3:-1}
COUNT=${4:-60}
SAN_COUNT=${5:-6}
BUDGET=${BUDGET:-540}
HERE=$(dirname "${BASH_SOURCE[0]}")
python3 "$HERE/verify_random.py" "$SEED" "$COUNT" > "$OUT/cases.tsv" || exit 2
python3 "$HERE/verify_random.py" "$((SEED + 1000))" "$SAN_COUNT" --small > "$OUT/san_cases.tsv" || exit 2

declare -A pass fail refused crash
bad=0
n=0
while IFS=$'\t' read -r fam flags; do
  n=$((n + 1))
  if [ $(( $(date +%s) - T0 )) -gt "$BUDGET" ]; then echo "budget reached at case $n"; break; fi
  log="$OUT/v$(printf %03d $n)_$fam.log"
  echo "$FS verify $flags" > "$log"
  # shellcheck disable=SC2086
  timeout 120 "$FS" verify $flags >> "$log" 2>&1 < /dev/null
  rc=$?
  case $rc in
    0) pass[$fam]=$(( ${pass[$fam]:-0} + 1 )); verdict=PASS ;;
    1) fail[$fam]=$(( ${fail[$fam]:-0} + 1 )); verdict=FAIL; bad=$((bad + 1)) ;;
    2) if grep -q '^flashstep: error:' "$log"; then
         refused[$fam]=$(( ${refused[$fam]:-0} + 1 )); verdict=REFUSED
       else
         crash[$fam]=$(( ${crash[$fam]:-0} + 1 )); verdict=CRASH; bad=$((bad + 1))
       fi ;;
    *) crash[$fam]=$(( ${crash[$fam]:-0} + 1 )); verdict=CRASH; bad=$((bad + 1)) ;;
  esac
  line="$verdict $fam $flags"
  [ "$verdict" = PASS ] || line="$line :: $(grep -v '^ ' "$log" | tail -1 | cut -c1-160)"
  echo "$line" | tee -a "$OUT/verdicts.txt"
done < "$OUT/cases.tsv"

san_bad=0
san_ok=0
m=0
while IFS=$'\t' read -r fam flags; do
  m=$((m + 1))
  for tool in memcheck racecheck synccheck initcheck; do
    if [ $(( $(date +%s) - T0 )) -gt "$BUDGET" ]; then break 2; fi
    log="$OUT/san$(printf %02d $m)_${fam}_$tool.log"
    # shellcheck disable=SC2086
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 "$FS" verify $flags > "$log" 2>&1 < /dev/null
    rc=$?
    summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1 | sed 's/=========//')
    if [ $rc -eq 0 ]; then san_ok=$((san_ok + 1)); else san_bad=$((san_bad + 1)); fi
    echo "$([ $rc -eq 0 ] && echo clean || echo "NOT CLEAN rc=$rc") $tool $fam $flags ::$summary" \
      | tee -a "$OUT/sanitizers.txt"
  done
done < "$OUT/san_cases.tsv"

{
  echo "verify on random shapes, seed $SEED ($(gpu_line))"
  printf '%-8s %5s %5s %8s %6s\n' family PASS FAIL REFUSED CRASH
  for fam in tc-fwd tc-bwd fp8-fwd decode fp8-dec fp32; do
    printf '%-8s %5s %5s %8s %6s\n' "$fam" "${pass[$fam]:-0}" "${fail[$fam]:-0}" \
      "${refused[$fam]:-0}" "${crash[$fam]:-0}"
  done
  echo "sanitizers on $m small random shapes: $san_ok clean, $san_bad not clean"
  echo "total $(( $(date +%s) - T0 )) s"
} | tee "$OUT/summary.txt"
[ $bad -eq 0 ] && [ $san_bad -eq 0 ]
