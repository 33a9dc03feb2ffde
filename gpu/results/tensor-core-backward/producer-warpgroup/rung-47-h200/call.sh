#!/usr/bin/env bash
# Backward 47 (46 with L2_i read by float4, 20 floats apart) as the d = 128 default, against the
# current default build (prod): checks of 47, then alternating rounds beside cuDNN.
set -u
for x in prod exp47; do mkdir -p build-carry/$x/bin && tar -C build-carry/$x/bin -xJf build-carry/$x/bin.tar.xz || exit 2; done
W=/tmp/ab
timeout 570 bash tools/device/bwd_prepare_ab.sh build-carry/prod/bin build-carry/exp47/bin $W > $OUT/ab_log.txt 2>&1
echo "rc=$?" >> $OUT/ab_log.txt
cp $W/table.txt $OUT/table.txt 2>/dev/null
tar -C /tmp -czf $OUT/ab.tar.gz ab
grep -v "^ *[0-9]* *[0-9]* *[0-9]* *[0-9]* |" $OUT/ab_log.txt | tail -45
