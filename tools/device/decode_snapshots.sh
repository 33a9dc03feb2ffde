#!/usr/bin/env bash
# Decode's snapshot folders on the GPU: `gpu --schedule decode --snapshots` (the split kernel's
# float32 partials O^(s), lse^(s) copied back, one snapshot per split, and the final O, lse)
# against `run --snapshots` of the same problem (the CPU engine), through `compare`. Two shapes:
# causal with a window (the first splits keep no key of any row: lse^(s) = -inf in both folders) and a key
# length. Wall budget: 20 s (each command under `timeout`).
# Usage (repository root, GPU machine): bash tools/device/decode_snapshots.sh BIN OUT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
summary=()
check() {  # name, rc, what
  if [ "$2" -eq 0 ]; then summary+=("$(printf '%-34s PASS  %s' "$1" "$3")")
  else summary+=("$(printf '%-34s FAIL  rc=%s %s' "$1" "$2" "$3")"); fi
}
shapes=(
  "causal-bf16|6|--nq 5 --nk 700 --d 64 --M 8192 --bc 32 --splits 6 --causal --window 100,0 --dtype bf16 --seed 3"
  "kvlen-fp32|8|--nq 1 --nk 4096 --d 128 --M 128KiB --splits 8 --kv-len 3001 --seed 4"
)
for entry in "${shapes[@]}"; do
  name=${entry%%|*}
  rest=${entry#*|}
  splits=${rest%%|*}
  args=${rest#*|}
  cpu=$OUT/cpu_$name gpu=$OUT/gpu_$name
  rm -rf "$cpu" "$gpu"
  timeout 8 "$FS" run --schedule decode $args --snapshots "$cpu" > "$OUT/run_$name.log" 2>&1
  check "run --snapshots $name" $? ""
  timeout 8 "$FS" gpu --schedule decode $args --snapshots "$gpu" > "$OUT/gpu_$name.log" 2>&1
  rc=$?
  parts=$(grep -c '"phase": "partials"' "$gpu/manifest.json" 2>/dev/null || echo 0)
  check "gpu --snapshots $name" $rc "partials in the folder: $parts"
  timeout 8 "$FS" compare --snapshots "$gpu" --against "$cpu" > "$OUT/compare_$name.log" 2>&1
  rc=$?
  # the largest max rel over the partials' rows (O^(s) and lse^(s)) that compare printed
  worst=$(awk '/^partials:/ {p = 1; next} p && $2 == "|" && $1 ~ /^[0-9]+$/ {if ($4 > m) m = $4; if ($7 > m) m = $7}
               END {print m + 0}' "$OUT/compare_$name.log")
  check "compare gpu vs cpu $name" $rc "worst partial rel $worst; $(grep -E '^(PASS|FAIL)' "$OUT/compare_$name.log" | head -1)"
  [ "$parts" -eq "$splits" ]; check "one partial per split $name" $? "$parts of S = $splits"
done
echo
echo "decode snapshots on the GPU: summary"
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
