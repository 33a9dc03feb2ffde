#!/usr/bin/env bash
# One device call for the backward's pipelined rung (configuration 11, gpu/ladder/bwd_pipe_kernel.cuh)
# against the default (9), from a ladder build (BIN holds its flashstep and flashstep_tc_tests).
# First, in parallel: the [bwd_wgmma] tests of 11, four verifies of 11, its dK and dV against v9's
# bit for bit on two shapes, and the four compute-sanitizer tools on small verifies of 11 at d = 64
# and 128; then alone: bench-gpu --backward --tensor-cores at the 8 target points for 9 and 11 and
# PyTorch's flash and cuDNN backward on the same shapes (both sides BTB calls back to back); the
# table last.
# Usage (repository root): bash tools/device/bwd_pipe.sh BIN OUT   (VARIANTS="9 11" by default;
# SDPA=0 leaves PyTorch's side out)
# Another rung against the default the same way: NEW=12 VARIANTS="9 12" bash tools/device/bwd_pipe.sh BIN OUT
# (configuration 12: v9 with its matrix descriptors built once). BENCH=0: the checks of NEW alone.
# DS=64: only the head dimension 64 (a rung that has no d = 128 form, as 18 and 19), PyTorch's side
# too. SAN_NQ64: the d = 64 sanitizer shape's Nq (333 by default: 6 Q blocks of 64; a rung with
# Br = 128, as 19, needs 700 or more for its 3-stage ring to wrap). MANY=1: the four tools also on
# more tiles than SMs (the persistent rungs' several tiles per block). CHECKS=0: the speed of
# VARIANTS alone (several new rungs checked one by one with BENCH=0, then timed side by side).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
VARIANTS=${VARIANTS:-9 11}
NEW=${NEW:-11}
REF=${REF:-9}  # the rung whose dK and dV NEW must equal bit for bit (29 in a default build: 9 is the ladder's)
BTB=${BTB:-3}  # calls back to back per timed sample, both sides (a backward call is 9 ms or more)
DS=${DS:-64 128}
has_d() { case " $DS " in *" $1 "*) return 0 ;; esac; return 1; }
d_of() { echo "$1" | sed -E 's/.*--d ([0-9]+).*/\1/'; }
if [ "${CHECKS:-1}" = 1 ]; then
export FLASHSTEP_TC_BWD_VARIANTS=$NEW
catch2 "$OUT/t_small.log" timeout 90 "$BIN/flashstep_tc_tests" "[bwd_wgmma][small]" & p1=$!
catch2 "$OUT/t_ragged.log" timeout 90 "$BIN/flashstep_tc_tests" "*wgmma rungs: ragged*" & p2=$!
catch2 "$OUT/t_causal.log" timeout 90 "$BIN/flashstep_tc_tests" "*wgmma rungs: causal*" & p3=$!
unset FLASHSTEP_TC_BWD_VARIANTS
V="$FS verify --backward --tensor-cores"
i=0
for args in "--dtype bf16 --nq 517 --nk 300 --d 64 --causal" "--dtype bf16 --nq 300 --nk 517 --d 128 --causal" \
            "--dtype fp16 --nq 1000 --nk 700 --d 64 --kv-len 650" "--dtype fp16 --nq 333 --nk 333 --d 128 --kv-len 250"; do
  i=$((i + 1)); has_d "$(d_of "$args")" || continue
  (timeout 60 $V --variant $NEW $args; echo "rc=$?") > "$OUT/verify$i.txt" 2>&1 &
done
# dK and dV of NEW against v9's on the same inputs, bit for bit (a rung that only reorders how v9
# is issued, as 12 does, must give v9's bits; each key's rows are written by one block). dQ is not
# compared: its float32 atomic adds from the K/V blocks land in a run-dependent order.
G="$FS gpu --backward --tensor-cores"
k=0
for args in "--dtype bf16 --nq 517 --nk 300 --d 64 --causal" "--dtype fp16 --nq 333 --nk 333 --d 128 --kv-len 250"; do
  k=$((k + 1)); has_d "$(d_of "$args")" || continue
  (for v in $REF $NEW; do
     timeout 60 $G --variant $v $args --out-dk "$OUT/same${k}_dk_v$v.npy" --out-dv "$OUT/same${k}_dv_v$v.npy" ||
       { echo "the run of v$v failed: rc=$?"; rm -f "$OUT/same${k}"_d[kv]_v*.npy; exit 1; }
   done
   cmp -s "$OUT/same${k}_dk_v$REF.npy" "$OUT/same${k}_dk_v$NEW.npy" && cmp -s "$OUT/same${k}_dv_v$REF.npy" "$OUT/same${k}_dv_v$NEW.npy" &&
     echo "equal bit for bit" || echo "differ"
   rm -f "$OUT/same${k}"_d[kv]_v*.npy) > "$OUT/same$k.txt" 2>&1 &
done
wait $p1; r1=$?; wait $p2; r2=$?; wait $p3; r3=$?
wait
SAN=()
for tool in memcheck racecheck synccheck initcheck; do
  extra=""; [ $tool = racecheck ] && extra="--racecheck-report all"
  # More than three Q blocks per K/V block (6 and 5), so that a rung's ring of Q_i buffers wraps
  # around: racecheck found configuration 13's stage reuse only there (producer-warpgroup/).
  has_d 64 && (timeout 90 compute-sanitizer --tool $tool $extra --error-exitcode 9 $V --variant $NEW --dtype bf16 --nq ${SAN_NQ64:-333} --nk 200 --d 64 --causal; echo "rc=$?") > "$OUT/${tool}_d64.txt" 2>&1 &
  has_d 128 && (timeout 90 compute-sanitizer --tool $tool $extra --error-exitcode 9 $V --variant $NEW --dtype fp16 --nq 300 --nk 300 --d 128 --kv-len 250; echo "rc=$?") > "$OUT/${tool}_d128.txt" 2>&1 &
done
wait
# MANY=1 (a persistent rung, 38-40): the four tools again on more (head, K/V block) tiles than the
# H200's 132 SMs, so that a thread block takes several in turn: B x H = 3 x 16 heads of 64 queries
# and 1000 keys (8 K/V blocks each), causal, batch entry 1 keeping no key and entry 2 300 keys.
if [ "${MANY:-0}" = 1 ]; then
  for d in $DS; do sanitize_many "$OUT/many_d$d" $d $G --variant $NEW --dtype bf16; done
fi
tl() { echo "$(verdict "$2") $(catch2_line "$1") $(grep -m1 -A3 FAILED "$1" | tr -s ' \n' ' ' | cut -c1-120)"; }
S+=("tests v$NEW [bwd_wgmma][small]  | $(tl "$OUT/t_small.log" $r1)")
S+=("tests v$NEW ragged, Nq != Nk    | $(tl "$OUT/t_ragged.log" $r2)")
S+=("tests v$NEW causal, key padding | $(tl "$OUT/t_causal.log" $r3)")
for k in 1 2 3 4; do [ -f "$OUT/verify$k.txt" ] && S+=("verify $k: $(tail -1 "$OUT/verify$k.txt") $(grep -E '^(PASS|FAIL)' "$OUT/verify$k.txt" | head -1)"); done
for k in 1 2; do [ -f "$OUT/same$k.txt" ] && S+=("dK, dV v$NEW against v$REF, shape $k: $(tail -1 "$OUT/same$k.txt")"); done
for f in "$OUT"/*check_d*.txt "$OUT"/many_d*_*check.txt; do [ -f "$f" ] || continue; S+=("$(basename "$f" .txt): $(tail -1 "$f") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$f" | tail -1)"); done
S+=("correctness: $(($(date +%s) - T0)) s")
fi
: > "$OUT/bench.txt"
[ "${BENCH:-1}" = 1 ] || VARIANTS=""
for v in $VARIANTS; do
  for c in "" "--causal"; do
    timeout 90 "$FS" bench-gpu --backward --tensor-cores --dtype bf16 --n 4096 16384 --d $DS --no-fp32 --back-to-back $BTB --variant $v $c >> "$OUT/bench.txt" 2>&1
    S+=("bench v$v ${c:-non-causal}: rc=$?")
  done
done
if [ "${SDPA:-1}" = 1 ]; then  # SDPA=0: the rungs only (PyTorch's side takes about 200 s)
  timeout 200 python3 gpu/tools/sdpa_bwd_bench.py --dtype bf16 --ns 4096,16384 --ds "${DS// /,}" --causal both --back-to-back $BTB > "$OUT/sdpa.txt" 2>&1
  S+=("sdpa_bwd_bench.py: rc=$?")
else
  : > "$OUT/sdpa.txt"
fi
S+=("total $(($(date +%s) - T0)) s")
{
  printf '%s\n' "${S[@]}"
  python3 - "$OUT" "$VARIANTS" <<'PY'
import sys
sys.path.insert(0, "tools/device")
import bwd_tables
out, vs = sys.argv[1], [int(v) for v in sys.argv[2].split()]
ours = {k: t[1:] for k, t in bwd_tables.ours(f"{out}/bench.txt").items()}  # (bwd, f+b)
torch = {k: t[1:] for k, t in bwd_tables.torch(f"{out}/sdpa.txt").items()}
print("bwd TFLOP/s (f+b), bf16 B16 H16, both sides back to back | N d causal | " + " | ".join(f"v{v}" for v in vs)
      + " | flash | cudnn | last/first bwd | last/cudnn bwd (f+b)")
for causal in (False, True):
    for d in (64, 128):
        for n in (4096, 16384):
            c = lambda t: f"{t[0]:6.1f} ({t[1]:6.1f})" if t else "      - (     -)"
            row = [ours.get((n, d, causal, v)) for v in vs]
            fl, cu = torch.get(("flash", n, d, causal)), torch.get(("cudnn", n, d, causal))
            gain = f"{row[-1][0] / row[0][0]:.3f}x" if row[0] and row[-1] else "-"
            vs_cu = f"{row[-1][0] / cu[0]:.2f}x ({row[-1][1] / cu[1]:.2f}x)" if row[-1] and cu else "-"
            print(f"{n:6d} {d:4d} {'yes' if causal else 'no ':3s} | " + " | ".join(c(r) for r in row) + f" | {c(fl)} | {c(cu)} | {gain} | {vs_cu}")
PY
} | tee "$OUT/summary.txt"
