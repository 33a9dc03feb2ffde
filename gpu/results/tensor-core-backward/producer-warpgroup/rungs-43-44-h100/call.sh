#!/usr/bin/env bash
# backward configurations 43 (29 with dQ_i added from the registers) and 44 (43 with two dS^T buffers): checks, then speed beside 29 and PyTorch
set -u
mkdir -p build-carry/lad/bin && tar -C build-carry/lad/bin -xJf build-carry/lad/bin.tar.xz
source tools/device/lib.sh; dev_libs build-carry/lib
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
T0=$(date +%s)
B=build-carry/lad/bin
(REF=29 DS=128 NEW=43 BENCH=0 SDPA=0 timeout 170 bash tools/device/bwd_pipe.sh $B $OUT/c43 > $OUT/c43_log.txt 2>&1; echo "c43 rc=$?" >> $OUT/gpu.txt) &
(REF=29 DS=128 NEW=44 BENCH=0 SDPA=0 timeout 170 bash tools/device/bwd_pipe.sh $B $OUT/c44 > $OUT/c44_log.txt 2>&1; echo "c44 rc=$?" >> $OUT/gpu.txt) &
wait
echo "checks at $(($(date +%s)-T0)) s" | tee -a $OUT/gpu.txt
left=$((570 - ($(date +%s)-T0)))
REF=29 DS=128 CHECKS=0 VARIANTS="29 43 44 29 43 44" BTB=3 timeout $left bash tools/device/bwd_pipe.sh $B $OUT/b > $OUT/b_log.txt 2>&1
echo "bench rc=$? at $(($(date +%s)-T0)) s" | tee -a $OUT/gpu.txt
for k in c43 c44 b; do cp $OUT/$k/summary.txt $OUT/${k}_summary.txt 2>/dev/null; done
cp $OUT/b/bench.txt $OUT/b_bench.txt 2>/dev/null; cp $OUT/b/sdpa.txt $OUT/b_sdpa.txt 2>/dev/null
tar -C $OUT -czf $OUT/raw.tar.gz c43 c44 b 2>/dev/null; rm -rf $OUT/c43 $OUT/c44 $OUT/b
cat $OUT/gpu.txt; cat $OUT/c43_summary.txt $OUT/c44_summary.txt 2>/dev/null | grep -v "^bwd TFLOP\|^ *[0-9]* *[0-9]* *\(no\|yes\) |"
cat $OUT/b_summary.txt
