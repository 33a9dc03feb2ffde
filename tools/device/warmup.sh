#!/usr/bin/env bash
# Does the warm-up by GPU time (gpu/common.cuh's warmup_ms, FLASHSTEP_WARMUP_MS) remove the two
# order effects seen in `bench-gpu --decode`? Each command runs twice, with the warm-up by count
# alone (FLASHSTEP_WARMUP_MS=0, as before) and with the default 25 ms:
#   1. `bench-gpu --decode --read-streams`: the read roof, measured first after the copy, against
#      the same stream shape timed again in the table ("bulk 16K x6 (the read roof)");
#   2. `bench-gpu --decode --d 128 --heads 32 256 --nk 262144 16384`: the row after Nk = 262144's
#      (B x H = 256, Nk = 16384), whose first column ran 12-14% slower than in a fresh process;
#   3. that row alone in a fresh process, for reference.
# Run from the repository root on the GPU machine: bash tools/device/warmup.sh BIN OUT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
S=()
for w in 0 25; do
  FLASHSTEP_WARMUP_MS=$w timeout 40 "$BIN/flashstep" bench-gpu --decode --read-streams --reps 20 > "$OUT/streams_w$w.txt" 2>&1
  S+=("read streams, warm-up $w ms: rc=$?")
  FLASHSTEP_WARMUP_MS=$w timeout 60 "$BIN/flashstep" bench-gpu --decode --d 128 --heads 32 256 --nk 262144 16384 \
    > "$OUT/table_w$w.txt" 2>&1
  S+=("decode table, warm-up $w ms: rc=$?")
  FLASHSTEP_WARMUP_MS=$w timeout 40 "$BIN/flashstep" bench-gpu --decode --d 128 --heads 256 --nk 16384 > "$OUT/alone_w$w.txt" 2>&1
  S+=("B x H 256, Nk 16384 alone, warm-up $w ms: rc=$?")
done
S+=("total $(($(date +%s) - T0)) s")
{
  printf '%s\n' "${S[@]}"
  for w in 0 25; do
    echo "== warm-up $w ms (0: the count alone, 3 runs)"
    grep -E "read roof" "$OUT/streams_w$w.txt" | head -1
    grep -E "^bulk 16K x6 \(the read roof\)" "$OUT/streams_w$w.txt"
    echo "decode table (Nk d BxH Bc v S | decode ms GB/s %copy %roof | S=1 ms GB/s | fa2 ms GB/s):"
    grep -E "^ +[0-9]+ +128 " "$OUT/table_w$w.txt"
    echo "alone:"
    grep -E "^ +[0-9]+ +128 " "$OUT/alone_w$w.txt"
  done
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
