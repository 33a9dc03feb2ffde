#!/usr/bin/env bash
# One device call for the backward's dQ writer on the bulk copy engine: variant 7 (v5 with
# tau dQ_i added to HBM by cp.reduce.async.bulk .add.f32 from alternating shared-memory slabs)
# and variant 8 (d = 64 only: v7 with the warpgroups apart within a Q block), gpu/fa2_bwd_wgmma.cu,
# against v5 (the default) in the same call. Wall budget BUDGET (120 s): each later step is
# skipped when too little of it is left, d = 64 (the target) first:
#   1. in parallel: the [bwd_wgmma] tests for v7 and v8 alone (FLASHSTEP_TC_BWD_VARIANTS; ragged,
#      Nq != Nk, causal, key padding, rows that see no key, d 64/128, bf16/fp16, against the CPU
#      emulation and float64 within the derived bound), verify --backward --tensor-cores --variant
#      7 (four shapes) and 8 (one), compute-sanitizer memcheck and racecheck on small verifies,
#      the SASS of the wgmma kernels (HGMMA, bulk ops, RED, LDL/STL per variant);
#   2. alone: bench-gpu --backward --tensor-cores --dtype bf16 --n 4096 16384 --no-fp32 --variant V
#      for V = 7, 8, 5 at d = 64 (non-causal, causal), V = 7, 5 at d = 128; then PyTorch's flash
#      and cuDNN backward (gpu/tools/sdpa_bwd_bench.py) at d = 64, then d = 128;
# then a table per point (ours per variant vs flash and cuDNN, backward and forward + backward;
# PyTorch's figures from this call, or, marked *, from the call-1 run in
# gpu/results/tensor-core-backward/targets/sdpa.txt where this call had no time for them) and a
# summary, one line per check, in OUT/summary.txt. BUDGET=200 runs everything.
# Usage (repository root): bash tools/device/bwd_dq.sh BIN OUT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
BUDGET=${BUDGET:-120}
VNEW=${VNEW:-7,8}  # the variants under test (a comma list; 8 is d = 64 only)
# The caller may kill this script at BUDGET: steps stop 8 s before it, and the summary is
# rewritten after every step, so what was done is in OUT/summary.txt whatever happens.
left() { echo $((BUDGET - 8 - ($(date +%s) - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo $((l > 1 ? l : 1)) || echo "$1"; }  # min(want, left)
S=()

# ---- table ----------------------------------------------------------------------------------------
# bench-gpu's rows: N d fwd-v bwd-v | fwd ms bwd ms f+b ms | fwd TF bwd TF f+b TF | ...; a header
# line (bench-gpu ..., causal or no mask) precedes each run's rows.
make_table() {
python3 - "$OUT" "$VNEW" gpu/results/tensor-core-backward/targets/sdpa.txt <<'PY' > "$OUT/table.txt" 2>&1
import re, sys
out, vnew = sys.argv[1], [int(v) for v in sys.argv[2].split(",")]
ours, causal = {}, False
for line in open(f"{out}/bench.txt"):
    if line.startswith("bench-gpu"):
        causal = "causal" in line.split(",")[2]
    m = re.match(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\|[^|]*\|\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
    if m:
        ours[(int(m[1]), int(m[2]), causal, int(m[4]))] = (float(m[6]), float(m[7]))
def read_sdpa(path):
    t = {}
    try:
        for line in open(path):
            m = re.match(r"(flash|cudnn)\s+(\d+)\s+(\d+)\s+(True|False)\s*\|[^|]*\|\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
            if m:
                t[(m[1], int(m[3]), int(m[2]), m[4] == "True")] = (float(m[6]), float(m[7]))
    except OSError:
        pass
    return t
torch, old = read_sdpa(f"{out}/sdpa.txt"), read_sdpa(sys.argv[3])
star = set()
for k, x in old.items():  # PyTorch's figures from the targets run where this run has none, marked *
    if k not in torch:
        torch[k] = x
        star.add(k[1:])
vs = vnew + [5]
f = lambda x: f"{x:6.1f}" if x else "     -"
r = lambda a, b: f"{a / b:5.2f}x" if a and b else "    -"
print("bwd TFLOP/s (f+b TFLOP/s), bf16 B16 H16 | N d causal | " + " | ".join(f"v{v}" for v in vs) +
      " | flash | cudnn | " + " | ".join(f"v{v}/flash bwd (f+b)" for v in vs) + " | " +
      " | ".join(f"v{v}/v5" for v in vnew) + " | best/cudnn")
for d in (64, 128):
    for causal in (False, True):
        for n in (4096, 16384):
            o = {v: ours.get((n, d, causal, v)) for v in vs}
            fl, cu = torch.get(("flash", n, d, causal)), torch.get(("cudnn", n, d, causal))
            if not any(o.values()):
                continue
            g = lambda t, i: t[i] if t else None
            best = max((g(o[v], 0) or 0) for v in vs)
            print(f" {n:5d} {d:3d} {'yes' if causal else 'no ':3s}{'*' if (n, d, causal) in star else ' '}| "
                  + " | ".join(f"{f(g(o[v], 0))} ({f(g(o[v], 1)).strip()})" for v in vs)
                  + f" | {f(g(fl, 0))} ({f(g(fl, 1)).strip()}) | {f(g(cu, 0))} ({f(g(cu, 1)).strip()}) | "
                  + " | ".join(f"{r(g(o[v], 0), g(fl, 0))} ({r(g(o[v], 1), g(fl, 1)).strip()})" for v in vs) + " | "
                  + " | ".join(r(g(o[v], 0), g(o[5], 0)) for v in vnew) + f" | {r(best, g(cu, 0))}")
if star:
    print("* PyTorch's figures (some or all) from the targets run, gpu/results/tensor-core-backward/targets/sdpa.txt")
PY
}
write_summary() {  # the failing tests' first lines, one line per check, the table
  make_table
  {
    grep -h -B2 -A8 -E "FAILED|REQUIRE|CHECK\(" "$OUT"/t_*.log 2>/dev/null | head -16
    echo "---- summary (bwd_dq: backward variant $VNEW, dQ by the bulk copy engine, against v5)"
    printf '%s\n' "${S[@]}"
    cat "$OUT/table.txt"
  } > "$OUT/summary.txt"
}
# ---- 1. correctness, in parallel ----------------------------------------------------------------
V7="$FS verify --backward --tensor-cores --variant 7"
T="$BIN/flashstep_tc_tests"
FLASHSTEP_TC_BWD_VARIANTS=$VNEW catch2 "$OUT/t_small.log" timeout 40 "$T" "[bwd_wgmma][small]" & p1=$!
FLASHSTEP_TC_BWD_VARIANTS=$VNEW catch2 "$OUT/t_ragged.log" timeout 40 "$T" "*wgmma rungs: ragged*" & p2=$!
FLASHSTEP_TC_BWD_VARIANTS=$VNEW catch2 "$OUT/t_causal.log" timeout 40 "$T" "*wgmma rungs: causal*" & p3=$!
timeout 30 $V7 --dtype bf16 --nq 517 --nk 300 --d 64 --causal > "$OUT/verify1.txt" 2>&1 & p4=$!
timeout 30 $V7 --dtype fp16 --nq 333 --nk 333 --d 64 --kv-len 250 > "$OUT/verify2.txt" 2>&1 & p5=$!
timeout 30 $V7 --dtype bf16 --nq 300 --nk 517 --d 128 --causal > "$OUT/verify3.txt" 2>&1 & p6=$!
timeout 30 $V7 --dtype fp16 --nq 1000 --nk 700 --d 128 --kv-len 650 > "$OUT/verify4.txt" 2>&1 & p7=$!
timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 $V7 --dtype bf16 --nq 150 --nk 200 --d 64 --causal \
  > "$OUT/memcheck.txt" 2>&1 & p8=$!
timeout 40 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 $V7 --dtype fp16 --nq 150 \
  --nk 200 --d 128 --kv-len 150 > "$OUT/racecheck.txt" 2>&1 & p9=$!
V8="$FS verify --backward --tensor-cores --variant 8"
timeout 40 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 $V8 --dtype bf16 --nq 130 \
  --nk 140 --d 64 > "$OUT/racecheck64.txt" 2>&1 & p10=$!
timeout 30 $V8 --dtype bf16 --nq 517 --nk 300 --d 64 --causal > "$OUT/verify5.txt" 2>&1 & p12=$!
timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 $V8 --dtype fp16 --nq 150 --nk 200 --d 64 --kv-len 120 \
  > "$OUT/memcheck8.txt" 2>&1 & p13=$!
# SASS per backward wgmma variant: HGMMA, bulk ops (any opcode with BLK), RED atomics, LDL/STL.
# (the kernels are linked into the executable: the flashstep_gpu libraries are static)
timeout 40 cuobjdump --dump-sass "$FS" 2>/dev/null |
  awk '/Function :/ { v = ""; if (match($0, /fa2_bwd_wgmma_kernel.*WgBwdConfigILi[0-9]+ELi[0-9]+/)) {
         s = substr($0, RSTART, RLENGTH); sub(/.*WgBwdConfigILi/, "", s); sub(/ELi/, " d", s); v = "v" s } }
       v != "" { op = ($2 ~ /^@/) ? $3 : $2; sub(/;$/, "", op)
         if (op ~ /^HGMMA/) h[v]++; if (op ~ /BLK/) b[v, op]++; if (op ~ /^RED/) r[v]++; if (op ~ /^(LDL|STL)/) l[v]++; seen[v] = 1 }
       END { for (v in seen) { ops = ""; for (k in b) { split(k, a, SUBSEP); if (a[1] == v) ops = ops " " a[2] "x" b[k] }
               printf "%s (bf16+fp16): %d HGMMA, %d RED, %d LDL/STL, bulk:%s\n", v, h[v], r[v], l[v], ops == "" ? " none" : ops } }' |
  sort > "$OUT/sass.txt" & p11=$!
wait $p1; r1=$?; wait $p2; r2=$?; wait $p3; r3=$?; wait $p4; r4=$?; wait $p5; r5=$?; wait $p6; r6=$?; wait $p7; r7=$?
wait $p8; r8=$?; wait $p9; r9=$?; wait $p10; r10=$?; wait $p11; wait $p12; r12=$?; wait $p13; r13=$?
verify_line() {  # PASS/FAIL, the variant that ran and the worst GPU-vs-CPU ratios
  if grep -qE '^(PASS|FAIL)' "$1"; then
    echo "rc=$2 $(grep -E '^(PASS|FAIL)' "$1" | head -1) | $(grep -E '^GPU vs CPU' "$1" | tr -s ' ' | cut -c1-80)"
  else
    echo "rc=$2 $(tail -1 "$1" | cut -c1-110)"
  fi
}
S+=("tests v$VNEW [bwd_wgmma][small]          | $(tests_line "$OUT/t_small.log" $r1)")
S+=("tests v$VNEW ragged, Nq != Nk, tiny      | $(tests_line "$OUT/t_ragged.log" $r2)")
S+=("tests v$VNEW causal and key padding      | $(tests_line "$OUT/t_causal.log" $r3)")
S+=("verify v7 bf16 517x300 d64 causal     | $(verify_line "$OUT/verify1.txt" $r4)")
S+=("verify v7 fp16 333x333 d64 kv-len 250 | $(verify_line "$OUT/verify2.txt" $r5)")
S+=("verify v7 bf16 300x517 d128 causal    | $(verify_line "$OUT/verify3.txt" $r6)")
S+=("verify v7 fp16 1000x700 d128 kv 650   | $(verify_line "$OUT/verify4.txt" $r7)")
S+=("verify v8 bf16 517x300 d64 causal     | $(verify_line "$OUT/verify5.txt" $r12)")
S+=("memcheck v7 bf16 150x200 d64 causal   | rc=$r8 $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.txt" | tail -1) $(grep -E '^(PASS|FAIL)' "$OUT/memcheck.txt" | head -1)")
S+=("racecheck v7 fp16 150x200 d128 kv 150 | rc=$r9 $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck.txt" | tail -1) $(grep -E '^(PASS|FAIL)' "$OUT/racecheck.txt" | head -1)")
S+=("racecheck v8 bf16 130x140 d64         | rc=$r10 $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck64.txt" | tail -1) $(grep -E '^(PASS|FAIL)' "$OUT/racecheck64.txt" | head -1)")
S+=("memcheck v8 fp16 150x200 d64 kv 120   | rc=$r13 $(grep -E 'ERROR SUMMARY' "$OUT/memcheck8.txt" | tail -1) $(grep -E '^(PASS|FAIL)' "$OUT/memcheck8.txt" | head -1)")
while read -r line; do S+=("SASS $line"); done < "$OUT/sass.txt"
: > "$OUT/bench.txt"
: > "$OUT/sdpa.txt"
write_summary

# ---- 2. speed, alone: ours (v7, v8, v5) then PyTorch, d = 64 first ------------------------------
bench() {  # variant, d, "" or --causal
  local want=$(( $2 == 64 ? 25 : 35 ))
  if [ "$(left)" -lt $((want / 2)) ]; then echo "skipped (budget)"; return; fi
  timeout "$(cap $want)" "$FS" bench-gpu --backward --tensor-cores --dtype bf16 --n 4096 16384 --d "$2" --no-fp32 \
    --variant "$1" $3 --json-file "$OUT/bench_v$1_d$2${3:+_causal}.json" >> "$OUT/bench.txt" 2>&1
  local rc=$?
  [ $rc = 0 ] && echo "rc=0" || echo "rc=$rc $(tail -1 "$OUT/bench.txt" | cut -c1-70)"
}
sdpa() {  # d
  if [ "$(left)" -lt 20 ]; then echo "skipped (budget)"; return; fi
  timeout "$(cap 60)" python3 gpu/tools/sdpa_bwd_bench.py --dtype bf16 --ns 4096,16384 --ds "$1" --causal both \
    >> "$OUT/sdpa.txt" 2>&1
  echo "rc=$?"
}
for d in 64 128; do
  for c in "" --causal; do
    for v in ${VNEW//,/ } 5; do
      [ "$v" = 8 ] && [ "$d" = 128 ] && continue  # v8 is d = 64 only
      S+=("$(printf 'bench-gpu bwd tc v%s d%-3s %-8s' $v $d "$c")   | $(bench $v $d "$c")")
      write_summary
    done
  done
done
for d in 64 128; do
  S+=("$(printf 'sdpa_bwd_bench.py flash, cuDNN d%-3s' $d)  | $(sdpa $d)")
  write_summary
done

S+=("total                                 | $(($(date +%s) - T0)) s of a ${BUDGET} s budget")
write_summary
cat "$OUT/summary.txt"
