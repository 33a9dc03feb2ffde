#!/usr/bin/env bash
# The merged main on the H200: the [gpu] and [tc] tests with FLASHSTEP_REQUIRE_GPU=1, then the CLI
# on the paths the merge touched (decode, the tensor-core backward, the v15 default), a short bench.
set -u
D=.dev/final; W=$OUT; mkdir -p /tmp/fsbin
python3 -c "
import lzma,shutil
for n in ['flashstep','flashstep_gpu_tests','flashstep_tc_tests']:
    with lzma.open('$D/'+n+'.xz') as f, open('/tmp/fsbin/'+n,'wb') as g: shutil.copyfileobj(f,g)
"
chmod +x /tmp/fsbin/*; cp -a $D/lib*.so* /tmp/fsbin/
export LD_LIBRARY_PATH=/tmp/fsbin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHSTEP_GOLDEN_DIR=$PWD/tests/golden FLASHSTEP_REQUIRE_GPU=1
F=/tmp/fsbin/flashstep; S=$W/summary.txt; : > $S
note() { echo "$*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
[ -n "${SKIP_TESTS:-}" ] || timeout 200 /tmp/fsbin/flashstep_gpu_tests "[gpu]" > $W/gpu_tests.log 2>&1; note "[gpu] tests: rc=$? $(grep -E '^(All tests passed|test cases:)' $W/gpu_tests.log | tail -1)"
[ -n "${SKIP_TESTS:-}" ] || timeout 150 /tmp/fsbin/flashstep_tc_tests > $W/tc_tests.log 2>&1; note "[tc] tests: rc=$? $(grep -E '^(All tests passed|test cases:)' $W/tc_tests.log | tail -1)"
: > $W/cli.log
c() { timeout 60 $F "$@" > $W/one.log 2>&1; local rc=$?; { echo "\$ flashstep $*"; cat $W/one.log; } >> $W/cli.log; note "$1 ${*:2}: rc=$rc | $(tail -1 $W/one.log)"; }
c verify --n 1000 --d 64 --M 128KiB
c verify --schedule fa2 --n 777 --nk 500 --d 64 --causal
c verify --schedule decode --nq 1 --nk 4096 --d 128 --M 128KiB --splits 8 --dtype bf16
c verify --schedule decode --nq 5 --nk 3000 --d 64 --M 128KiB --splits 7 --causal
c verify --backward --n 300 --d 64 --M 64KiB
c verify --backward --tensor-cores --nq 200 --nk 150 --d 64 --causal --dtype bf16
c verify --backward --tensor-cores --n 333 --d 128 --dtype fp16 --kv-len 200
c verify --tensor-cores --schedule fa2 --dtype bf16 --p-dtype bf16 --nq 1000 --nk 777 --d 128 --causal
c verify --tensor-cores --schedule fa2 --dtype fp16 --p-dtype fp16 --n 999 --d 64
c bench-gpu --tensor-cores --n 4096 16384 --d 64 128 --no-sweep
c bench-gpu --tensor-cores --causal --n 4096 16384 --d 64 128 --no-sweep
c bench-gpu --backward --tensor-cores --n 4096 --d 64 128 --no-fp32
grep -A12 'TFLOP' $W/cli.log | head -80 > $W/bench_tables.txt
cat $S
