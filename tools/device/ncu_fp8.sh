#!/usr/bin/env bash
# The FP8 forward's kernel beside the bf16 default's under Nsight Compute (non-causal, N = 16384,
# B x H = 8 as bench-gpu times them, d = 128 and d = 64): one launch of each, the pipes, issue,
# warp stalls and the launch shape, side by side (tools/device/ncu_compare.py). Where the FP8
# forward's time goes when its products take half the bf16 time.
# Run from the repository root on the GPU machine:  bash tools/device/ncu_fp8.sh BIN OUT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
SECTIONS=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
          --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy
          --section InstructionStats --page raw)
for d in 128 64; do
  timeout 120 ncu --clock-control none -k regex:'fp8_kernel' --launch-skip 1 --launch-count 1 "${SECTIONS[@]}" \
    "$FS" bench-gpu --tensor-cores --dtype fp8 --no-sweep --n 16384 --d $d --reps 20 --warmup 1 --back-to-back 1 > "$OUT/raw_fp8_d$d.txt" 2>&1
  rc8=$?
  timeout 120 ncu --clock-control none -k regex:'fa3_kernel' --launch-skip 1 --launch-count 1 "${SECTIONS[@]}" \
    "$FS" bench-gpu --tensor-cores --dtype bf16 --no-sweep --n 16384 --d $d --reps 20 --warmup 1 --back-to-back 1 > "$OUT/raw_bf16_d$d.txt" 2>&1
  rcb=$?
  {
    echo "d = $d: fp8 rc=$rc8, bf16 rc=$rcb (N = 16384, B x H = 8, non-causal)"
    python3 tools/device/ncu_compare.py fp8="$OUT/raw_fp8_d$d.txt" bf16="$OUT/raw_bf16_d$d.txt"
  } >> "$OUT/summary.txt"
done
cat "$OUT/summary.txt"
