#!/usr/bin/env bash
# flash-decoding's one device call: [gpu][decode] tests, verify and gpu on the CLI, sanitizers,
# PyTorch SDPA at decode shapes, bench-gpu --decode (with the SDPA times set beside), an S sweep.
set -u
D=.dev/decode
OUT=${OUT:-/tmp/decode-out}
W=/tmp/w
mkdir -p "$OUT" /tmp/fsbin $W
cd /tmp/fsbin && python3 -c "
import lzma,shutil
for n in ['flashstep','flashstep_gpu_tests']:
    with lzma.open('$OLDPWD/$D/'+n+'.xz') as f, open(n,'wb') as g: shutil.copyfileobj(f,g)
" && chmod +x flashstep flashstep_gpu_tests && cp -a $OLDPWD/$D/libstb.so.0* . ; cd - >/dev/null
export LD_LIBRARY_PATH=/tmp/fsbin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHSTEP_GOLDEN_DIR=$PWD/tests/golden
F=/tmp/fsbin/flashstep; T=/tmp/fsbin/flashstep_gpu_tests
S=$W/summary.txt; : > $S
note() { echo "$*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader 2>&1)"
timeout 120 $T "[decode]" > $W/tests.log 2>&1; note "tests [decode]: rc=$? $(grep -E '^(All tests passed|test cases:)' $W/tests.log | tail -1)"
: > $W/verify.log
v() { timeout 60 $F verify "$@" > $W/one.log 2>&1; local rc=$?; { echo "\$ flashstep verify $*"; cat $W/one.log; } >> $W/verify.log
      note "verify $*: rc=$rc $(tail -1 $W/one.log)"; }
v --schedule decode --nq 1 --nk 4096 --d 128 --M 128KiB --splits 8
v --schedule decode --nq 1 --nk 4096 --d 128 --M 128KiB --splits 8 --dtype bf16
v --schedule decode --nq 1 --nk 16384 --d 64 --M 128KiB --splits 128 --dtype fp16
v --schedule decode --nq 5 --nk 3000 --d 64 --M 128KiB --splits 7 --causal
v --schedule decode --nq 1 --nk 2048 --d 128 --M 128KiB --splits 16 --window 100,0
v --schedule decode --nq 3 --nk 777 --d 32 --M 4096 --splits 5 --kv-len 300 --dropout 0.2
v --schedule decode --nq 1 --nk 999 --d 64 --M 128KiB --splits 1
v --schedule decode --nq 2 --nk 500 --d 64 --M 128KiB --kv-len 0 --splits 4
timeout 60 $F gpu --schedule decode --nq 1 --nk 8192 --d 128 --M 128KiB --dtype bf16 --out-o $W/o.npy > $W/gpu.log 2>&1; note "gpu: rc=$? $(tr '\n' ' ' < $W/gpu.log | cut -c1-300)"
timeout 30 $F verify --schedule decode --backward --nq 1 --nk 64 > $W/bad.log 2>&1; note "verify --backward decode: rc=$? $(cat $W/bad.log)"
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $T "[decode]" > $W/memcheck.log 2>&1; note "memcheck [decode]: rc=$? $(grep 'ERROR SUMMARY' $W/memcheck.log | tail -1)"
timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 $F verify --schedule decode --nq 5 --nk 3000 --d 64 --M 128KiB --splits 7 --causal > $W/racecheck.log 2>&1; note "racecheck verify: rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $W/racecheck.log | tail -1)"
timeout 150 python3 $D/sdpa_decode_bench.py --json $OUT/sdpa.json > $W/sdpa.txt 2>&1; note "sdpa: rc=$?"; cat $W/sdpa.txt >> $S
timeout 150 $F bench-gpu --decode --sdpa $OUT/sdpa.json --json-file $OUT/bench.json > $W/bench.txt 2>&1; note "bench: rc=$?"; cat $W/bench.txt >> $S
for sp in 4 8 16 32 64 128; do timeout 30 $F bench-gpu --decode --nk 65536 --d 128 --heads 32 --splits $sp > $W/sweep_$sp.txt 2>&1; tail -1 $W/sweep_$sp.txt >> $W/sweep.txt; done
note "S sweep (Nk 65536, d 128, BxH 32, bf16):"; cat $W/sweep.txt >> $S
cat $S
cp $S $W/sdpa.txt $W/bench.txt $W/sweep.txt $OUT/
cat $W/tests.log $W/verify.log $W/gpu.log $W/bad.log > $OUT/tests_verify.log
cat $W/memcheck.log $W/racecheck.log > $OUT/sanitizers.log
