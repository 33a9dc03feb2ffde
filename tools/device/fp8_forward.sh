#!/usr/bin/env bash
# The FP8 forward on tensor cores (gpu/fp8_kernel.cuh, docs/fp8.md "On the GPU: the forward"), its
# measured configuration (run-time variant 0) and the candidates beside it, on one device call:
#   1. at once, in the background: the verify list under each variant (FLASHSTEP_FP8_VARIANT; d = 64
#      and 128, ragged, causal, a key length, per tensor and per block, the rotation on outliers),
#      the [fp8] tests of flashstep_tc_tests (the forward) under the variants TESTS (default
#      "0 3 6 11") and of flashstep_gpu_tests (the decode) once, the four compute-sanitizer tools on
#      one small d = 128 verify under SANITIZE (default 11: ping-pong, the polynomial exp2 and four
#      chains), and racecheck and synccheck on a small d = 64 one under SANITIZE64 (default 7: the
#      three consumers' ping-pong ring, every 2nd exp2 by polynomial);
#   2. alone on the GPU: bench-gpu --tensor-cores --dtype fp8 beside the bf16 default under each
#      variant, d = 64 and 128, N = 4096 and 16384, causal and not;
#   3. the table (last): TFLOP/s and the ratio to the bf16 default per variant and point, the
#      best variant per point and per d.
# Run from the repository root: bash tools/device/fp8_forward.sh BIN OUT (BIN holds flashstep,
# flashstep_gpu_tests and flashstep_tc_tests, and lib/ with libstb.so.0 where the machine lacks
# it). VARIANTS (default "0 1 2 3 8 9 6 4 11 7", the measured one first, then the likeliest
# candidates), BUDGET (seconds, default 190): a bench that would start after BUDGET - 25 s is
# skipped and says so. OUT gets three files:
# gpu.txt, summary.txt (written as it goes, the table last) and logs.tar.gz (every log, repacked
# after each step).
set -u
source tools/device/lib.sh
dev_setup "$0" "$@"
[ -d "$BIN/lib" ] && dev_libs "$BIN/lib"  # a carried lib/ (libstb.so.0 for flashstep)
BUDGET=${BUDGET:-190}
read -r -a VARIANTS <<< "${VARIANTS:-0 1 2 3 8 9 6 4 11 7}"
read -r -a TESTS <<< "${TESTS:-0 3 6 11}"
SANITIZE=${SANITIZE:-11}
SANITIZE64=${SANITIZE64:-7}
W=$(mktemp -d)
before() { [ $(($(date +%s) - T0)) -lt "$1" ] || { S+=("skipped (past $1 s): $2"); return 1; }; }
save() {
  printf '%s\n' "${S[@]}" > "$OUT/summary.txt"
  tar -czf "$OUT/logs.tar.gz" -C "$W" .
}

VERIFY=(
  "--nq 128 --nk 128 --d 64"
  "--nq 128 --nk 128 --d 128"
  "--nq 200 --nk 333 --d 128 --fp8-scale per-block"
  "--nq 333 --nk 200 --d 64 --causal"
  "--nq 515 --nk 1030 --d 128 --causal --fp8-scale per-block"
  "--nq 300 --nk 700 --d 128 --kv-len 450"
  "--nq 190 --nk 401 --d 64 --fp8-scale per-block --rotate --pattern outliers"
  "--nq 1000 --nk 3000 --d 128 --fp8-scale per-block --rotate --pattern outliers --causal"
  "--nq 2048 --nk 4096 --d 64 --fp8-scale per-block"
)
verify_list() {  # verify_list V: the list under variant V into $W/verify_vV.txt, small first
  local args
  for args in "${VERIFY[@]}"; do
    echo "== FLASHSTEP_FP8_VARIANT=$1 verify --schedule fa2 --tensor-cores --dtype fp8 $args"
    FLASHSTEP_FP8_VARIANT=$1 timeout 60 "$FS" verify --schedule fa2 --tensor-cores --dtype fp8 $args 2>&1
    echo "rc=$?"
  done > "$W/verify_v$1.txt" 2>&1
}
SMALL="verify --schedule fa2 --tensor-cores --dtype fp8 --nq 200 --nk 333 --d 128 --causal --fp8-scale per-block"
SMALL64="verify --schedule fa2 --tensor-cores --dtype fp8 --nq 333 --nk 200 --d 64 --causal"
sanitize() {  # sanitize TOOL V VERIFY...: one small verify under variant V into $W/sanitizer_TOOL_vV.txt
  local tool=$1 v=$2
  shift 2
  FLASHSTEP_FP8_VARIANT=$v timeout 90 compute-sanitizer --tool "$tool" --error-exitcode 9 $FS "$@" \
    > "$W/sanitizer_${tool}_v$v.txt" 2>&1
}

# 1. Correctness, every variant at once (the CPU emulation dominates; the machine has 16 cores).
declare -A PID
for v in "${VARIANTS[@]}"; do
  verify_list "$v" &
  PID[verify_$v]=$!
done
for v in "${TESTS[@]}"; do
  FLASHSTEP_FP8_VARIANT=$v catch2 "$W/tests_tc_fp8_v$v.log" timeout 120 "$BIN/flashstep_tc_tests" "[fp8]" &
  PID[tc_$v]=$!
done
catch2 "$W/tests_gpu_fp8.log" timeout 90 "$BIN/flashstep_gpu_tests" "[fp8]" &
PID[gpu]=$!
SANS=()
for tool in memcheck racecheck synccheck initcheck; do
  sanitize $tool "$SANITIZE" $SMALL &
  PID[san_${tool}_$SANITIZE]=$!
  SANS+=("${tool}_$SANITIZE")
done
for tool in racecheck synccheck; do
  sanitize $tool "$SANITIZE64" $SMALL64 &
  PID[san_${tool}_$SANITIZE64]=$!
  SANS+=("${tool}_$SANITIZE64")
done
for v in "${VARIANTS[@]}"; do
  wait "${PID[verify_$v]}"
  f=$W/verify_v$v.txt
  S+=("verify v$v: $(grep -c '^PASS' "$f") PASS of ${#VERIFY[@]}; $(grep -c '^rc=0' "$f") exit 0")
  grep -E '^== |^verify |^final|vs float64|^fp8 bound|error:|NaN|^(PASS|FAIL)' "$f" > "$W/verify_lines_v$v.txt"
done
for v in "${TESTS[@]}"; do
  wait "${PID[tc_$v]}"
  S+=("flashstep_tc_tests [fp8] v$v: $(tests_line "$W/tests_tc_fp8_v$v.log" $?)")
done
wait "${PID[gpu]}"
S+=("flashstep_gpu_tests [fp8]: $(tests_line "$W/tests_gpu_fp8.log" $?)")
for k in "${SANS[@]}"; do
  wait "${PID[san_$k]}"
  S+=("compute-sanitizer ${k%_*} v${k##*_}: rc=$? $(sanitized "$W/sanitizer_${k%_*}_v${k##*_}.txt")")
done
S+=("correctness phase: $(($(date +%s) - T0)) s")
save

# 2. Speed, alone on the GPU: each variant at the eight points, beside the bf16 default.
for v in "${VARIANTS[@]}"; do
  for mask in nc causal; do
    before $((BUDGET - 25)) "bench v$v $mask" || continue
    flag=$([ $mask = causal ] && echo --causal)
    FLASHSTEP_FP8_VARIANT=$v timeout 60 "$FS" bench-gpu --tensor-cores --dtype fp8 --no-sweep $flag --d 128 64 \
      --n 16384 4096 --json-file "$W/bench_v${v}_$mask.json" > "$W/bench_v${v}_$mask.txt" 2>&1
    S+=("bench v$v $mask: rc=$?")
  done
  save
done
S+=("total $(($(date +%s) - T0)) s")
save

# 3. The table.
{
  printf '%s\n' "${S[@]}"
  python3 - "$W" "${VARIANTS[@]}" <<'EOF'
import glob, json, math, sys
w, variants = sys.argv[1], sys.argv[2:]
rows, what = {}, {}
for v in variants:
    for f in glob.glob(f"{w}/bench_v{v}_*.json"):
        try:
            j = json.load(open(f))
        except Exception as e:
            print(f"{f}: unreadable ({e})")
            continue
        for r in j["rows"]:
            key = (r["n"], r["d"], "yes" if j["causal"] else "no")
            rows.setdefault(key, {})[v] = r
            what[v] = r["fp8_tc"].get("what", "")
for v in variants:
    print(f"v{v}: {what.get(v, 'not measured')}")
print("FP8 forward by run-time variant vs the bf16 default (B x H x N = 131072, H = 8; TFLOP/s = 4 B H N^2 d / time,")
print("causal: kept scores; x: bf16 ms / fp8 ms, each from the same bench call)")
print("%6s %4s %3s %8s | " % ("N", "d", "cau", "bf16 ms") + " | ".join("%13s" % f"v{v}" for v in variants) + " | best")
best_by_d = {}
for key in sorted(rows, key=lambda k: (k[2], -k[1], -k[0])):
    rv = rows[key]
    base = rv.get(variants[0]) or next(iter(rv.values()))
    cells, best = [], None
    for v in variants:
        r = rv.get(v)
        if r is None:
            cells.append("%13s" % "-")
            continue
        x = r["speedup_over_bf16"]
        cells.append("%6.1f %5.2fx" % (r["fp8_tc"]["tflops"], x))
        best = v if best is None or x > rv[best]["speedup_over_bf16"] else best
        best_by_d.setdefault(key[1], {}).setdefault(v, []).append(x)
    print("%6d %4d %3s %8.4f | " % (key[0], key[1], key[2], base["bf16_default"]["median_ms"]) + " | ".join(cells) +
          f" | v{best} {rv[best]['speedup_over_bf16']:.2f}x")
for d in sorted(best_by_d):
    gm = {v: math.exp(sum(map(math.log, xs)) / len(xs)) for v, xs in best_by_d[d].items() if len(xs) == 4}
    if gm:
        order = sorted(gm, key=gm.get, reverse=True)
        print(f"d = {d}: geometric mean of the ratio over its four points: " +
              ", ".join(f"v{v} {gm[v]:.3f}x" for v in order))
EOF
} | tee "$OUT/summary.txt"
tar -czf "$OUT/logs.tar.gz" -C "$W" .
rm -rf "$W"
