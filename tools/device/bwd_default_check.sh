#!/usr/bin/env bash
# A new backward default at d = 128 in one device call: the [gpu] and [tc] tests, six verifies of
# the default at d = 128 (bf16 and fp16, one row, causal, key padding, large inputs), the four
# compute-sanitizer tools on it (two shapes), then the backward defaults (d = 64 and 128) beside
# PyTorch's cuDNN backward, both sides 2 calls back to back (bf16, B = 16, H = 16, N = 4096 and
# 16384, causal and not); the table last.
# Usage (repository root, GPU machine): bash tools/device/bwd_default_check.sh BIN OUT
# (BIN: a default build's flashstep, flashstep_gpu_tests, flashstep_tc_tests; about 5 minutes.)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
B=$BIN; W=$OUT/w; mkdir -p "$W"
(timeout 260 $B/flashstep_tc_tests > $W/tc_tests.log 2>&1; echo "flashstep_tc_tests rc=$? $(grep -E 'All tests|test cases' $W/tc_tests.log | tail -n1)" >> $OUT/status.txt) &
(timeout 260 $B/flashstep_gpu_tests > $W/gpu_tests.log 2>&1; echo "flashstep_gpu_tests rc=$? $(grep -E 'All tests|test cases' $W/gpu_tests.log | tail -n1)" >> $OUT/status.txt) &
V="$FS verify --backward --tensor-cores"
i=0
for a in "--dtype bf16 --nq 200 --nk 333 --d 128" "--dtype fp16 --nq 333 --nk 200 --d 128 --causal" "--dtype bf16 --nq 1 --nk 3 --d 128" \
         "--dtype bf16 --nq 1000 --nk 1000 --d 128 --causal --kv-len 900" "--dtype fp16 --nq 333 --nk 333 --d 128 --kv-len 250 --pattern large" \
         "--dtype bf16 --nq 517 --nk 300 --d 128 --causal"; do
  i=$((i+1)); (echo "== $a"; timeout 150 $V $a; echo "rc=$?") > $W/verify$i.txt 2>&1 &
done
for tool in memcheck racecheck synccheck initcheck; do
  extra=""; [ $tool = racecheck ] && extra="--racecheck-report all"
  (timeout 220 compute-sanitizer --tool $tool $extra --error-exitcode 9 $V --dtype bf16 --nq 300 --nk 517 --d 128; echo "rc=$?") > $W/${tool}_a.txt 2>&1 &
  (timeout 220 compute-sanitizer --tool $tool $extra --error-exitcode 9 $V --dtype fp16 --nq 333 --nk 300 --d 128 --causal --kv-len 250; echo "rc=$?") > $W/${tool}_b.txt 2>&1 &
done
wait
echo "checks done at $(($(date +%s)-T0)) s" >> $OUT/status.txt
for f in $W/verify*.txt; do echo "$(head -n1 $f) | $(grep -E '^(PASS|FAIL)' $f | head -n1) | $(grep -E '^identical' $f | head -n1) | $(tail -n1 $f)" >> $OUT/status.txt; done
for f in $W/*check_*.txt; do echo "$(basename $f .txt): $(tail -n1 $f) $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -n1)" >> $OUT/status.txt; done
if [ $(($(date +%s)-T0)) -lt 330 ]; then
  for c in "" "--causal"; do
    timeout 80 $FS bench-gpu --backward --tensor-cores --dtype bf16 --n 4096 16384 --d 64 128 --no-fp32 --back-to-back 2 $c >> $W/bench.txt 2>&1
    echo "bench ${c:-non-causal} rc=$? at $(($(date +%s)-T0)) s" >> $OUT/status.txt
  done
  timeout 150 python3 gpu/tools/sdpa_bwd_bench.py --dtype bf16 --backends cudnn --ns 4096,16384 --ds 64,128 --causal both --back-to-back 2 > $W/sdpa.txt 2>&1
  echo "cudnn rc=$? at $(($(date +%s)-T0)) s" >> $OUT/status.txt
fi
cp $W/bench.txt $W/sdpa.txt $OUT/ 2>/dev/null
tar -C $OUT -czf $OUT/logs.tar.gz w; rm -rf $W
cat $OUT/status.txt
python3 - "$OUT" <<'PY'
import sys
sys.path.insert(0, "tools/device")
import bwd_tables
out = sys.argv[1]
ours = bwd_tables.ours(f"{out}/bench.txt"); torch = bwd_tables.torch(f"{out}/sdpa.txt")
print("N d causal | ours bwd (f+b) TF | cudnn bwd (f+b) | bwd ratio | f+b ratio")
for causal in (False, True):
    for d in (64, 128):
        for n in (4096, 16384):
            o = [t for k, t in ours.items() if k[:3] == (n, d, causal)]
            c = torch.get(("cudnn", n, d, causal))
            if o and c:
                o = o[0]
                print(f"{n} {d} {causal} | {o[1]:.1f} ({o[2]:.1f}) | {c[1]:.1f} ({c[2]:.1f}) | {o[1]/c[1]:.3f} | {o[2]/c[2]:.3f}")
PY
