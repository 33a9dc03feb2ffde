#!/usr/bin/env bash
# Odd shapes for the backward defaults (26 at d = 64, 46 at d = 128): verify --backward
# --tensor-cores at d = 64 and 128, bf16 and fp16, on one-row, one-key, ragged, causal and key-padded
# shapes (each against the CPU emulation of its rounding and float64). Run from the repository root
# on the GPU machine with build-carry/ (bin.tar.xz, lib/) carried; OUT: the output folder.
export LD_LIBRARY_PATH=$PWD/build-carry/lib
source tools/device/lib.sh; dev_libs build-carry/lib; dev_unpack build-carry
FS=build-carry/bin/flashstep
n=0; bad=0
for args in "--nq 1 --nk 1" "--nq 1 --nk 700" "--nq 700 --nk 1" "--nq 129 --nk 129" "--nq 127 --nk 255 --causal" \
            "--nq 255 --nk 127 --causal" "--nq 1000 --nk 1000 --causal" "--nq 513 --nk 2049" "--nq 2049 --nk 513 --causal" \
            "--nq 300 --nk 300 --kv-len 1" "--nq 300 --nk 300 --kv-len 299 --causal" \
            "--nq 4096 --nk 64 --causal" "--nq 64 --nk 4096 --causal"; do
  for d in 64 128; do
    for t in bf16 fp16; do
      n=$((n + 1))
      out=$(timeout 60 $FS verify --backward --tensor-cores --dtype $t --d $d $args 2>&1); rc=$?
      if [ $rc -ne 0 ]; then bad=$((bad + 1)); echo "FAIL rc=$rc: --dtype $t --d $d $args: $(echo "$out" | tail -2 | tr '\n' ' ')"; fi
      echo "d = $d: $(echo "$out" | grep -m1 -o 'backward variant [0-9]*'), $(echo "$out" | grep -m1 -o 'Br = [0-9]*, Bc = [0-9]*')" >> $OUT/kernels.txt
    done
  done
done
sort "$OUT/kernels.txt" | uniq -c
echo "odd-shape verifies: $((n - bad)) of $n PASS"
