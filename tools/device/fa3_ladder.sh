#!/usr/bin/env bash
# One device call for new rungs of the Hopper forward ladder (gpu/fa3_forward.cu), any of them:
#   1. in parallel: the [tc] tests of each rung in NEW (FLASHSTEP_TC_VARIANTS, four processes by
#      tag, [persistent] included), two `verify --tensor-cores` per rung against the CPU emulation
#      (ragged, causal, key length; bf16 and fp16; d = 64 and 128), memcheck and racecheck on tiny
#      verifies (SAN: rung:tool pairs), the SASS's instruction counts and where each rung's softmax
#      sits against the waits for its products (gpu/tools/sass_overlap.py);
#   2. alone on the GPU: `flashstep_tc_bench` for each rung in NEW, then BENCH (bf16, N = 4096
#      and 16384, d = 64 and 128, causal and not; one process per rung), PyTorch's cuDNN sdpa on
#      the same shapes, and Nsight Compute on each rung in NCU at d = NCU_D (default 128), N = 4096, non-causal
#      (warp stall reasons, pipe use, issue rate: OUT/ncu_vV.txt, the main lines in the summary);
#   3. the summary: one line per check, then TFLOP/s and the ratio to cuDNN per point, with the
#      fastest rung whose tests passed (rungs not in NEW count as correct: checked before).
# Run from the repository root (BIN: flashstep, flashstep_tc_tests, flashstep_tc_bench; tools/device/lib.sh sets the environment):
#   NEW="22 23" BENCH="15 17 21" NCU="15 22" SAN="22:memcheck 23:racecheck" \
#     bash tools/device/fa3_ladder.sh BIN OUT
# Wall time: about 60 s of checks, 8 s per timed rung, 15 s per profiled rung.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
NEW=${NEW:?NEW: the rungs to check}
BENCH=${BENCH:-15 17 19 21}
NCU=${NCU:-}
NCU_D=${NCU_D:-128}
SAN=${SAN:-}
BUDGET=${BUDGET:-300}
S=()

# ---- 1. correctness, all at once ----
(timeout 30 cuobjdump --dump-sass "$BIN/flashstep_tc_bench" > "$OUT/sass.txt" 2>/dev/null) &
# A test process killed by its timeout shows as one failed test case ("fatal error condition:
# SIGTERM") in the failure's first lines below.
TC_TIMEOUT=90
start_rung_tests $TC_TIMEOUT $NEW
V="$BIN/flashstep verify --schedule fa2 --tensor-cores"
# Four shapes, two per rung in turn: Nk (or the key length) not a multiple of any Bc, causal with
# Nq < Nk and Nq > Nk, both types, both d.
SHAPES=("--dtype bf16 --p-dtype bf16 --nq 300 --nk 517 --d 128 --causal --kv-len 400"
        "--dtype fp16 --p-dtype fp16 --nq 1000 --nk 777 --d 64 --kv-len 700"
        "--dtype fp16 --p-dtype fp16 --nq 517 --nk 300 --d 128 --causal"
        "--dtype bf16 --p-dtype bf16 --nq 1000 --nk 777 --d 64 --causal --kv-len 700")
k=0
for v in $NEW; do
  for c in a b; do
    echo "${SHAPES[$k]}" > "$OUT/verify_$v$c.args"
    (timeout 50 $V ${SHAPES[$k]} --variant $v; echo "rc=$?") > "$OUT/verify_$v$c.txt" 2>&1 &
    k=$(((k + 1) % 4))
  done
done
for vt in $SAN; do
  v=${vt%%:*}
  tool=${vt##*:}
  extra=""
  [ "$tool" = racecheck ] && extra="--racecheck-report all"
  (timeout 60 compute-sanitizer --tool $tool $extra --error-exitcode 9 $V --dtype bf16 --p-dtype bf16 --d 128 \
     --nq 200 --nk 150 --causal --variant $v
   echo "rc=$?") > "$OUT/${tool}_v$v.log" 2>&1 &
done
wait
S+=("correctness phase: $(($(date +%s) - T0)) s")
SASS=$OUT/sass.txt
S+=("$(python3 gpu/tools/sass_overlap.py "$SASS" $NEW $BENCH 2>&1)")
S+=("SASS of flashstep_tc_bench: HGMMA $(grep -c HGMMA $SASS), UTMALDG $(grep -c UTMALDG $SASS), USETMAXREG $(grep -c USETMAXREG $SASS), FMNMX $(grep -c FMNMX $SASS), MUFU.EX2 $(grep -c MUFU.EX2 $SASS)")
declare -A OK
for v in $NEW; do
  rung_verdict $v "$OUT/verify_${v}a.txt" "$OUT/verify_${v}b.txt"
  for c in a b; do
    rc=$(tail -1 "$OUT/verify_$v$c.txt")
    S+=("verify v$v $(sed 's/--p-dtype [a-z0-9]* //' "$OUT/verify_$v$c.args"): $([ "$rc" = rc=0 ] && echo PASS || echo "FAIL ($rc)") | $(tail -2 "$OUT/verify_$v$c.txt" | head -1 | cut -c1-100)")
  done
done
for f in "$OUT"/memcheck_v*.log "$OUT"/racecheck_v*.log; do
  [ -e "$f" ] && S+=("$(basename "$f" .log) bf16 200 x 150 d 128 causal: $(tail -1 "$f") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$f" | tail -1)")
done

# ---- 2. speed, alone on the GPU ----
bench_rungs $((BUDGET - 25)) $NEW sdpa $BENCH
late() { [ $(($(date +%s) - T0)) -gt $((BUDGET - 25)) ] && S+=("$1: skipped (budget spent)"); }
# Nsight Compute: one launch (after the warm-ups) of each rung at d = NCU_D, N = 4096, B x H = 32.
for v in $NCU; do
  late "ncu v$v" && continue
  timeout 40 ncu --clock-control none -k regex:fa3_kernel --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --section InstructionStats --page raw \
    "$BIN/flashstep_tc_bench" --no-verify --no-standard --variants $v --ds $NCU_D --ns 4096 --dtypes bf16 --causal off \
    --reps 1 --warmup 2 > "$OUT/ncu_raw_v$v.txt" 2>&1
  rc=$?
  grep -E "gpu__time_duration.sum|sm__throughput.avg.pct|smsp__issue_active.avg.pct|sm__pipe_tensor.*cycles_active.avg.pct|sm__inst_executed_pipe_(xu|fma|alu).avg.pct|smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active.ratio|smsp__warps_active.avg.per_cycle_active|smsp__inst_executed.sum " \
    "$OUT/ncu_raw_v$v.txt" | awk '{print $1, $(NF-1), $NF}' > "$OUT/ncu_v$v.txt"
  top=$(grep stalled "$OUT/ncu_v$v.txt" | sort -k3 -g -r | head -6 | sed -E 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | awk '{printf "%s %s; ", $1, $3}')
  S+=("ncu v$v d $NCU_D (rc=$rc): $(grep -E 'gpu__time_duration' "$OUT/ncu_v$v.txt" | awk '{print $2, $3}') | issue $(grep smsp__issue_active "$OUT/ncu_v$v.txt" | awk '{print $3}')% | tensor $(grep 'sm__pipe_tensor' "$OUT/ncu_v$v.txt" | head -1 | awk '{print $3}')% | xu (exp2) $(grep 'pipe_xu' "$OUT/ncu_v$v.txt" | head -1 | awk '{print $3}')% fma $(grep 'pipe_fma' "$OUT/ncu_v$v.txt" | head -1 | awk '{print $3}')% alu $(grep 'pipe_alu' "$OUT/ncu_v$v.txt" | head -1 | awk '{print $3}')% | stalls/issue: $top")
done
S+=("total $(($(date +%s) - T0)) s")

# ---- 3. summary ----
{
  cat "$OUT/gpu.txt"
  printf '%s\n' "${S[@]}" | tr -s ' '
  PASSED=""
  for v in $NEW; do [ "${OK[$v]}" = PASS ] && PASSED="$PASSED $v"; done
  CORRECT="$PASSED"  # the rungs not in NEW count as correct: checked before
  for v in $BENCH; do case " $NEW " in *" $v "*) ;; *) CORRECT="$CORRECT $v" ;; esac; done
  python3 "$DEV_LIB_DIR/tc_tables.py" "$OUT/bench.txt" "$OUT/sdpa.txt" "$NEW $BENCH" "$CORRECT"
} | tee "$OUT/summary.txt"
