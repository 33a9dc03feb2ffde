#!/usr/bin/env bash
# A ladder build's tests on the GPU (gpu/ladder/, -DFLASHSTEP_LADDER=ON), all in parallel, with
# FLASHSTEP_REQUIRE_GPU=1 (a test that would skip fails). BIN holds the ladder build's binaries.
#   fwd       flashstep_tc_tests' forward cases but [persistent] for every rung (1-43 and the Bc
#             sweep's 101-104), in 8 processes by FLASHSTEP_TC_VARIANTS (FWD_GROUPS: which of the 8)
#   persist   the [persistent] case (its float64 references dominate: CPU-bound) in 16 processes
#   bwd       every backward configuration (1-12) in two processes by FLASHSTEP_TC_BWD_VARIANTS
#   fp8       the FP8 forward's tests;  gpu  flashstep_gpu_tests whole;  ladder  flashstep_ladder_tests
# Usage (repository root): [PARTS="fwd persist bwd fp8 gpu ladder"] [SECS=480] bash tools/device/ladder_tests.sh BIN OUT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
SECS=${SECS:-480}
PARTS=${PARTS:-fwd persist bwd fp8 gpu ladder}
FWD_GROUPS=${FWD_GROUPS:-0 1 2 3 4 5 6 7}
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
rungs=$(seq 1 43; seq 101 104)
shard() { echo $rungs | tr ' ' '\n' | awk -v k="$1" -v n="$2" 'NR % n == k' | paste -sd,; }
if has fwd; then
  for k in $FWD_GROUPS; do
    FLASHSTEP_TC_VARIANTS=$(shard $k 8) catch2 "$OUT/fwd_$k.log" timeout "$SECS" "$BIN/flashstep_tc_tests" \
      "[tc]~[tc_backward]~[fp8]~[persistent]" &
    echo "fwd_$k: rungs $(shard $k 8)" >> "$OUT/groups.txt"
  done
fi
if has persist; then
  for k in $(seq 0 15); do
    FLASHSTEP_TC_VARIANTS=$(shard $k 16) catch2 "$OUT/persist_$k.log" timeout "$SECS" "$BIN/flashstep_tc_tests" "[persistent]" &
    echo "persist_$k: rungs $(shard $k 16)" >> "$OUT/groups.txt"
  done
fi
if has bwd; then
  FLASHSTEP_TC_BWD_VARIANTS=1,3,5,7,9,11 catch2 "$OUT/bwd_0.log" timeout "$SECS" "$BIN/flashstep_tc_tests" "[tc_backward]" &
  FLASHSTEP_TC_BWD_VARIANTS=2,4,6,8,10,12 catch2 "$OUT/bwd_1.log" timeout "$SECS" "$BIN/flashstep_tc_tests" "[tc_backward]" &
fi
has fp8 && { catch2 "$OUT/fp8.log" timeout "$SECS" "$BIN/flashstep_tc_tests" "[fp8]" & }
has gpu && { catch2 "$OUT/gpu.log" timeout "$SECS" "$BIN/flashstep_gpu_tests" & }
has ladder && { catch2 "$OUT/ladder.log" timeout "$SECS" "$BIN/flashstep_ladder_tests" & }
wait
for f in "$OUT"/*.log; do
  S+=("$(basename "$f" .log): $(catch2_line "$f") $(grep -m1 -A4 FAILED "$f" | tr -s ' \n' ' ' | cut -c1-160)")
done
S+=("total $(($(date +%s) - T0)) s")
printf '%s\n' "${S[@]}" | tee "$OUT/summary.txt"
