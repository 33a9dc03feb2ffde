#!/usr/bin/env bash
# One device call for the backward's wgmma rungs (variants 5 and 6, gpu/fa2_bwd_wgmma.cu; v6 is
# v5 with dQ's product on mma.sync), about 100 s:
#   1. in parallel: the [bwd_wgmma] tests (v5 and v6 against the CPU emulation and float64 within
#      the derived bound: ragged, Nq != Nk, causal, key padding, d 64/128, bf16/fp16), two
#      verify --backward --tensor-cores --variant 5 and one --variant 6, compute-sanitizer
#      memcheck and racecheck on one small verify of variant 5;
#   2. bench-gpu --backward --tensor-cores --n 4096 --d 64 128 for v2 (the default), v5 and v6
#      (causal too, v2 and v5, while time is left);
#   3. PyTorch's flash and cuDNN backward on the same shapes (gpu/tools/sdpa_bwd_bench.py);
# then a summary table, one line per check.
# Usage (repository root): bash tools/device/bwd_wgmma.sh BIN OUT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
BUDGET=${BUDGET:-100}
left() { echo $((BUDGET - ($(date +%s) - T0))); }  # seconds of the budget left
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo $((l > 1 ? l : 1)) || echo "$1"; }  # min(want, left)
S=()

# ---- 1. correctness, in parallel -------------------------------------------------------------
V5="$FS verify --backward --tensor-cores --variant 5"
FLASHSTEP_TC_BWD_VARIANTS=5,6 catch2 "$OUT/t_small.log" timeout 45 "$BIN/flashstep_tc_tests" "[bwd_wgmma][small]" & p1=$!
FLASHSTEP_TC_BWD_VARIANTS=5,6 catch2 "$OUT/t_ragged.log" timeout 45 "$BIN/flashstep_tc_tests" "*wgmma rungs: ragged*" & p2=$!
FLASHSTEP_TC_BWD_VARIANTS=5,6 catch2 "$OUT/t_causal.log" timeout 45 "$BIN/flashstep_tc_tests" "*wgmma rungs: causal*" & p3=$!
timeout 30 $V5 --dtype bf16 --nq 517 --nk 300 --d 128 --causal > "$OUT/verify1.txt" 2>&1 & p4=$!
timeout 30 $V5 --dtype fp16 --nq 333 --nk 333 --d 64 --kv-len 250 > "$OUT/verify2.txt" 2>&1 & p5=$!
timeout 30 "$FS" verify --backward --tensor-cores --variant 6 --dtype bf16 --nq 300 --nk 517 --d 128 --causal \
  > "$OUT/verify3.txt" 2>&1 & p9=$!
timeout 45 compute-sanitizer --tool memcheck --error-exitcode 9 $V5 --dtype bf16 --nq 150 --nk 200 --d 64 --causal \
  > "$OUT/memcheck.txt" 2>&1 & p6=$!
timeout 45 compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 $V5 --dtype fp16 --nq 150 \
  --nk 200 --d 128 --kv-len 150 > "$OUT/racecheck.txt" 2>&1 & p7=$!
timeout 40 cuobjdump --dump-sass "$FS" 2>/dev/null |
  awk '/Function :/ { f = /fa2_bwd_wgmma/ } f && /HGMMA/ { c++ } f && /LDL|STL/ { l++ } END { print c + 0, "HGMMA,", l + 0, "LDL/STL" }' \
  > "$OUT/hgmma_count.txt" & p8=$!
wait $p1; r1=$?; wait $p2; r2=$?; wait $p3; r3=$?; wait $p4; r4=$?; wait $p5; r5=$?; wait $p6; r6=$?; wait $p7; r7=$?; wait $p8; wait $p9; r9=$?
S+=("tests [bwd_wgmma][small]             | $(tests_line "$OUT/t_small.log" $r1)")
S+=("tests v5, v6 ragged, Nq != Nk, tiny  | $(tests_line "$OUT/t_ragged.log" $r2)")
S+=("tests v5, v6 causal and key padding  | $(tests_line "$OUT/t_causal.log" $r3)")
verify_line() {  # PASS/FAIL and the worst GPU-vs-CPU ratios (dQ dK dV)
  if grep -qE '^(PASS|FAIL)' "$1"; then
    echo "rc=$2 $(grep -E '^(PASS|FAIL)' "$1" | head -1) | $(grep -E '^GPU vs CPU' "$1" | tr -s ' ' | cut -c1-90)"
  else
    echo "rc=$2 $(tail -1 "$1" | cut -c1-120)"
  fi
}
S+=("verify v5 bf16 517x300 d128 causal   | $(verify_line "$OUT/verify1.txt" $r4)")
S+=("verify v5 fp16 333x333 d64 kv-len 250 | $(verify_line "$OUT/verify2.txt" $r5)")
S+=("verify v6 bf16 300x517 d128 causal   | $(verify_line "$OUT/verify3.txt" $r9)")
S+=("memcheck v5 150x200 d64 causal       | rc=$r6 $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.txt" | tail -1) $(grep -E '^(PASS|FAIL)' "$OUT/memcheck.txt" | head -1)")
S+=("racecheck v5 150x200 d128 kv-len 150 | rc=$r7 $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck.txt" | tail -1) $(grep -E '^(PASS|FAIL)' "$OUT/racecheck.txt" | head -1)")
S+=("SASS of the v5, v6 kernels           | $(cat "$OUT/hgmma_count.txt")")

# ---- 2. bench-gpu: v2, v5, v6 at N = 4096 -------------------------------------------------
: > "$OUT/bench.txt"
bench() {  # variant, extra flags
  timeout "$(cap 25)" "$FS" bench-gpu --backward --tensor-cores --dtype bf16 --n 4096 --d 64 128 --variant "$1" \
    --no-fp32 $2 --json-file "$OUT/bench_v$1${2:+_causal}.json" >> "$OUT/bench.txt" 2>&1
  local rc=$?
  [ $rc = 0 ] || tail -1 "$OUT/bench.txt" >&2
  echo $rc
}
rb2=$(bench 2 ""); rb5=$(bench 5 ""); rb6=$(bench 6 "")
S+=("bench-gpu --backward --tensor-cores v2 | rc=$rb2")
S+=("bench-gpu --backward --tensor-cores v5 | rc=$rb5")
S+=("bench-gpu --backward --tensor-cores v6 | rc=$rb6")
causal_too=no
if [ "$(left)" -gt 40 ]; then
  causal_too=yes
  rc2=$(bench 2 "--causal"); rc5=$(bench 5 "--causal")
  S+=("bench-gpu ... --causal v2, v5        | rc=$rc2, rc=$rc5")
fi

# ---- 3. PyTorch on the same shapes ------------------------------------------------------------
if [ "$(left)" -gt 8 ]; then
  timeout "$(cap 40)" python3 gpu/tools/sdpa_bwd_bench.py --dtype bf16 --ns 4096 --ds 64,128 \
    --causal "$([ $causal_too = yes ] && echo both || echo no)" > "$OUT/sdpa.txt" 2>&1
  S+=("sdpa_bwd_bench.py flash, cuDNN       | rc=$?")
else
  S+=("sdpa_bwd_bench.py                    | not run: budget spent")
fi

# ---- summary ----------------------------------------------------------------------------------
# bench-gpu's rows: N d fwd-v bwd-v | fwd ms bwd ms f+b ms | fwd TF bwd TF f+b TF | ...; the
# causal runs follow the non-causal ones in bench.txt, told apart by their header line.
python3 - "$OUT" <<'EOF' > "$OUT/table.txt" 2>&1
import re, sys
out = sys.argv[1]
ours = {}  # (d, causal, variant) -> bwd TF
causal = False
for line in open(f"{out}/bench.txt"):
    if line.startswith("bench-gpu"):
        causal = "causal" in line.split(",")[2]
    m = re.match(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\|[^|]*\|\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
    if m:
        ours[(int(m[2]), causal, int(m[4]))] = float(m[6])
torch = {}  # (backend, d, causal) -> bwd TF
try:
    for line in open(f"{out}/sdpa.txt"):
        m = re.match(r"(flash|cudnn)\s+(\d+)\s+(\d+)\s+(True|False)\s*\|[^|]*\|\s*([\d.]+)\s+([\d.]+)", line)
        if m:
            torch[(m[1], int(m[2]), m[4] == "True")] = float(m[6])
except OSError:
    pass
f = lambda x: f"{x:7.1f}" if x else "      -"
print("backward TFLOP/s, bf16, B 16, H 16, N 4096 | v2 (default) | v5 (wgmma) | v6 (v5, dQ mma.sync) | flash | cuDNN | v5/flash | v6/flash | v5/v2")
for causal in (False, True):
    for d in (64, 128):
        v2, v5, v6 = ours.get((d, causal, 2)), ours.get((d, causal, 5)), ours.get((d, causal, 6))
        fl, cu = torch.get(("flash", d, causal)), torch.get(("cudnn", d, causal))
        if not (v2 or v5 or v6):
            continue
        ratio = lambda a, b: f"{a / b:5.2f}x" if a and b else "    -"
        print(f"  d = {d:3d}{' causal' if causal else '       '}                     | {f(v2)} | {f(v5)} | {f(v6)} | "
              f"{f(fl)} | {f(cu)} | {ratio(v5, fl)} | {ratio(v6, fl)} | {ratio(v5, v2)}")
EOF
S+=("total                                | $(($(date +%s) - T0)) s of a ${BUDGET} s budget")
{
  grep -B2 -A10 -E "FAILED|REQUIRE|CHECK\(" "$OUT"/t_*.log 2>/dev/null | head -40
  echo "---- summary (bwd_wgmma: backward variants 5 and 6)"
  printf '%s\n' "${S[@]}"
  cat "$OUT/table.txt"
} | tee "$OUT/summary.txt"
