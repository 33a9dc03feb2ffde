#!/usr/bin/env bash
# FP8 decode's batched split kernel (variant 10, gpu/decode_kernel.cuh's compute_batched) beside
# variant 9, the FP8 default, in one device call (docs/fp8-gpu.md):
#   1. verify --schedule decode --dtype fp8 --variant 10: d = 64 and 128, per tensor and per
#      block, the rotation with outliers, paged (each paged verify also runs its unpaged twin and
#      compares them bit for bit), a key length, ragged Nk, several query rows, S = 1;
#   2. PyTorch's fastest bf16 backend (gpu/tools/sdpa_decode_bench.py, 10 calls back to back),
#      then bench-gpu --decode --dtype fp8 at d = 128, Nk = 65536 and 262144, B x H = 32 and 256,
#      --sweep-variants 9 10 over a few S, unpaged and paged (P = 16), against PyTorch's times;
#   3. the [fp8] tests (variants 9 and 10: the sweep against the CPU engine, paged = unpaged bit
#      for bit, one key exact);
#   4. compute-sanitizer memcheck, racecheck, synccheck, initcheck on variant 10 (a paged verify:
#      the paged kernel and its unpaged twin; memcheck also on three query rows at d = 64).
# Every command has a timeout; a step that would start past BUDGET seconds is skipped and says
# so. The summary is written as it goes ($OUT/summary.txt); the table is printed last.
# Usage, from the repository root on the GPU machine: bash tools/device/fp8_decode_fast.sh BIN OUT
# (BIN holds flashstep and flashstep_gpu_tests; about 4-5 minutes.)
set -u
source tools/device/lib.sh
dev_setup "$0" "$@"
T=$BIN/flashstep_gpu_tests
BUDGET=${BUDGET:-290}
: > "$OUT/summary.txt"

# 1. verifies of variant 10
source tools/device/fp8_verify_cases.sh
VERIFY=("${FP8_VERIFY[@]}" "--nq 2 --nk 777 --d 128 --dtype fp8 --rotate --splits 1 --page-size 5")
for args in "${VERIFY[@]}"; do
  echo "== verify --schedule decode $args --variant 10"
  timeout 20 "$FS" verify --schedule decode $args --variant 10; echo "rc=$?"
done > "$OUT/verify.txt" 2>&1
grep -E '^== verify|^verify|^final|^paged|^(PASS|FAIL)' "$OUT/verify.txt" > "$OUT/verify_lines.txt"
say "verify --variant 10: $(grep -c '^PASS' "$OUT/verify.txt") PASS of ${#VERIFY[@]}; $(grep -c '^rc=0' "$OUT/verify.txt") exit 0; kernel named: $(grep -c 'split kernel variant 10' "$OUT/verify.txt")"

# 2. speed: PyTorch's bf16 first, then the fp8 sweeps (variants 9 and 10)
if before $((BUDGET - 200)) "PyTorch bf16 decode"; then  # each step: start by, then its timeout
  timeout 60 python3 gpu/tools/sdpa_decode_bench.py --ds 128 --nks 65536,262144 --heads 32,256 --back-to-back 10 \
    --json "$OUT/sdpa.json" > "$OUT/sdpa.txt" 2>&1
  say "PyTorch bf16 decode: rc=$?"
fi
SDPA=(); [ -s "$OUT/sdpa.json" ] && SDPA=(--sdpa "$OUT/sdpa.json")
for P in 0 16; do
  before $((BUDGET - 130 + P)) "fp8 sweep page $P" || continue
  pg=(); [ $P -gt 0 ] && pg=(--page-size $P)
  timeout 75 "$FS" bench-gpu --decode --dtype fp8 --d 128 --nk 65536 262144 --heads 32 256 \
    --sweep-variants 9 10 --sweep-splits 8 16 32 64 "${pg[@]}" "${SDPA[@]}" --back-to-back 10 \
    --json-file "$OUT/fp8_sweep_p$P.json" > "$OUT/fp8_sweep_p$P.txt" 2>&1
  say "bench-gpu --decode --dtype fp8 --sweep-variants 9 10, page $P: rc=$? at $(($(date +%s) - T0)) s"
done

# 3. the [fp8] tests
if before $((BUDGET - 90)) "tests [fp8]"; then
  catch2 "$OUT/tests_fp8.log" timeout 70 "$T" "[fp8]"
  say "tests [fp8]: $(tests_line "$OUT/tests_fp8.log" $?)"
fi

# 4. the sanitizers on variant 10 (a paged verify runs the paged kernel and its unpaged twin)
SMALLP="verify --schedule decode --nq 1 --nk 3000 --d 128 --dtype fp8 --fp8-scale per-block --page-size 16 --splits 4 --variant 10"
SMALL3="verify --schedule decode --nq 3 --nk 2000 --d 64 --dtype fp8 --fp8-scale per-block --splits 3 --variant 10"
for run in "memcheck p $SMALLP" "racecheck p $SMALLP" "synccheck p $SMALLP" "initcheck p $SMALLP" "memcheck r3 $SMALL3"; do
  set -- $run
  tool=$1 tag=$2
  shift 2
  before $((BUDGET - 40)) "compute-sanitizer $tool $tag" || continue
  log=$OUT/sanitizer_${tool}_$tag.txt
  timeout 40 compute-sanitizer --tool $tool --error-exitcode 9 "$FS" "$@" > "$log" 2>&1
  say "compute-sanitizer $tool ($tag): rc=$? $(sanitized "$log") $(grep -c '^PASS' "$log") PASS"
done
say "total $(($(date +%s) - T0)) s"

{
  cat "$OUT/verify_lines.txt"
  python3 - "$OUT" "$ROOF_REF" <<'EOF'
import json, os, sys
out, roof_ref = sys.argv[1], float(sys.argv[2])
def rows(P):
    try:
        j = json.load(open(os.path.join(out, f"fp8_sweep_p{P}.json")))
        return j.get("sweep", []), j.get("read_roof_gbps", float("nan"))
    except Exception:
        return [], float("nan")
sdpa = {}
try:
    for r in json.load(open(os.path.join(out, "sdpa.json")))["rows"]:
        if r.get("best_ms"):
            sdpa[(r["nk"], r["heads"])] = (r["best_ms"], r.get("best_backend", "?"))
except Exception:
    pass
for P in (0, 16):
    rs, roof = rows(P)
    if not rs:
        print(f"page {P}: no sweep results")
        continue
    print(f"fp8 decode d = 128, Nq = 1, {'paged P = 16' if P else 'unpaged'}, best S per variant; 10 calls back to back;"
          f" read roof measured {roof:.0f} GB/s, % of {roof_ref:.0f}; vs PyTorch = its bf16 ms / fp8 ms")
    print("%7s %4s %3s %3s | %9s %7s %7s | %9s %8s | %s" % ("Nk", "BxH", "var", "S", "ms", "GB/s", f"%{roof_ref:.0f}",
          "sdpa ms", "vs sdpa", "all S (ms)"))
    best = {}
    for r in rs:
        k = (r["nk"], r["heads"], r["variant"])
        best.setdefault(k, []).append(r)
    for k in sorted(best):
        b = min(best[k], key=lambda r: r["median_ms"])
        sd = sdpa.get((k[0], k[1]), (float("nan"), "-"))
        alls = " ".join(f"{r['splits']}:{r['median_ms']:.4f}" for r in sorted(best[k], key=lambda r: r["splits"]))
        print("%7d %4d %3d %3d | %9.4f %7.0f %6.1f%% | %9.4f %7.2fx | %s" % (k[0], k[1], k[2], b["splits"],
              b["median_ms"], b["kv_gbps"], 100 * b["kv_gbps"] / roof_ref, sd[0], sd[0] / b["median_ms"], alls))
    for nk, heads in sorted({(k[0], k[1]) for k in best}):
        a, c = best.get((nk, heads, 9)), best.get((nk, heads, 10))
        if a and c:
            ta, tc = min(r["median_ms"] for r in a), min(r["median_ms"] for r in c)
            print(f"  Nk {nk} BxH {heads}: variant 10 / variant 9 (best S each) = {tc / ta:.3f}")
EOF
  printf '%s\n' "${S[@]}"
} | tee "$OUT/table.txt"
