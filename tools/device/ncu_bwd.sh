#!/usr/bin/env bash
# The backward's default kernel and PyTorch's cuDNN backward under Nsight Compute at one shape
# (bf16, N = 4096, d = HD, non-causal; flashstep at B = 16, H = 16 as bench-gpu times it, cuDNN at
# B x H = 32): one launch of each, the pipes, issue, warp stalls, memory and the launch shape.
# Where the backward's time goes, beside the kernel it is measured against.
# Run from the repository root on the GPU machine:  HD=128 [VARIANT=11] bash tools/device/ncu_bwd.sh BIN OUT
# (a ladder rung's VARIANT needs a ladder build's flashstep in BIN).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
HD=${HD:-128}
SECTIONS=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
          --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy
          --section InstructionStats --page raw)
timeout 200 ncu --clock-control none --target-processes all -k regex:'bprop|bwd|backward|dgrad|dq|dkdv' --launch-skip 0 \
  --launch-count 4 "${SECTIONS[@]}" python3 tools/device/cudnn_bwd_once.py "$HD" > "$OUT/raw_cudnn.txt" 2>&1
rc_c=$?
timeout 200 ncu --clock-control none -k regex:'fa2_bwd_(wgmma|pipe|ws)_kernel' --launch-skip 1 --launch-count 1 "${SECTIONS[@]}" \
  "$FS" bench-gpu --backward --tensor-cores --no-fp32 --n 4096 --d "$HD" --reps 20 --warmup 1 --back-to-back 1 \
  ${VARIANT:+--variant $VARIANT} > "$OUT/raw_flashstep.txt" 2>&1
rc_f=$?
{
  echo "cuDNN rc=$rc_c, flashstep rc=$rc_f (cuDNN at B x H = 32, flashstep at 256 heads: compare rates, not times)"
  python3 tools/device/ncu_compare.py cuDNN="$OUT/raw_cudnn.txt" flashstep="$OUT/raw_flashstep.txt"
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
