#!/usr/bin/env bash
# The same verify and gpu commands through two builds, their outputs compared: for a change that
# must leave what verify prints as it was (a refactor of the checks, a moved schedule).
# Usage, from the repository root on the GPU machine: bash tools/device/verify_diff.sh NEW OLD OUT
# NEW and OLD are flashstep binaries. Lines holding times (ms, GB/s, TFLOP/s) are dropped before
# the comparison; a summary line per command is printed last, and the exit status is 1 if any
# command's exit status or remaining output differs.
set -u
NEW=${1:?usage: verify_diff.sh NEW OLD OUT}
OLD=${2:?usage: verify_diff.sh NEW OLD OUT}
OUT=${3:?usage: verify_diff.sh NEW OLD OUT}
mkdir -p "$OUT"
CMDS=(
  "verify --n 1000 --d 64 --M 128KiB"
  "verify --schedule fa2 --n 1000 --d 64 --M 128KiB"
  "verify --schedule fa2 --n 1000 --d 64 --M 128KiB --dtype bf16 --causal"
  "verify --schedule standard --nq 300 --nk 400 --d 64 --causal --dropout 0.3 --M 128KiB"
  "verify --schedule decode --dtype bf16 --nq 1 --nk 3000 --d 128 --splits 4"
  "verify --schedule decode --dtype bf16 --nq 1 --nk 3000 --d 64 --splits 4 --page-size 16"
  "verify --schedule decode --nq 4 --nk 777 --d 64 --kv-len 600"
  "verify --schedule fa2 --tensor-cores --dtype bf16 --p-dtype bf16 --n 1000 --d 64"
  "verify --schedule fa2 --tensor-cores --dtype fp16 --p-dtype fp16 --nq 333 --nk 517 --d 128 --causal"
  "verify --backward --schedule fa1 --n 1000 --d 64 --M 128KiB"
  "verify --backward --schedule fa2 --n 1000 --d 64 --M 128KiB"
  "verify --backward --schedule standard --n 1000 --d 64 --M 128KiB"
  "verify --backward --tensor-cores --dtype bf16 --n 512 --d 64"
  "verify --backward --tensor-cores --dtype bf16 --nq 200 --nk 333 --d 128 --causal"
  "gpu --schedule fa2 --backward --n 300 --d 64"
  "verify --schedule decode --nq 1 --nk 3001 --d 256 --splits 3"
  "verify --schedule decode --dtype bf16 --nq 1 --nk 2000 --d 32 --splits 2"
  "verify --schedule decode --dtype bf16 --nq 1 --nk 4000 --d 128 --page-size 16 --variant 9"
  "verify --schedule decode --dtype fp8 --nq 1 --nk 5000 --d 128 --page-size 16"
  "verify --n 700 --d 64 --M 128KiB --dtype bf16"
  "verify --n 500 --d 64 --br 64 --bc 32 --dtype bf16"
)
differ=0
k=0
for c in "${CMDS[@]}"; do
  k=$((k + 1))
  for side in new old; do
    bin=$NEW; [ $side = old ] && bin=$OLD
    timeout 120 "$bin" $c > "$OUT/$k.$side.txt" 2>&1
    echo "rc=$?" >> "$OUT/$k.$side.txt"
    grep -vE ' ms|GB/s|TFLOP/s|TB/s|[0-9] s\b' "$OUT/$k.$side.txt" > "$OUT/$k.$side.cmp"
  done
  if diff -q "$OUT/$k.new.cmp" "$OUT/$k.old.cmp" > /dev/null; then v=same; else v=DIFFERS; differ=1; fi
  printf '%-8s %s  (%s)\n' "$v" "$c" "$(tail -1 "$OUT/$k.new.txt")" | tee -a "$OUT/summary.txt"
done
exit $differ
