#!/usr/bin/env bash
# Where the forward default and cuDNN's forward spend their instructions and their shared-memory
# traffic, per launch (Nsight Compute, one launch each, --clock-control none), bf16, non-causal,
# N = 4096, 32 heads, d = 64 and 128: warp instructions in all and by pipe (FMA, ALU, XU, LSU,
# uniform), shared-memory bank reads and writes, L2 sectors read, the tensor pipe's active
# cycles, the time. At the board's power limit the kernel that draws less power for the same work
# runs at the higher clock (gpu/ladder/notes/tensor-cores.md, "The forward at 256 heads"); these
# counts are where the difference in work would show.
# Usage, from the repository root on the GPU machine: bash tools/device/fwd_counters.sh BIN OUT
set -u
source tools/device/lib.sh
dev_setup "$0" "$@"
M=gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum,sm__inst_executed_pipe_fma.sum
M=$M,sm__inst_executed_pipe_alu.sum,sm__inst_executed_pipe_xu.sum,sm__inst_executed_pipe_lsu.sum
M=$M,sm__inst_executed_pipe_uniform.sum,l1tex__data_bank_reads.sum,l1tex__data_bank_writes.sum
M=$M,lts__t_sectors_op_read.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
for d in 64 128; do
  timeout 120 ncu --clock-control none -k regex:fa3_kernel --launch-skip 3 --launch-count 1 --csv --metrics "$M" \
    "$FS" bench-gpu --tensor-cores --dtype bf16 --no-standard --no-sweep --n 4096 --d $d --reps 20 --warmup 1 \
    --back-to-back 1 > "$OUT/ncu_flashstep_d$d.csv" 2> "$OUT/ncu_flashstep_d$d.err"
  say "ncu flashstep d $d: rc=$?"
  timeout 120 ncu --clock-control none -k regex:'sdpa|fprop' --launch-skip 3 --launch-count 1 --csv --metrics "$M" \
    python3 gpu/tools/cudnn_fwd_launch.py 131072 4096 $d > "$OUT/ncu_cudnn_d$d.csv" 2> "$OUT/ncu_cudnn_d$d.err"
  say "ncu cuDNN d $d: rc=$?"
done
python3 - "$OUT" <<'PY' | tee -a "$OUT/summary.txt"
import os, sys
import ncu_csv
out = sys.argv[1]
def read(path):
    try:
        return {k: ncu_csv.number(v) for k, (v, _) in ncu_csv.read(path)[1].items()}
    except Exception as e:
        print(f"{os.path.basename(path)}: no metrics ({e})")
        return {}
for d in (64, 128):
    a, b = read(f"{out}/ncu_flashstep_d{d}.csv"), read(f"{out}/ncu_cudnn_d{d}.csv")
    print(f"d = {d}, N = 4096, 32 heads, non-causal: metric | flashstep | cuDNN | flashstep / cuDNN")
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k, float("nan")), b.get(k, float("nan"))
        print(f"  {k:62s} {x:16.4g} {y:16.4g} {x / y if y else float('nan'):8.3f}")
PY
