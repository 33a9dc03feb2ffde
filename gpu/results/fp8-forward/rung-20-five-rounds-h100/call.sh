#!/usr/bin/env bash
# On an H200: the defaults beside PyTorch's cuDNN (callS2.sh). Otherwise: FP8 rung 20 beside the FP8 default, 5 alternating rounds.
set -u
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader > $OUT/card.txt
if grep -q H200 $OUT/card.txt; then exec bash build-carry/callS2.sh; fi
cat $OUT/card.txt
mkdir -p build-carry/lad/bin && tar -C build-carry/lad/bin -xJf build-carry/lad/bin.tar.xz
source tools/device/lib.sh; dev_libs build-carry/lib
T0=$(date +%s)
ROUNDS=5 RUNGS="20" timeout 200 bash tools/device/fp8_rungs.sh build-carry/lad/bin $OUT/fp8r > $OUT/fp8r_log.txt 2>&1
echo "fp8 rungs rc=$? at $(($(date +%s)-T0)) s"
cp $OUT/fp8r/table.txt $OUT/fp8r_table.txt 2>/dev/null; cp $OUT/fp8r/summary.txt $OUT/fp8r_summary.txt 2>/dev/null
tar -C $OUT -czf $OUT/fp8r_raw.tar.gz fp8r 2>/dev/null; rm -rf $OUT/fp8r
tail -30 $OUT/fp8r_table.txt
