#!/usr/bin/env bash
# The backward's default kernel and PyTorch's cuDNN backward under Nsight Compute, instruction by
# instruction: for one launch of each (bf16, N = 4096, d = HD, non-causal; flashstep at B = 16,
# H = 16 as bench-gpu times it, cuDNN at B x H = 32) the SASS with each instruction's executed
# count and warp-stall samples (ncu's source page), and the kernel's stall totals. Where the time
# of a step goes (a barrier, a wait for a product, the block's start and end), and how the two
# kernels' instruction mixes differ: tools/device/sass_profile.py reads the CSV files.
# Run from the repository root on the GPU machine:  HD=128 bash tools/device/ncu_bwd_source.sh BIN OUT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
HD=${HD:-128}
SECTIONS=(--section SourceCounters --section WarpStateStats --section InstructionStats --section LaunchStats
          --section SpeedOfLight)
# export NAME REPORT: the source page (SASS with counters) and the raw metrics of every kernel in it.
export_report() {
  ncu -i "$2.ncu-rep" --page source --print-source sass --csv > "$OUT/$1_source.csv" 2> "$OUT/$1_source.err" ||
    ncu -i "$2.ncu-rep" --page source --csv > "$OUT/$1_source.csv" 2>> "$OUT/$1_source.err"
  ncu -i "$2.ncu-rep" --page raw --csv > "$OUT/$1_raw.csv" 2> "$OUT/$1_raw.err"
  say "$1: report $(du -k "$2.ncu-rep" | cut -f1) KiB, source page $(wc -l < "$OUT/$1_source.csv") lines"
}
timeout 240 ncu --clock-control none --target-processes all -k regex:'bprop|bwd|backward|dgrad|dq|dkdv' \
  --launch-skip 0 --launch-count 4 "${SECTIONS[@]}" -f -o /tmp/ncu_cudnn python3 tools/device/cudnn_bwd_once.py "$HD" \
  > "$OUT/ncu_cudnn.log" 2>&1
say "cuDNN under ncu: rc=$?"
export_report cudnn /tmp/ncu_cudnn
timeout 240 ncu --clock-control none -k regex:'fa2_bwd_(wgmma|pipe|ws)_kernel' --launch-skip 1 --launch-count 1 \
  "${SECTIONS[@]}" -f -o /tmp/ncu_flashstep "$FS" bench-gpu --backward --tensor-cores --no-fp32 --n 4096 --d "$HD" \
  --reps 20 --warmup 1 --back-to-back 1 ${VARIANT:+--variant $VARIANT} > "$OUT/ncu_flashstep.log" 2>&1
say "flashstep under ncu: rc=$?"
export_report flashstep /tmp/ncu_flashstep
python3 tools/device/sass_profile.py flashstep="$OUT/flashstep_source.csv:256" cuDNN="$OUT/cudnn_source.csv:32" > "$OUT/profile.txt" 2>&1
say "sass_profile.py: rc=$?"
say "total $(($(date +%s) - T0)) s"
