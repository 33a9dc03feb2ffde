#!/usr/bin/env bash
# One device call for the tensor-core forward's default (variant 0: the fastest correct rung per
# (d, causal), gpu/tensor_core.cpp) through the CLI, against PyTorch's cuDNN backend on the same
# shapes in the same call: four verifies of the default path (ragged, causal, key length; bf16,
# fp16; d = 64, 128), then bench-gpu --tensor-cores at N = 4096, 16384, d = 64, 128, causal and
# not (bf16, B x H x N = 131072, H = 8), then gpu/tools/sdpa_bench.py --backend cudnn; a table of
# TFLOP/s and the ratio per point last. Usage (repository root): bash tools/device/fa3_default.sh BIN OUT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
S=()
V="$FS verify --schedule fa2 --tensor-cores"
i=0
for args in "--dtype bf16 --p-dtype bf16 --nq 1000 --nk 777 --d 64 --causal" \
            "--dtype fp16 --p-dtype fp16 --nq 517 --nk 300 --d 64 --kv-len 250" \
            "--dtype bf16 --p-dtype bf16 --nq 300 --nk 517 --d 128 --causal --kv-len 400" \
            "--dtype fp16 --p-dtype fp16 --nq 999 --nk 999 --d 128"; do
  i=$((i + 1))
  (timeout 40 $V $args; echo "rc=$?") > "$OUT/verify$i.txt" 2>&1 &
done
wait
for k in 1 2 3 4; do
  S+=("verify default $(grep -m1 -oE 'variant [0-9]+' "$OUT/verify$k.txt") | $(tail -1 "$OUT/verify$k.txt") $(grep -E '^(PASS|FAIL)' "$OUT/verify$k.txt" | head -1)")
done
: > "$OUT/bench.txt"
for c in "" "--causal"; do
  timeout 60 "$FS" bench-gpu --tensor-cores --dtype bf16 --n 4096 16384 --d 64 128 --no-sweep $c >> "$OUT/bench.txt" 2>&1
  S+=("bench-gpu --tensor-cores ${c:-(non-causal)}: rc=$?")
done
: > "$OUT/sdpa.txt"
for c in "" "--causal"; do
  timeout 40 python3 gpu/tools/sdpa_bench.py --backend cudnn --ns 4096,16384 --ds 64,128 $c >> "$OUT/sdpa.txt" 2>&1
  S+=("sdpa cudnn ${c:-non-causal}: rc=$?")
done
S+=("total $(($(date +%s) - T0)) s")
{
  printf '%s\n' "${S[@]}"
  python3 - "$OUT/bench.txt" "$OUT/sdpa.txt" <<'PY'
import re, sys
ours, causal = {}, False
for line in open(sys.argv[1]):
    if line.startswith("bench-gpu"):
        causal = ", causal," in line
    m = re.match(r"\s*(\d+)\s+(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+(\d+)\s*\|\s*([\d.]+)\s+([\d.]+)", line)
    if m:
        ours[(int(m[1]), int(m[2]), causal)] = (int(m[3]), float(m[5]))
ref = {}
for line in open(sys.argv[2]):
    m = re.search(r"d=(\d+)\s+N=(\d+)\s+causal=(\w+)\s+([\d.]+) ms\s+([\d.]+) TFLOP/s", line)
    if m:
        ref[(int(m[2]), int(m[1]), m[3] == "True")] = float(m[5])
print("default forward (variant 0), bf16, B x H x N = 131072, H = 8: N d causal | v TFLOP/s | cuDNN | ratio")
for causal in (False, True):
    for d in (64, 128):
        for n in (4096, 16384):
            o, c = ours.get((n, d, causal)), ref.get((n, d, causal))
            print(f"{n:6d} {d:4d} {'yes' if causal else 'no ':3s} | v{o[0] if o else '-'} {o[1] if o else '-':>7} | {c or '-':>7} | "
                  + (f"{o[1] / c:.2f}x" if o and c else "-"))
PY
} | tee "$OUT/summary.txt"
