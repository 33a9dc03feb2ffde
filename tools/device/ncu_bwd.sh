#!/usr/bin/env bash
# The backward's default kernel and PyTorch's cuDNN backward under Nsight Compute at one shape
# (bf16, N = 4096, d = HD, non-causal; flashstep at B = 16, H = 16 as bench-gpu times it, cuDNN at
# B x H = 32): one launch of each, the pipes, issue, warp stalls, memory and the launch shape.
# Where the backward's time goes, beside the kernel it is measured against.
# Run from the repository root on the GPU machine:  HD=128 [VARIANTS="29 37"] bash tools/device/ncu_bwd.sh BIN OUT
# (VARIANTS: flashstep's backward configurations, one launch each, side by side; the build's
# default when unset; a ladder rung needs a ladder build's flashstep in BIN. CUDNN=0 leaves cuDNN out.)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
HD=${HD:-128}
SECTIONS=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
          --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats
          --section LaunchStats --section Occupancy --section InstructionStats --page raw)
COLS=() RCS=""
if [ "${CUDNN:-1}" != 0 ]; then
  timeout 200 ncu --clock-control none --target-processes all -k regex:'bprop|bwd|backward|dgrad|dq|dkdv' --launch-skip 0 \
    --launch-count 4 "${SECTIONS[@]}" python3 tools/device/cudnn_bwd_once.py "$HD" > "$OUT/raw_cudnn.txt" 2>&1
  RCS+="cuDNN rc=$? "; COLS+=(cuDNN="$OUT/raw_cudnn.txt")
fi
for v in ${VARIANTS:-default}; do
  timeout 200 ncu --clock-control none -k regex:'fa2_bwd_(wgmma|pipe|ws)_kernel' --launch-skip 1 --launch-count 1 "${SECTIONS[@]}" \
    "$FS" bench-gpu --backward --tensor-cores --no-fp32 --n 4096 --d "$HD" --reps 20 --warmup 1 --back-to-back 1 \
    $([ "$v" = default ] || echo "--variant $v") > "$OUT/raw_flashstep_$v.txt" 2>&1
  RCS+="flashstep $v rc=$? "; COLS+=("$v=$OUT/raw_flashstep_$v.txt")
done
{
  echo "$RCS(cuDNN at B x H = 32, flashstep at 256 heads: compare rates, not times)"
  python3 tools/device/ncu_compare.py "${COLS[@]}"
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
