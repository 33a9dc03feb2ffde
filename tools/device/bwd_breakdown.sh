#!/usr/bin/env bash
# Where one backward call's time goes between its kernels, flashstep's default beside PyTorch's
# cuDNN backward: every kernel launch with its duration (Nsight Compute's gpu__time_duration, clocks
# not locked, one metric: each launch replayed once), bf16, B = 16, H = 16, N = 4096, d = HD,
# non-causal, the shape bench-gpu --backward --tensor-cores times. flashstep's dQ accumulator is
# zeroed by cudaMemsetAsync, which is no kernel: its bytes are printed beside the table.
# Run from the repository root on the GPU machine:  HD=128 bash tools/device/bwd_breakdown.sh BIN OUT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
HD=${HD:-128}
M=(--clock-control none --metrics gpu__time_duration.sum --csv)
timeout 240 ncu "${M[@]}" --launch-skip 0 --launch-count 40 "$FS" bench-gpu --backward --tensor-cores --no-fp32 \
  --n 4096 --d "$HD" --reps 20 --warmup 1 --back-to-back 1 > "$OUT/flashstep.csv" 2> "$OUT/flashstep.err"
echo "flashstep rc=$?"
cat > "$OUT/cudnn_fwd_bwd.py" <<PY
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(16, 16, 4096, $HD, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(3):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        torch.autograd.grad(o, (q, k, v), torch.ones_like(o))
torch.cuda.synchronize()
PY
timeout 240 ncu "${M[@]}" --target-processes all --launch-skip 0 --launch-count 60 python3 "$OUT/cudnn_fwd_bwd.py" \
  > "$OUT/cudnn.csv" 2> "$OUT/cudnn.err"
echo "cudnn rc=$?"
python3 - "$OUT/flashstep.csv" "$OUT/cudnn.csv" <<'PY' | tee "$OUT/table.txt"
import csv, sys
scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
for path in sys.argv[1:]:
    rows = [r for r in csv.reader(l for l in open(path) if l.startswith('"'))]
    if not rows:
        print(path, ": no kernels"); continue
    head, body = rows[0], rows[1:]
    at = {h: k for k, h in enumerate(head)}
    print(f"== {path}: launch, grid, us, kernel")
    for r in body:
        if r[at["Metric Name"]] != "gpu__time_duration.sum":
            continue
        us = float(r[at["Metric Value"]].replace(",", "")) * scale.get(r[at["Metric Unit"]], 1.0)
        print(f"{r[at['ID']]:>4} {r[at['Grid Size']]:>16} {us:10.1f}  {r[at['Kernel Name']][:110]}")
PY
echo "flashstep's dQ accumulator, zeroed by cudaMemsetAsync each call: $((16 * 16 * 4096 * HD * 4)) B"
