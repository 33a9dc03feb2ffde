#!/usr/bin/env bash
# Flash-decoding from an FP8 KV cache (gpu/decode.cu, docs/fp8-gpu.md) on one device call:
#   1. the [gpu] tests [fp8];
#   2. verify --schedule decode --dtype fp8 on several shapes (ragged Nk, d = 64 and 128, per
#      tensor and per block, the rotation with outliers, paged, a key length, a few query rows);
#   3. PyTorch's fastest bf16 backend (gpu/tools/sdpa_decode_bench.py) and bench-gpu --decode in
#      bf16 and fp8 at d = 128, B x H = 32 and 256, Nk = 65536 and 262144, 10 calls back to back
#      per timed sample on both sides, paged P = 16 beside;
#   4. the four compute-sanitizer tools on one small paged verify (the paged kernel and its
#      unpaged twin, variants 5 and 9), memcheck on a second with one query row;
#   5. the other [decode] tests (the 16-bit kernels share the template), as time allows.
# Run from the repository root: bash tools/device/fp8_decode.sh BIN OUT (about 4 minutes).
set -u
source tools/device/lib.sh
dev_setup "$0" "$@"
T=$BIN/flashstep_gpu_tests
BUDGET=${BUDGET:-270}  # seconds: a step that would start after this is skipped (and says so)

catch2 "$OUT/tests_fp8.log" timeout 45 "$T" "[fp8]"
S+=("tests [fp8]: $(tests_line "$OUT/tests_fp8.log" $?)")

source tools/device/fp8_verify_cases.sh
VERIFY=("${FP8_VERIFY[@]}")
for args in "${VERIFY[@]}"; do
  echo "== verify --schedule decode $args"
  timeout 20 "$FS" verify --schedule decode $args; echo "rc=$?"
done > "$OUT/verify.txt" 2>&1
S+=("verify: $(grep -c '^PASS' "$OUT/verify.txt") PASS of ${#VERIFY[@]}; $(grep -c '^rc=0' "$OUT/verify.txt") exit 0")
grep -E '^== verify|^final|GPU vs float64|^paged|^(PASS|FAIL)' "$OUT/verify.txt" > "$OUT/verify_lines.txt"

timeout 60 python3 gpu/tools/sdpa_decode_bench.py --ds 128 --nks 65536,262144 --heads 32,256 --back-to-back 10 \
  --json "$OUT/sdpa.json" > "$OUT/sdpa.txt" 2>&1
S+=("PyTorch bf16 decode: rc=$?")
timeout 60 "$FS" bench-gpu --decode --dtype fp8 --d 128 --nk 65536 262144 --heads 32 256 --page-size 16 \
  --sdpa "$OUT/sdpa.json" --back-to-back 10 --json-file "$OUT/bench_fp8.json" > "$OUT/bench_fp8.txt" 2>&1
S+=("bench-gpu --decode --dtype fp8: rc=$?")
if before $((BUDGET - 60)) "bench-gpu --decode --dtype bf16"; then
  timeout 60 "$FS" bench-gpu --decode --dtype bf16 --d 128 --nk 65536 262144 --heads 32 256 --page-size 16 \
    --sdpa "$OUT/sdpa.json" --back-to-back 10 --json-file "$OUT/bench_bf16.json" > "$OUT/bench_bf16.txt" 2>&1
  S+=("bench-gpu --decode --dtype bf16: rc=$?")
fi
# A paged verify runs the paged kernel (variant 5) and its unpaged twin (variant 9): both
# configurations, here with four query rows per block (R = 4); memcheck also on one row (R = 1).
SMALL4="verify --schedule decode --nq 3 --nk 2000 --d 64 --dtype fp8 --fp8-scale per-block --page-size 16 --splits 3"
SMALL1="verify --schedule decode --nq 1 --nk 3000 --d 128 --dtype fp8 --fp8-scale per-block --page-size 16 --splits 4"
for run in "memcheck $SMALL4" "racecheck $SMALL4" "synccheck $SMALL4" "initcheck $SMALL4" "memcheck $SMALL1"; do
  set -- $run
  before $((BUDGET - 40)) "compute-sanitizer $run" || continue
  tool=$1
  shift
  log=$OUT/sanitizer_${tool}_nq$5.txt
  timeout 40 compute-sanitizer --tool $tool --error-exitcode 9 "$FS" "$@" > "$log" 2>&1
  S+=("compute-sanitizer $tool $(basename "$log" .txt): rc=$? $(sanitized "$log")")
done

if before $((BUDGET - 40)) "tests [decode]~[fp8]"; then
  catch2 "$OUT/tests_decode.log" timeout 40 "$T" "[decode]~[fp8]"
  S+=("tests [decode]~[fp8]: $(tests_line "$OUT/tests_decode.log" $?)")
fi
S+=("total $(($(date +%s) - T0)) s")
{
  printf '%s\n' "${S[@]}"
  cat "$OUT/verify_lines.txt"
  python3 - "$OUT" <<'EOF'
import json, sys
out = sys.argv[1]
import os
b = {dt: {(r["nk"], r["heads"]): r for r in json.load(open(f"{out}/bench_{dt}.json"))["rows"]} if os.path.exists(f"{out}/bench_{dt}.json") else {} for dt in ("bf16", "fp8")}
roof = json.load(open(f"{out}/bench_fp8.json"))["read_roof_gbps"]
print(f"decode d = 128, Nq = 1, 10 calls back to back; read roof {roof:.0f} GB/s; KV GB/s = bytes of K and V / time")
print("%7s %4s | %9s %6s | %9s %6s | %9s %7s %5s %8s %8s | %9s %7s" % ("Nk", "BxH", "sdpa ms", "best", "bf16 ms", "GB/s",
      "fp8 ms", "GB/s", "%roof", "vs sdpa", "vs bf16", "paged ms", "GB/s"))
for key in sorted(b["fp8"]):
    f, h = b["fp8"][key], b["bf16"].get(key, {})
    fm = f["decode"].get("median_ms", float("nan"))
    hm = h.get("decode", {}).get("median_ms", float("nan"))
    sd = f.get("sdpa", {})
    pg = f.get("decode_paged", {})
    print("%7d %4d | %9.4f %6s | %9.4f %6.0f | %9.4f %7.0f %4.0f%% %7.2fx %7.2fx | %9.4f %7.0f" % (
        key[0], key[1], sd.get("median_ms", float("nan")), sd.get("backend", "-"), hm,
        h.get("decode", {}).get("kv_gbps", float("nan")), fm, f["decode"].get("kv_gbps", float("nan")),
        100 * f["decode"].get("fraction_of_read_roof", float("nan")), sd.get("median_ms", float("nan")) / fm, hm / fm,
        pg.get("median_ms", float("nan")), pg.get("kv_gbps", float("nan"))))
EOF
} | tee "$OUT/summary.txt"
