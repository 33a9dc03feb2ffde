#!/usr/bin/env bash
# One device call for the FA3 rungs (v15, v16): unpack, SASS counts, [tc] tests and sanitizers
# (in parallel), verify --tensor-cores, the ladder's bench v13-v16 and PyTorch's sdpa (cuDNN,
# flash) on the same shapes. Logs under $OUT, a summary last.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
D=.dev/fa3
OUT=${OUT:?OUT: the folder for the logs}
mkdir -p "$OUT"
dev_unpack $D
BIN=$D/bin
dev_libs $D/lib
T0=$(date +%s)
dev_gpu_env
S=()
cuobjdump --dump-sass $BIN/flashstep_tc_bench > /tmp/sass.txt 2>/dev/null
S+=("SASS: HGMMA $(grep -c HGMMA /tmp/sass.txt), UTMALDG $(grep -c UTMALDG /tmp/sass.txt), USETMAXREG $(grep -c USETMAXREG /tmp/sass.txt), LDL $(grep -c 'LDL' /tmp/sass.txt)")
t0=$(date +%s)
for part in "[tc][ragged]" "[tc][causal]" "[tc][padding]" "[tc]~[ragged]~[causal]~[padding]~[ring]~[small]"; do
  FLASHSTEP_TC_VARIANTS=15,16 catch2 "$OUT/t_$(echo "$part" | tr -dc a-z).log" timeout 120 $BIN/flashstep_tc_tests "$part" &
done
FLASHSTEP_TC_VARIANTS=13,14,15,16 catch2 "$OUT/t_ring.log" timeout 120 $BIN/flashstep_tc_tests "[tc][ring]" &
FLASHSTEP_TC_VARIANTS=13,14,15,16 catch2 $OUT/memcheck.log timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $BIN/flashstep_tc_tests "[small]" &
FLASHSTEP_TC_VARIANTS=15,16 catch2 $OUT/racecheck.log timeout 100 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 $BIN/flashstep_tc_tests "[small]" &
wait_jobs; rc=$?
cat $OUT/t_*.log > $OUT/tc_tests.log; rm -f $OUT/t_*.log
S+=("[tc] and sanitizers: rc=$rc; [tc] ($(($(date +%s)-t0)) s): $(parts_line $OUT/tc_tests.log)")
S+=("memcheck v13-16 [small]: $(grep -E 'ERROR SUMMARY' $OUT/memcheck.log | tail -1) $(grep -E '^(All tests|test cases)' $OUT/memcheck.log)")
S+=("racecheck v15,16 [small]: $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.log | tail -1) $(grep -E '^(All tests|test cases)' $OUT/racecheck.log)")
V="$BIN/flashstep verify --schedule fa2 --tensor-cores"
for v in 15 16; do
  for args in "--dtype bf16 --p-dtype bf16 --nq 300 --nk 517 --d 128 --causal --kv-len 400" "--dtype fp16 --p-dtype fp16 --nq 517 --nk 300 --d 64 --causal"; do
    timeout 20 $V $args --variant $v >> $OUT/verify.txt 2>&1; S+=("verify v$v $args: rc=$?")
  done
done
timeout 90 $BIN/flashstep_tc_bench --no-verify --no-standard --variants 13,14,15,16 --ds 64,128 --ns 4096,16384 --dtypes bf16 --causal both > $OUT/bench.txt 2>&1
S+=("bench rc=$?")
for b in cudnn flash; do for c in "" "--causal"; do
  timeout 50 python3 gpu/tools/sdpa_bench.py --backend $b --ns 4096,16384 --ds 64,128 $c >> $OUT/sdpa.txt 2>&1
done; done
S+=("total $(($(date +%s)-T0)) s")
printf '%s\n' "${S[@]}" | tee $OUT/summary.txt
grep -B3 -A12 -E "FAILED" $OUT/tc_tests.log | head -50
grep -E "PASS|FAIL|rror" $OUT/verify.txt | head -12
tail -45 $OUT/bench.txt
grep -E "sdpa|Error" $OUT/sdpa.txt
