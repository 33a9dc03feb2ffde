#!/usr/bin/env bash
# rungs 51, 52 beside 45, 47 and cuDNN; FP8 rungs 20, 21 beside the FP8 default; the defaults beside PyTorch (fair timing)
set -u
for d in prod lad; do mkdir -p build-carry/$d/bin && tar -C build-carry/$d/bin -xJf build-carry/$d/bin.tar.xz; done
source tools/device/lib.sh; dev_libs build-carry/lib
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
T0=$(date +%s)
CHECK="51 52" RUNGS="47 51 52" ROUNDS=2 timeout 200 bash tools/device/fwd_pair.sh build-carry/lad/bin $OUT/pair > $OUT/pair_log.txt 2>&1
echo "pair rc=$? at $(($(date +%s)-T0)) s" | tee -a $OUT/gpu.txt
cp $OUT/pair/summary.txt $OUT/pair_summary.txt 2>/dev/null
RUNGS="20 21" timeout 150 bash tools/device/fp8_rungs.sh build-carry/lad/bin $OUT/fp8r > $OUT/fp8r_log.txt 2>&1
echo "fp8 rungs rc=$? at $(($(date +%s)-T0)) s" | tee -a $OUT/gpu.txt
cp $OUT/fp8r/table.txt $OUT/fp8r_table.txt 2>/dev/null
B=build-carry/prod/bin
W=$OUT/bench; mkdir -p $W
export FLASHSTEP_REQUIRE_GPU=1
for c in "" "--causal"; do
  timeout 40 $B/flashstep bench-gpu --tensor-cores --dtype bf16 --n 4096 16384 --d 64 128 --no-sweep --back-to-back 10 $c >> $W/fwd_new.txt 2>&1
  timeout 40 python3 gpu/tools/sdpa_bench.py --backend cudnn --ns 4096,16384 --ds 64,128 --back-to-back 10 $c >> $W/fwd_sdpa.txt 2>&1
done
echo "fwd bench at $(($(date +%s)-T0)) s" | tee -a $OUT/gpu.txt
python3 tools/device/defaults_table.py $W > $OUT/bench_summary.txt 2>&1
for c in "" "--causal"; do
  timeout 120 $B/flashstep bench-gpu --backward --tensor-cores --dtype bf16 --n 4096 16384 --d 64 128 --back-to-back 2 $c >> $W/bwd_new.txt 2>&1
done
echo "bwd ours at $(($(date +%s)-T0)) s" | tee -a $OUT/gpu.txt
timeout 150 python3 gpu/tools/sdpa_bwd_bench.py --backends flash,cudnn --ns 4096,16384 --ds 64,128 --back-to-back 2 > $W/bwd_sdpa.txt 2>&1
echo "bwd sdpa rc=$? at $(($(date +%s)-T0)) s" | tee -a $OUT/gpu.txt
python3 tools/device/defaults_table.py $W > $OUT/bench_summary.txt 2>&1
echo "done at $(($(date +%s)-T0)) s" | tee -a $OUT/gpu.txt
tar -C $OUT -czf $OUT/raw.tar.gz pair fp8r bench 2>/dev/null; rm -rf $OUT/pair $OUT/fp8r $OUT/bench
tail -40 $OUT/pair_summary.txt
tail -40 $OUT/bench_summary.txt
tail -30 $OUT/fp8r_table.txt
