#!/usr/bin/env bash
# PyTorch's cuDNN attention kernel under Nsight Compute, beside a flashstep rung, at one shape
# (bf16, N = 4096, B x H = 32, non-causal, d = HD): one launch of each, the same sections as
# fa3_ladder.sh's profile (pipes, issue, warp stalls) plus the launch shape (grid, block,
# registers, shared memory). What the reference kernel does differently, in numbers.
# Run from the repository root on the GPU machine:
#   HD=64 RUNG=21 bash tools/device/ncu_cudnn.sh BIN OUT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
HD=${HD:-64}
RUNG=${RUNG:-21}
SECTIONS=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats
          --section LaunchStats --section Occupancy --page raw)
timeout 120 ncu --clock-control none --target-processes all -k regex:'sdpa|fmha|flash|attn' --launch-skip 3 --launch-count 1 \
  "${SECTIONS[@]}" python3 gpu/tools/sdpa_bench.py --backend cudnn --ns 4096 --ds "$HD" > "$OUT/raw_cudnn.txt" 2>&1
rc_c=$?
timeout 60 ncu --clock-control none -k regex:fa3_kernel --launch-skip 2 --launch-count 1 "${SECTIONS[@]}" \
  "$BIN/flashstep_tc_bench" --no-verify --no-standard --variants "$RUNG" --ds "$HD" --ns 4096 --dtypes bf16 --causal off \
  --reps 1 --warmup 2 > "$OUT/raw_v$RUNG.txt" 2>&1
rc_v=$?
pick() {
  grep -E "gpu__time_duration.sum|smsp__issue_active.avg.pct|sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active|sm__inst_executed_pipe_(xu|fma|alu).avg.pct_of_peak_sustained_active|smsp__average_warps_issue_stalled_(wait|barrier|long_scoreboard|short_scoreboard|mio_throttle|math_pipe_throttle|gmma|dispatch_stall|not_selected)_per_issue_active|smsp__warps_active.avg.per_cycle_active|launch__block_size|launch__grid_size|launch__registers_per_thread|launch__shared_mem_per_block_dynamic|launch__occupancy_limit|smsp__inst_executed.sum " "$1" |
    awk '{print $1, $NF}'
}
{
  echo "cuDNN (rc=$rc_c): $(grep -m1 -oE '[A-Za-z0-9_]*(sdpa|fmha|flash|attn)[A-Za-z0-9_]*' "$OUT/raw_cudnn.txt" | head -1)"
  pick "$OUT/raw_cudnn.txt"
  echo "flashstep v$RUNG (rc=$rc_v):"
  pick "$OUT/raw_v$RUNG.txt"
  [ $rc_c = 0 ] || tail -5 "$OUT/raw_cudnn.txt"
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
