#!/usr/bin/env bash
# Several new backward rungs in one device call, from a ladder build (BIN: its flashstep and
# flashstep_tc_tests): each rung's checks alone on the GPU (bwd_pipe.sh with BENCH=0: its
# [bwd_wgmma] tests, four verifies, dK and dV against v9's bit for bit, the four compute-sanitizer
# tools), then their speed beside the default of their d in one table per d (bwd_pipe.sh with
# CHECKS=0; PyTorch's side left out), and the summaries last.
# Usage (repository root): NEW128="37 38 40" NEW64="39" bash tools/device/bwd_rungs.sh BIN OUT
# (BTB: calls back to back per timed sample, 3 by default; the defaults are 29 and 26. MANY_OF: the
# rungs whose sanitizer runs also cover more tiles than SMs, bwd_pipe.sh's MANY; 38-40 by default.)
set -u
BIN=${1:?usage: bwd_rungs.sh BIN OUT}
OUT=${2:?usage: bwd_rungs.sh BIN OUT}
mkdir -p "$OUT"
here=$(dirname "${BASH_SOURCE[0]}")
T0=$(date +%s)
many() { case " ${MANY_OF:-38 39 40} " in *" $1 "*) echo 1 ;; *) echo 0 ;; esac; }  # the persistent rungs
for v in ${NEW128:-}; do
  MANY=$(many $v) BENCH=0 SDPA=0 DS=128 NEW=$v bash "$here/bwd_pipe.sh" "$BIN" "$OUT/v$v" > "$OUT/v$v.log" 2>&1
done
for v in ${NEW64:-}; do
  MANY=$(many $v) BENCH=0 SDPA=0 DS=64 SAN_NQ64=700 NEW=$v bash "$here/bwd_pipe.sh" "$BIN" "$OUT/v$v" > "$OUT/v$v.log" 2>&1
done
[ -n "${NEW128:-}" ] && CHECKS=0 SDPA=0 DS=128 VARIANTS="29 $NEW128" BTB=${BTB:-3} \
  bash "$here/bwd_pipe.sh" "$BIN" "$OUT/b128" > "$OUT/b128.log" 2>&1
[ -n "${NEW64:-}" ] && CHECKS=0 SDPA=0 DS=64 VARIANTS="26 $NEW64" BTB=${BTB:-3} \
  bash "$here/bwd_pipe.sh" "$BIN" "$OUT/b64" > "$OUT/b64.log" 2>&1
{
  for v in ${NEW128:-} ${NEW64:-}; do
    echo "== checks of $v"
    grep -E '^(tests|verify|dK, dV|memcheck|racecheck|synccheck|initcheck|correctness)' "$OUT/v$v/summary.txt" 2>/dev/null ||
      echo "no summary (see $OUT/v$v.log)"
  done
  for d in 128 64; do
    [ -f "$OUT/b$d/summary.txt" ] && { echo "== speed at d = $d"; grep -vE '^bench v' "$OUT/b$d/summary.txt"; }
  done
  echo "total $(($(date +%s) - T0)) s"
} | tee "$OUT/summary.txt"
