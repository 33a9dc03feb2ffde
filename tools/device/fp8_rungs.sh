#!/usr/bin/env bash
# The FP8 forward's ladder rungs (gpu/ladder/fp8_rungs.cu: 1 four chains; 2 Bc = 192 at d = 128;
# 3 both; 4, 5 ping-pong at Bc = 128, 192; 6, 7 every 8th exp2 by a polynomial at d = 64, at d = 128
# Bc = 192; 8 d = 64 on two consumers with S one block ahead, 9 its control; 10, 11 descriptors
# built once at Bc = 128, 192; 12, 13 d = 128 on three consumers with Bc = 64, 2 and 4 stages; 14 the
# d = 128 default before Bc = 192; 15 d = 128 at Bc = 64 with S one block ahead; 16, 17 the d = 128
# and d = 64 defaults with a third K/V stage; 18, 19 Bc = 224 at d = 128 and 160 at d = 64; 20, 21 the
# d = 128 and d = 64 defaults with K_j issued before V_j-1) beside
# the default, from a ladder build, in one device call:
#   1. verify --tensor-cores --dtype fp8 --variant V for each rung on ragged, causal, key-length,
#      per-block and rotated-outlier shapes (at the rung's d), against the CPU emulation on the
#      rung's own blocks and float64;
#   2. the [fp8] tests of flashstep_tc_tests for the rungs (FLASHSTEP_FP8_VARIANTS);
#   3. compute-sanitizer memcheck, racecheck, synccheck and initcheck on a small verify of each rung;
#   4. bench-gpu --tensor-cores --dtype fp8 --variant V (the default 0 and each rung, each beside
#      the bf16 default in its own process) at N = 4096, 16384, at the rung's d, causal
#      and not, ROUNDS times in turn (default 1); the table last: the median TFLOP/s, each rung
#      over the default, and FP8 over bf16; with more than one round, also each rung over the
#      default of the same round, the median and range of those ratios.
# Usage (repository root, GPU machine): bash tools/device/fp8_rungs.sh BIN OUT   (BIN: a ladder build's
# flashstep and flashstep_tc_tests; about 4 minutes)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
RUNGS=${RUNGS:-1 2 3}  # RUNGS="4 5 6 7": others
V="$FS verify --schedule fa2 --tensor-cores --dtype fp8"
SHAPES=("--nq 333 --nk 517 --d 128" "--nq 517 --nk 333 --d 128 --causal --fp8-scale per-block"
        "--nq 700 --nk 1000 --d 128 --kv-len 650 --fp8-scale per-block"
        "--nq 257 --nk 3000 --d 128 --rotate --pattern outliers --fp8-scale per-block"
        "--nq 1 --nk 1 --d 128" "--nq 200 --nk 191 --d 128 --causal")
n=0
# The head dimensions of rung v (gpu/tc_launch.h's fp8_ladder_rung): 0 and 1 both, 6, 8, 9, 17, 19, 21 d = 64, the others d = 128.
ds_of() { case $1 in 0|1) echo "64 128" ;; 6|8|9|17|19|21) echo 64 ;; *) echo 128 ;; esac; }
for v in $RUNGS; do
  shapes=()
  case " $(ds_of $v) " in *" 128 "*) shapes=("${SHAPES[@]}") ;; esac
  case " $(ds_of $v) " in *" 64 "*) shapes+=("--nq 333 --nk 517 --d 64 --fp8-scale per-block" "--nq 517 --nk 300 --d 64 --causal"
                                             "--nq 257 --nk 3000 --d 64 --rotate --pattern outliers --fp8-scale per-block") ;; esac
  for a in "${shapes[@]}"; do
    n=$((n + 1))
    (echo "== verify --variant $v $a"; timeout 60 $V --variant $v $a; echo "rc=$?") > "$OUT/verify_$n.txt" 2>&1 &
  done
done
FLASHSTEP_FP8_VARIANTS=$(echo $RUNGS | tr ' ' ',') catch2 "$OUT/tests_fp8.log" timeout 120 "$BIN/flashstep_tc_tests" "[fp8]" &
pt=$!
wait $pt; rt=$?
wait
cat "$OUT"/verify_*.txt > "$OUT/verify.txt"
say "verifies: $(grep -c '^PASS' "$OUT/verify.txt") PASS of $n; $(grep -c '^rc=0' "$OUT/verify.txt") exit 0"
grep -B1 -E '^(FAIL|rc=[1-9])' "$OUT/verify.txt" | head -20 | while read -r l; do say "  $l"; done
say "tests [fp8] (variants $RUNGS): $(tests_line "$OUT/tests_fp8.log" $rt)"
for v in $RUNGS; do
  d=128; [ "$(ds_of $v)" != 128 ] && d=64
  for tool in memcheck racecheck synccheck initcheck; do
    log=$OUT/san_${tool}_v$v.txt
    timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $V --variant $v --nq 150 --nk 260 --d $d --causal \
      --fp8-scale per-block > "$log" 2>&1 &
  done
  wait
  for tool in memcheck racecheck synccheck initcheck; do
    log=$OUT/san_${tool}_v$v.txt
    say "compute-sanitizer $tool rung $v (d $d): $(sanitized "$log") $(grep -c '^PASS' "$log") PASS"
  done
done
say "correctness: $(($(date +%s) - T0)) s"
for r in $(seq "${ROUNDS:-1}"); do
  for v in 0 $RUNGS; do
    for c in "" "--causal"; do
      ds=$(ds_of $v)
      tag=v${v}${c:+_causal}_r$r
      timeout 90 "$FS" bench-gpu --tensor-cores --dtype fp8 --variant $v --no-sweep --n 4096 16384 --d $ds $c \
        --json-file "$OUT/bench_$tag.json" > "$OUT/bench_$tag.txt" 2>&1
      say "bench $tag: rc=$?"
    done
  done
done
say "total $(($(date +%s) - T0)) s"
python3 - "$OUT" "0 $RUNGS" <<'PY' | tee "$OUT/table.txt"
import json, os, sys
out, vs = sys.argv[1], sys.argv[2].split()
import glob, statistics
samples = {}  # (v, n, d, causal) -> {round: (fp8 TFLOP/s, bf16 TFLOP/s)}
for v in vs:
    for causal in (False, True):
        for path in glob.glob(os.path.join(out, f"bench_v{v}{'_causal' if causal else ''}_r*.json")):
            rnd = int(path.rsplit("_r", 1)[1].split(".")[0])
            try:
                for r in json.load(open(path))["rows"]:
                    samples.setdefault((v, r["n"], r["d"], causal), {})[rnd] = (
                        r["fp8_tc"]["tflops"], r["bf16_default"]["tflops"])
            except Exception:
                pass
# The median over the rounds of each side (ROUNDS, default 1).
res = {k: (statistics.median(a for a, _ in x.values()), statistics.median(b for _, b in x.values()), len(x))
       for k, x in samples.items()}
rounds = max((t[2] for t in res.values()), default=0)
print(f"FP8 forward rungs, TFLOP/s, median of {rounds} round(s) (x the default FP8 / x the bf16 default of the same process);"
      " B x H x N = 131072, H = 8")
print("%6s %4s %3s | " % ("N", "d", "cau") + " | ".join("%-24s" % f"v{v}" for v in vs))
for causal in (False, True):
    for d in (128, 64):
        for n in (16384, 4096):
            if (vs[0], n, d, causal) not in res:
                continue
            base = res[(vs[0], n, d, causal)][0]
            cells = []
            for v in vs:
                t = res.get((v, n, d, causal))
                cells.append("%-24s" % (f"{t[0]:6.1f} ({t[0] / base:.3f}x / {t[0] / t[1]:.2f}x)" if t else "-"))
            print("%6d %4d %3s | " % (n, d, "yes" if causal else "no") + " | ".join(cells))
# With more than one round: each rung over the default of the same round (the rounds alternate, so
# a pair shares the card's state), as the median and the range of the rounds.
if rounds > 1:
    print(f"each rung's TFLOP/s over the default's of the same round: median (lowest-highest) of {rounds} rounds")
    print("%6s %4s %3s | " % ("N", "d", "cau") + " | ".join("%-22s" % f"v{v}" for v in vs[1:]))
    for causal in (False, True):
        for d in (128, 64):
            for n in (16384, 4096):
                base = samples.get((vs[0], n, d, causal))
                if not base:
                    continue
                cells = []
                for v in vs[1:]:
                    mine = samples.get((v, n, d, causal), {})
                    q = [mine[r][0] / base[r][0] for r in sorted(mine) if r in base]
                    cells.append("%-22s" % (f"{statistics.median(q):.3f} ({min(q):.3f}-{max(q):.3f})" if q else "-"))
                print("%6d %4d %3s | " % (n, d, "yes" if causal else "no") + " | ".join(cells))
PY
{ printf '%s\n' "${S[@]}"; } >> "$OUT/table.txt"
printf '%s\n' "${S[@]}"
