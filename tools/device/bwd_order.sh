#!/usr/bin/env bash
# One device call for the backward's grid order (gpu/fa2_bwd_wgmma.cu): v9 = v5 with the K/V
# blocks fastest in the grid (the blocks at work share one head's Q_i, dO_i, dQ_i in L2), v10 = v9
# with each block's Q-block loop rotated by j. First, in parallel: the [bwd_wgmma] tests of v9 and
# v10, four verifies, memcheck and racecheck on small v10 verifies; then alone: bench-gpu --backward
# --tensor-cores at the 8 target points for v5, v9, v10 and PyTorch's flash and cuDNN backward on
# the same shapes; the table last. Usage (repository root): bash tools/device/bwd_order.sh BIN OUT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
export FLASHSTEP_TC_BWD_VARIANTS=9,10
catch2 "$OUT/t_small.log" timeout 60 "$BIN/flashstep_tc_tests" "[bwd_wgmma][small]" & p1=$!
catch2 "$OUT/t_ragged.log" timeout 60 "$BIN/flashstep_tc_tests" "*wgmma rungs: ragged*" & p2=$!
catch2 "$OUT/t_causal.log" timeout 60 "$BIN/flashstep_tc_tests" "*wgmma rungs: causal*" & p3=$!
unset FLASHSTEP_TC_BWD_VARIANTS
V="$FS verify --backward --tensor-cores"
i=0
for args in "--variant 9 --dtype bf16 --nq 517 --nk 300 --d 64 --causal" "--variant 10 --dtype bf16 --nq 300 --nk 517 --d 128 --causal" \
            "--variant 10 --dtype fp16 --nq 1000 --nk 700 --d 64 --kv-len 650" "--variant 9 --dtype fp16 --nq 333 --nk 333 --d 128 --kv-len 250"; do
  i=$((i + 1)); (timeout 40 $V $args; echo "rc=$?") > "$OUT/verify$i.txt" 2>&1 &
done
(timeout 50 compute-sanitizer --tool memcheck --error-exitcode 9 $V --variant 10 --dtype bf16 --nq 150 --nk 200 --d 64 --causal; echo "rc=$?") > "$OUT/memcheck.txt" 2>&1 &
(timeout 50 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 $V --variant 10 --dtype fp16 --nq 150 --nk 200 --d 128 --kv-len 150; echo "rc=$?") > "$OUT/racecheck.txt" 2>&1 &
wait $p1; r1=$?; wait $p2; r2=$?; wait $p3; r3=$?
wait
tl() { echo "$(verdict "$2") $(catch2_line "$1") $(grep -m1 -A3 FAILED "$1" | tr -s ' \n' ' ' | cut -c1-120)"; }
S+=("tests v9,10 [bwd_wgmma][small]  | $(tl "$OUT/t_small.log" $r1)")
S+=("tests v9,10 ragged, Nq != Nk    | $(tl "$OUT/t_ragged.log" $r2)")
S+=("tests v9,10 causal, key padding | $(tl "$OUT/t_causal.log" $r3)")
for k in 1 2 3 4; do S+=("verify $k: $(tail -1 "$OUT/verify$k.txt") $(grep -E '^(PASS|FAIL)' "$OUT/verify$k.txt" | head -1)"); done
S+=("memcheck v10: $(tail -1 "$OUT/memcheck.txt") $(grep 'ERROR SUMMARY' "$OUT/memcheck.txt" | tail -1)")
S+=("racecheck v10: $(tail -1 "$OUT/racecheck.txt") $(grep 'RACECHECK SUMMARY' "$OUT/racecheck.txt" | tail -1)")
S+=("correctness: $(($(date +%s) - T0)) s")
: > "$OUT/bench.txt"
for v in 5 9 10; do
  for c in "" "--causal"; do
    timeout 60 "$FS" bench-gpu --backward --tensor-cores --dtype bf16 --n 4096 16384 --d 64 128 --no-fp32 --variant $v $c >> "$OUT/bench.txt" 2>&1
    S+=("bench v$v ${c:-non-causal}: rc=$?")
  done
done
timeout 120 python3 gpu/tools/sdpa_bwd_bench.py --dtype bf16 --ns 4096,16384 --ds 64,128 --causal both > "$OUT/sdpa.txt" 2>&1
S+=("sdpa_bwd_bench.py: rc=$?; total $(($(date +%s) - T0)) s")
{
  printf '%s\n' "${S[@]}"
  python3 - "$OUT" <<'PY'
import sys
sys.path.insert(0, "tools/device")
import bwd_tables
out = sys.argv[1]
ours = {k: t[1:] for k, t in bwd_tables.ours(f"{out}/bench.txt").items()}  # (bwd, f+b)
torch = {k: t[1:] for k, t in bwd_tables.torch(f"{out}/sdpa.txt").items()}
print("bwd TFLOP/s (f+b), bf16 B16 H16 | N d causal | v5 | v9 | v10 | flash | cudnn | best/flash bwd (f+b)")
for causal in (False, True):
    for d in (64, 128):
        for n in (4096, 16384):
            c = lambda t: f"{t[0]:6.1f} ({t[1]:6.1f})" if t else "      - (     -)"
            row = [ours.get((n, d, causal, v)) for v in (5, 9, 10)]
            fl, cu = torch.get(("flash", n, d, causal)), torch.get(("cudnn", n, d, causal))
            best = max([r for r in row if r], default=None, key=lambda r: r[0])
            ratio = f"{best[0] / fl[0]:.2f}x ({best[1] / fl[1]:.2f}x)" if best and fl else "-"
            print(f"{n:6d} {d:4d} {'yes' if causal else 'no ':3s} | " + " | ".join(c(r) for r in row) + f" | {c(fl)} | {c(cu)} | {ratio}")
PY
} | tee "$OUT/summary.txt"
