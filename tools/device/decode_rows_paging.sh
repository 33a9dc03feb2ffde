#!/usr/bin/env bash
# Decode's split kernel with paging as a run-time switch (the chunk loop compiled per layout inside
# one kernel) and variant 3's single query row in its four-row kernel (rows past Nq skipped),
# against the build before it and against a build B that keeps a one-row kernel for variant 3:
# the [decode] tests, the four sanitizers on each decode layout, verify lines, and the times of
# the kernels concerned (variant 3 in float32 and at d = 32, variant 5 paged, FP8 paged).
# Usage, from the repository root on the GPU machine: bash tools/device/decode_rows_paging.sh BIN OUT
# BIN holds flashstep (A), flashstep_b, flashstep_old and flashstep_gpu_tests (A's).
set -u
BIN=${1:?usage: decode_rows_paging.sh BIN OUT}
OUT=${2:?usage: decode_rows_paging.sh BIN OUT}
mkdir -p "$OUT"
export FLASHSTEP_REQUIRE_GPU=1 FLASHSTEP_GOLDEN_DIR=$PWD/tests/golden
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
S=()
timeout 120 "$BIN/flashstep_gpu_tests" "[decode]" > "$OUT/tests_decode.log" 2>&1
S+=("[decode] tests: rc=$? $(grep -E 'test cases|All tests' "$OUT/tests_decode.log" | tail -1) at $(el) s")
FS=$BIN/flashstep
declare -a CASES=(
  "bf16-d128-v9    verify --schedule decode --dtype bf16 --nq 1 --nk 3000 --d 128 --splits 4"
  "bf16-paged-v5   verify --schedule decode --dtype bf16 --nq 1 --nk 3000 --d 64 --splits 4 --page-size 16"
  "fp32-v3-row1    verify --schedule decode --nq 1 --nk 2000 --d 64 --splits 3 --page-size 7"
  "bf16-d32-v3     verify --schedule decode --dtype bf16 --nq 2 --nk 1500 --d 32 --splits 2"
  "fp8-paged-v9    verify --schedule decode --dtype fp8 --nq 3 --nk 2000 --d 64 --fp8-scale per-block --page-size 16 --splits 3"
)
for c in "${CASES[@]}"; do
  name=${c%% *}; cmd=${c#* }; cmd=${cmd#"${cmd%%[![:space:]]*}"}
  for tool in memcheck racecheck synccheck initcheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $FS $cmd > "$OUT/san_${name}_$tool.log" 2>&1
    S+=("$tool $name: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${name}_$tool.log" | tail -1 | sed 's/=========//')")
  done
done
S+=("sanitizers done at $(el) s")
k=0
for c in "${CASES[@]}"; do
  k=$((k + 1)); cmd=${c#* }; cmd=${cmd#"${cmd%%[![:space:]]*}"}
  for side in new old; do
    bin=$FS; [ $side = old ] && bin=$BIN/flashstep_old
    timeout 60 "$bin" $cmd > "$OUT/v$k.$side.txt" 2>&1; echo "rc=$?" >> "$OUT/v$k.$side.txt"
  done
  if diff -q <(grep -vE ' ms|GB/s' "$OUT/v$k.new.txt") <(grep -vE ' ms|GB/s' "$OUT/v$k.old.txt") > /dev/null; then v=same; else v=DIFFERS; fi
  S+=("verify $v: $cmd ($(tail -1 "$OUT/v$k.new.txt"))")
done
for side in A B old; do
  bin=$FS; [ $side = B ] && bin=$BIN/flashstep_b; [ $side = old ] && bin=$BIN/flashstep_old
  timeout 60 "$bin" bench-gpu --decode --dtype fp32 --d 64 128 --nk 65536 --heads 32 --json-file "$OUT/fp32_$side.json" > "$OUT/fp32_$side.txt" 2>&1
  timeout 60 "$bin" bench-gpu --decode --dtype bf16 --d 32 --nk 65536 --heads 32 --json-file "$OUT/d32_$side.json" > "$OUT/d32_$side.txt" 2>&1
  S+=("variant 3 benches ($side) at $(el) s")
done
for side in A old; do
  bin=$FS; [ $side = old ] && bin=$BIN/flashstep_old
  timeout 70 "$bin" bench-gpu --decode --dtype bf16 --d 128 --nk 65536 262144 --heads 32 256 --page-size 16 \
    --json-file "$OUT/paged_$side.json" > "$OUT/paged_$side.txt" 2>&1
  timeout 40 "$bin" bench-gpu --decode --dtype fp8 --d 128 --nk 65536 262144 --heads 32 --page-size 16 \
    --json-file "$OUT/fp8_$side.json" > "$OUT/fp8_$side.txt" 2>&1
  S+=("paged benches ($side) at $(el) s")
done
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
def rows(n):
    try: return json.load(open(os.path.join(out, n)))["rows"]
    except Exception: return []
def ms(r, k):
    x = r.get(k)
    return x.get("median_ms", float("nan")) if isinstance(x, dict) else float("nan")
print("decode ms (A = this build, B = a one-row variant 3, old = the build before)")
for f, sides in (("fp32", "A B old"), ("d32", "A B old"), ("paged", "A old"), ("fp8", "A old")):
    sets = {s: rows(f"{f}_{s}.json") for s in sides.split()}
    for i, r in enumerate(sets["A"]):
        line = f"{f:5} Nk {r.get('nk')} BxH {r.get('heads')} d {r.get('d')} decode " + " ".join(
            f"{s} {ms(sets[s][i], 'decode') if i < len(sets[s]) else float('nan'):.4f}" for s in sets)
        if "decode_paged" in r:
            line += " | paged " + " ".join(f"{s} {ms(sets[s][i], 'decode_paged') if i < len(sets[s]) else float('nan'):.4f}" for s in sets)
        print(line)
PY
printf '%s\n' "${S[@]}"
cd "$OUT" && tar czf all.tgz --exclude=all.tgz . ; cd - > /dev/null
