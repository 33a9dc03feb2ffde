#!/usr/bin/env bash
# One device call for the forward with K/V shared by the two blocks of a cluster (kPairKv, TMA
# multicast; ladder rung 46 = the default 45 with it, gpu/ladder/fa3_rungs.cu; BIN is a build
# with -DFLASHSTEP_LADDER=ON):
#   1. correctness, in parallel, of each rung in CHECK (default 46): its [tc] tests
#      (FLASHSTEP_TC_VARIANTS; their persistent shapes run the pair path at both d, with heads that
#      keep 0 keys), verifies against the CPU emulation (paired and fallback shapes), and the four
#      compute-sanitizer tools on a paired verify at d = 64 and at d = 128;
#   2. speed, alone on the GPU, ROUNDS rounds alternating 45, the rungs in RUNGS (default 46; 47
#      and 48 tell the cost of the cluster-scope fences and of the coupling, 49 and 50 what a third
#      K/V stage is worth paired and not, 51 and 52 K_j issued before V_j-1 unpaired and paired) and cuDNN (bench-gpu --variant,
#      gpu/tools/sdpa_bench.py; bf16, 10 calls back to back per sample on both sides) at N = 4096
#      and 16384, d = 64 and 128, non-causal (B x H x N = 131072, H = 8), and at 256 heads of
#      N = 4096, d = 128;
#   3. the board's clock and power for 45, the rungs in RUNGS and cuDNN at d = 128, N = 4096, 32 heads, 300 calls
#      back to back (nvidia-smi every 50 ms);
#   4. the summary: one line per check, then the medians and ratios.
# Usage, from the repository root on the GPU machine:
#   ROUNDS=3 [RUNGS="46 47 48"] [CHECK="46"] bash tools/device/fwd_pair.sh BIN OUT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
ROUNDS=${ROUNDS:-3}
CHECK=${CHECK:-46}

# ---- 1. correctness ----
start_rung_tests 150 $CHECK
verify_case() {  # verify_case RUNG TAG ARGS...: one verify of RUNG into $OUT/verify_vRUNG_TAG.txt
  local v=$1 tag=$2; shift 2
  (timeout 60 $FS verify --schedule fa2 --tensor-cores --variant $v "$@"; echo "rc=$?") > "$OUT/verify_v${v}_$tag.txt" 2>&1 &
}
for v in $CHECK; do
  # Paired: an even number of Q blocks (Br 128 at d = 128, 192 at d = 64), not causal.
  verify_case $v p128 --dtype bf16 --p-dtype bf16 --nq 512 --nk 1000 --d 128
  verify_case $v p128kv --dtype fp16 --p-dtype fp16 --nq 1024 --nk 777 --d 128 --kv-len 500
  verify_case $v p64 --dtype bf16 --p-dtype bf16 --nq 768 --nk 517 --d 64
  verify_case $v p64kv --dtype fp16 --p-dtype fp16 --nq 384 --nk 1030 --d 64 --kv-len 200
  # The fallback to 45: an odd number of Q blocks, and causal.
  verify_case $v odd128 --dtype bf16 --p-dtype bf16 --nq 300 --nk 517 --d 128
  verify_case $v causal64 --dtype bf16 --p-dtype bf16 --nq 384 --nk 600 --d 64 --causal
done
wait
for t in memcheck racecheck synccheck initcheck; do
  extra=""
  [ $t = racecheck ] && extra="--racecheck-report all"
  for v in $CHECK; do
    V="$FS verify --schedule fa2 --tensor-cores --variant $v"
    (timeout 100 compute-sanitizer --tool $t $extra --error-exitcode 9 $V --dtype bf16 --p-dtype bf16 --nq 256 --nk 450 --d 128;
      echo "rc=$?") > "$OUT/san_v${v}_${t}_d128.log" 2>&1 &
    (timeout 100 compute-sanitizer --tool $t $extra --error-exitcode 9 $V --dtype fp16 --p-dtype fp16 --nq 384 --nk 300 --d 64;
      echo "rc=$?") > "$OUT/san_v${v}_${t}_d64.log" 2>&1 &
  done
  wait
done
S+=("correctness phase: $(($(date +%s) - T0)) s")
declare -A OK
for v in $CHECK; do rung_verdict $v "$OUT"/verify_v${v}_*.txt; done
for f in "$OUT"/verify_*.txt; do
  S+=("$(basename "$f" .txt): $(tail -1 "$f") | $(grep -m1 -iE 'max|pass|fail' "$f" | cut -c1-110)")
done
for f in "$OUT"/san_*.log; do
  S+=("$(basename "$f" .log): $(tail -1 "$f") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$f" | tail -1)")
done

# ---- 2. speed ----
for r in $(seq 1 "$ROUNDS"); do
  for v in 45 ${RUNGS:-46}; do
    timeout 60 "$FS" bench-gpu --tensor-cores --dtype bf16 --no-standard --no-sweep --variant $v --n 4096 16384 --d 64 128 \
      > "$OUT/b${v}_$r.txt" 2>&1 || S+=("round $r v$v: rc=$?")
    timeout 60 "$FS" bench-gpu --tensor-cores --dtype bf16 --no-standard --no-sweep --variant $v --n 4096 --d 128 \
      --rows 1048576 > "$OUT/b${v}_h256_$r.txt" 2>&1 || S+=("round $r v$v 256 heads: rc=$?")
  done
  timeout 60 python3 gpu/tools/sdpa_bench.py --backend cudnn --ns 4096,16384 --ds 64,128 > "$OUT/cudnn_$r.txt" 2>&1 ||
    S+=("round $r cuDNN: rc=$?")
  timeout 60 python3 gpu/tools/sdpa_bench.py --backend cudnn --ns 4096 --ds 128 --rows 1048576 \
    > "$OUT/cudnn_h256_$r.txt" 2>&1 || S+=("round $r cuDNN 256 heads: rc=$?")
done

# ---- 3. clock and power ----
sample() {  # sample TAG CMD...
  nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 50 > "$OUT/$1.smi" &
  local smi=$! tag=$1
  shift
  timeout 120 "$@" > "$OUT/$tag.txt" 2>&1
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  sleep 2
}
for v in 45 ${RUNGS:-46}; do
  sample "pw_v$v" "$FS" bench-gpu --tensor-cores --dtype bf16 --no-standard --no-sweep --variant $v --n 4096 --d 128 --back-to-back 300
done
sample pw_cudnn python3 gpu/tools/sdpa_bench.py --backend cudnn --ns 4096 --ds 128 --back-to-back 300
S+=("total $(($(date +%s) - T0)) s")

# ---- 4. summary ----
{
  cat "$OUT/gpu.txt"
  printf '%s\n' "${S[@]}"
  python3 "$DEV_LIB_DIR/fwd_pair_table.py" "$OUT" "$ROUNDS" 45 ${RUNGS:-46}
} | tee "$OUT/summary.txt"
