#!/usr/bin/env bash
# tools/device/defaults_table.py, the device check's summary: each point's speed target against
# cuDNN marked met or not, and the count of each target last. The inputs below are written by hand
# in the formats of bench-gpu and PyTorch's scripts, with ratios chosen on both sides of the
# targets (1.05x for the non-causal forward, 1.0x for the backward and forward + backward; a ratio
# equal to its target is met), so that the counts are known without the script.
# Usage: check_defaults_table.sh REPO_ROOT
set -u
root=${1:?usage: check_defaults_table.sh REPO_ROOT}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
source "$root/tests/check_expect.sh"
tool="python3 $root/tools/device/defaults_table.py"
{
  echo "bench-gpu --tensor-cores on NVIDIA H200 (132 SMs), bf16, no mask, CUDA events"
  echo "     N    d    B   H   Br   Bc  v |       ms  TFLOP/s"
  for r in "4096 64 0.300" "16384 64 1.000" "4096 128 0.500" "16384 128 2.000"; do
    set -- $r; echo "  $1   $2   32   8  128  128 45 |    $3    500.0"
  done
  echo "bench-gpu --tensor-cores on NVIDIA H200 (132 SMs), bf16, causal, CUDA events"
  for r in "4096 64 0.200" "16384 64 0.500" "4096 128 0.300" "16384 128 1.000"; do
    set -- $r; echo "  $1   $2   32   8  128  128 45 |    $3    500.0"
  done
} > "$T/fwd_new.txt"
# cuDNN's forward: 0.330 / 0.300 = 1.1 (met), 1.04 (not), 0.525 / 0.500 = 1.05 (met: equal), 1.0 (not).
{
  for r in "64 4096 False 0.330" "64 16384 False 1.040" "128 4096 False 0.525" "128 16384 False 2.000" \
           "64 4096 True 0.100" "64 16384 True 0.100" "128 4096 True 0.100" "128 16384 True 0.100"; do
    set -- $r; echo "cudnn d=$1 N=$2 causal=$3 $4 ms"
  done
} > "$T/fwd_sdpa.txt"
# flashstep's backward: 2.000 ms, forward + backward 3.000 ms at every point.
for c in "no mask" "causal"; do
  echo "bench-gpu --backward --tensor-cores on NVIDIA H200 (132 SMs), bf16, $c, B = 16, H = 16"
  for n in 4096 16384; do for d in 64 128; do echo "  $n  $d   45   29 |    1.000    2.000    3.000 |"; done; done
done > "$T/bwd_new.txt"
# cuDNN's backward 2.0 (met: equal) at the four non-causal points, 1.9 (not) at the causal ones;
# forward + backward 3.3 (met) at three points, 2.9 (not) at five.
{
  echo "backend    d      N causal |   fwd ms   bwd ms   f+b ms"
  for r in "64 4096 False 2.0 3.3" "64 16384 False 2.0 3.3" "128 4096 False 2.0 3.3" "128 16384 False 2.0 2.9" \
           "64 4096 True 1.9 2.9" "64 16384 True 1.9 2.9" "128 4096 True 1.9 2.9" "128 16384 True 1.9 2.9"; do
    set -- $r; echo "cudnn    $1   $2 $3  |    1.000    $4    $5 |"
  done
} > "$T/bwd_sdpa.txt"
$tool "$T" > "$T/out.txt" 2>&1; expect "the table is written" 0 $?
last=$(tail -1 "$T/out.txt")
expect "the counts and the card" \
  "targets against cuDNN (stated for the H200; measured on NVIDIA H200): non-causal forward >= 1.05x met at 2 of 4 points; backward >= 1.0x at 4 of 8; forward + backward >= 1.0x at 3 of 8" \
  "$last"
expect "a point at exactly 1.05x is met" 1 "$(grep -cE '^ +4096 +128 no .*1\.050x \| met$' "$T/out.txt")"
expect "a point at 1.04x is not" 1 "$(grep -cE '^ +16384 +64 no .*1\.040x \| not met$' "$T/out.txt")"
expect "four causal forward rows" 4 "$(grep -cE '^ +[0-9]+ +[0-9]+ yes +\| 45 ' "$T/out.txt")"
expect "the causal forward has no target" 0 "$(grep -E '^ +[0-9]+ +[0-9]+ yes +\| 45 ' "$T/out.txt" | grep -c met)"
expect "a backward point: backward met, forward + backward not" 1 \
  "$(grep -cE '^ +16384 +128 no .*\| met, not met$' "$T/out.txt")"
# Without PyTorch's files nothing is counted, and the script still ends with its count.
rm "$T/fwd_sdpa.txt" "$T/bwd_sdpa.txt"
$tool "$T" > "$T/out2.txt" 2>&1; expect "without PyTorch's side: written" 0 $?
expect "without PyTorch's side: nothing counted" 1 "$(tail -1 "$T/out2.txt" | grep -c 'met at 0 of 0 points; backward >= 1.0x at 0 of 0')"
[ "$bad" -eq 0 ] && echo "defaults_table ok"
exit "$bad"
