#!/usr/bin/env bash
# One device call for the whole session: unpack the merged main's binaries, then the forward
# checks the refactors touched, then each topic's device script with its own wall budget.
set -u
D=.dev/final2; W=$OUT; B=/tmp/fsbin; mkdir -p $B
python3 -c "
import lzma,shutil,glob,os
for p in glob.glob('$D/*.xz'):
    n=os.path.basename(p)[:-3]
    with lzma.open(p) as f, open('$B/'+n,'wb') as g: shutil.copyfileobj(f,g)
"
chmod +x $B/*; cp -a $D/lib*.so* $B/ 2>/dev/null
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FLASHSTEP_GOLDEN_DIR=$PWD/tests/golden FLASHSTEP_REQUIRE_GPU=1 PATH=$B:$PATH
S=$W/summary.txt; : > $S
note() { echo "$*" | tee -a $S; }
note "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
F=$B/flashstep; : > $W/cli.log
c() { timeout 60 $F "$@" > $W/one.log 2>&1; local rc=$?; { echo "\$ flashstep $*"; cat $W/one.log; } >> $W/cli.log; note "$1 ${*:2}: rc=$rc | $(tail -1 $W/one.log)"; }
c verify --tensor-cores --schedule fa2 --dtype bf16 --p-dtype bf16 --nq 1000 --nk 777 --d 128 --causal
c verify --tensor-cores --schedule fa2 --dtype fp16 --p-dtype fp16 --n 999 --d 64
c verify --tensor-cores --schedule fa2 --dtype bf16 --p-dtype bf16 --n 513 --d 64 --variant 13
c verify --tensor-cores --schedule fa2 --dtype bf16 --p-dtype bf16 --n 513 --d 128 --variant 14 --kv-len 300
c verify --schedule decode --nq 1 --nk 4096 --d 128 --M 128KiB --splits 8 --dtype bf16
for tb in ${TOPICS:-decode_snapshots:20 decode_paged:80 bwd_wgmma:100 fa3_rungs:90}; do
  t=${tb%%:*}; budget=${tb##*:}; export BUDGET=$budget
  mkdir -p $W/$t; start=$SECONDS
  timeout $((budget + 30)) bash gpu/tools/${t}_device.sh $B $W/$t > $W/$t/out.log 2>&1
  note "== $t: rc=$? in $((SECONDS - start)) s (budget $budget)"; tail -25 $W/$t/out.log | tee -a $S
done
