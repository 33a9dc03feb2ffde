#!/usr/bin/env bash
# The tensor-core runs of assets/bench/h200.json (the course's roofline points and the app's Bench
# view) from the current default kernels: bench-gpu --json at the same points as the file's runs
# 1, 2, 4 and 5 (forward bf16 N 1024/4096/16384, d 64/128, causal or not; forward + backward bf16
# B = 16, H = 16, N 4096/16384, causal or not), 10 calls back to back per sample.
# Usage, from the repository root on the GPU machine: bash tools/device/bench_assets.sh BIN OUT
# Then, on any machine: python3 tools/device/bench_assets.py OUT (rewrites those four runs).
set -euo pipefail
BIN=${1:?usage: bench_assets.sh BIN OUT}
OUT=${2:?usage: bench_assets.sh BIN OUT}
mkdir -p "$OUT"
FS=$BIN/flashstep
"$FS" bench-gpu --tensor-cores --dtype bf16 --no-sweep --json-file "$OUT/fwd.json" > "$OUT/fwd.txt"
"$FS" bench-gpu --tensor-cores --dtype bf16 --no-sweep --causal --json-file "$OUT/fwd_causal.json" > "$OUT/fwd_causal.txt"
"$FS" bench-gpu --backward --tensor-cores --dtype bf16 --no-fp32 --back-to-back 2 --json-file "$OUT/bwd.json" > "$OUT/bwd.txt"
"$FS" bench-gpu --backward --tensor-cores --dtype bf16 --no-fp32 --back-to-back 2 --causal \
  --json-file "$OUT/bwd_causal.json" > "$OUT/bwd_causal.txt"
tail -n 12 "$OUT"/fwd.txt "$OUT"/bwd.txt
