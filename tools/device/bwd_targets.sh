#!/usr/bin/env bash
# One device call for the tensor-core backward's targets at every point of the issue's grid:
# bf16, B = 16, H = 16, N = 4096 and 16384, d = 64 and 128, causal and not, the default variant
# (variant 0: wgmma v5 on sm_90), its backward and forward + backward TFLOP/s beside PyTorch's
# flash and cuDNN backends timed on the same shapes in the same call (gpu/tools/sdpa_bwd_bench.py).
# First two verifies of the default path (ragged causal bf16, fp16 with a key length).
# Usage (repository root): bash tools/device/bwd_targets.sh BIN OUT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
S=()
V="$FS verify --backward --tensor-cores"
timeout 40 $V --dtype bf16 --nq 517 --nk 300 --d 128 --causal > "$OUT/verify1.txt" 2>&1; r1=$?
timeout 40 $V --dtype fp16 --nq 333 --nk 333 --d 64 --kv-len 250 > "$OUT/verify2.txt" 2>&1; r2=$?
vline() { echo "rc=$2 $(grep -E '^(PASS|FAIL)' "$1" | head -1) | $(grep -iE 'variant|kernel' "$1" | head -1 | cut -c1-80)"; }
S+=("verify default bf16 517x300 d128 causal | $(vline "$OUT/verify1.txt" $r1)")
S+=("verify default fp16 333x333 d64 kv 250  | $(vline "$OUT/verify2.txt" $r2)")
: > "$OUT/bench.txt"
for c in "" "--causal"; do
  timeout 90 "$FS" bench-gpu --backward --tensor-cores --dtype bf16 --n 4096 16384 --d 64 128 --no-fp32 $c \
    --json-file "$OUT/bench${c:+_causal}.json" >> "$OUT/bench.txt" 2>&1
  S+=("bench-gpu --backward --tensor-cores ${c:-(non-causal)} | rc=$?")
done
timeout 150 python3 gpu/tools/sdpa_bwd_bench.py --dtype bf16 --ns 4096,16384 --ds 64,128 --causal both > "$OUT/sdpa.txt" 2>&1
S+=("sdpa_bwd_bench.py flash, cudnn | rc=$?")
python3 - "$OUT" <<'PY' > "$OUT/table.txt" 2>&1
import sys
sys.path.insert(0, "tools/device")
import bwd_tables
out = sys.argv[1]
ours = {(n, d, c): t + (v,) for (n, d, c, v), t in bwd_tables.ours(f"{out}/bench.txt").items()}  # one variant per run
torch = bwd_tables.torch(f"{out}/sdpa.txt")
print("TFLOP/s bf16 B16 H16 | N d causal | ours bwd (v) | flash bwd | cudnn bwd | bwd/flash | ours f+b | flash f+b | f+b/flash | bwd/cudnn")
for causal in (False, True):
    for d in (64, 128):
        for n in (4096, 16384):
            o = ours.get((n, d, causal)); fl = torch.get(("flash", n, d, causal)); cu = torch.get(("cudnn", n, d, causal))
            g = lambda t, i: f"{t[i]:6.1f}" if t else "     -"
            r = lambda a, b: f"{a / b:5.2f}x" if a and b else "    -"
            print(f"  {n:5d} {d:3d} {'yes' if causal else 'no ':3s} | {g(o,1)} (v{o[3] if o else '-'}) | {g(fl,1)} | {g(cu,1)} | "
                  f"{r(o and o[1], fl and fl[1])} | {g(o,2)} | {g(fl,2)} | {r(o and o[2], fl and fl[2])} | {r(o and o[1], cu and cu[1])}")
PY
S+=("total | $(($(date +%s) - T0)) s")
{ printf '%s\n' "${S[@]}"; cat "$OUT/table.txt"; } | tee "$OUT/summary.txt"
