#!/usr/bin/env bash
# The FP8 forward on tensor cores (gpu/fp8_kernel.cuh, docs/fp8-gpu.md "On the GPU: the forward") on
# one device call:
#   1. verify --schedule fa2 --tensor-cores --dtype fp8, small first (a crash shows early): d = 64
#      and 128, ragged, causal, a key length, per tensor and per block, the rotation on outliers;
#      the error lines of each go to verify_lines.txt;
#   2. the [fp8] tests of flashstep_tc_tests (the forward) and flashstep_gpu_tests (the decode);
#   3. bench-gpu --tensor-cores --dtype fp8 beside the bf16 default: d = 128 at N = 16384 and 4096,
#      d = 64 at N = 4096, not causal, then causal as time allows (TFLOP/s, ms, ratio);
#   4. the four compute-sanitizer tools on one small verify (d = 128, causal, per block).
# Run from the repository root: bash tools/device/fp8_forward.sh BIN OUT (BIN holds flashstep,
# flashstep_gpu_tests and flashstep_tc_tests, and lib/ with libstb.so.0 where the machine lacks it). BUDGET (seconds, default 280): a step that would
# start after it is skipped and says so. summary.txt is written as it goes; a table last.
set -u
BUDGET=${BUDGET:-280}
# Each step starts only while the time spent is under BUDGET less what the later steps need (the
# verifies BUDGET - 200): below 240 the verifies could never start.
case $BUDGET in '' | *[!0-9]*) echo "fp8_forward.sh: BUDGET must be a number of seconds (got '$BUDGET')" >&2; exit 2 ;; esac
[ "$BUDGET" -ge 240 ] || { echo "fp8_forward.sh: BUDGET must be at least 240 s, or the verifies never start (got $BUDGET)" >&2; exit 2; }
source tools/device/lib.sh
dev_setup "$0" "$@"
[ -d "$BIN/lib" ] && dev_libs "$BIN/lib"  # a carried lib/ (libstb.so.0 for flashstep)
save() { printf '%s\n' "${S[@]}" > "$OUT/summary.txt"; }

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
for args in "${VERIFY[@]}"; do
  before $((BUDGET - 200)) "verify $args" || continue
  echo "== verify --schedule fa2 --tensor-cores --dtype fp8 $args"
  timeout 30 "$FS" verify --schedule fa2 --tensor-cores --dtype fp8 $args 2>&1; echo "rc=$?"
done > "$OUT/verify.txt" 2>&1
S+=("verify: $(grep -c '^PASS' "$OUT/verify.txt") PASS of ${#VERIFY[@]}; $(grep -c '^rc=0' "$OUT/verify.txt") exit 0")
grep -E '^== verify|^final|vs float64|^fp8 bound|error:|NaN|^(PASS|FAIL)' "$OUT/verify.txt" > "$OUT/verify_lines.txt"
save

catch2 "$OUT/tests_tc_fp8.log" timeout 90 "$BIN/flashstep_tc_tests" "[fp8]"
S+=("flashstep_tc_tests [fp8]: $(tests_line "$OUT/tests_tc_fp8.log" $?)")
save
if before $((BUDGET - 150)) "flashstep_gpu_tests [fp8]"; then
  catch2 "$OUT/tests_gpu_fp8.log" timeout 45 "$BIN/flashstep_gpu_tests" "[fp8]"
  S+=("flashstep_gpu_tests [fp8]: $(tests_line "$OUT/tests_gpu_fp8.log" $?)")
  save
fi

bench() {  # bench NAME ARGS...: one bench-gpu --tensor-cores --dtype fp8 run into bench_NAME.{txt,json}
  local name=$1
  shift
  timeout 60 "$FS" bench-gpu --tensor-cores --dtype fp8 --no-sweep "$@" --json-file "$OUT/bench_$name.json" \
    > "$OUT/bench_$name.txt" 2>&1
  S+=("bench $name ($*): rc=$?")
  save
}
before $((BUDGET - 120)) "bench d128" && bench d128 --d 128 --n 16384 4096
before $((BUDGET - 90)) "bench d64" && bench d64 --d 64 --n 4096
before $((BUDGET - 70)) "bench causal" && bench causal --causal --d 128 64 --n 16384 4096

SMALL="verify --schedule fa2 --tensor-cores --dtype fp8 --nq 200 --nk 333 --d 128 --causal --fp8-scale per-block"
for tool in memcheck racecheck synccheck initcheck; do
  before $((BUDGET - 30)) "compute-sanitizer $tool" || continue
  log=$OUT/sanitizer_$tool.txt
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $FS $SMALL > "$log" 2>&1
  S+=("compute-sanitizer $tool: rc=$? $(sanitized "$log")")
  save
done
S+=("total $(($(date +%s) - T0)) s")
save
{
  printf '%s\n' "${S[@]}"
  cat "$OUT/verify_lines.txt"
  python3 - "$OUT" <<'EOF'
import glob, json, sys
out = sys.argv[1]
print("FP8 forward vs the bf16 default (B x H x N = 131072, H = 8; TFLOP/s = 4 B H N^2 d / time, causal: kept scores)")
print("%6s %4s %6s | %9s %8s | %9s %8s | %6s" % ("N", "d", "causal", "fp8 ms", "TFLOP/s", "bf16 ms", "TFLOP/s", "ratio"))
for f in sorted(glob.glob(f"{out}/bench_*.json")):
    try:
        j = json.load(open(f))
    except Exception as e:
        print(f"{f}: unreadable ({e})")
        continue
    for r in j["rows"]:
        a, b = r["fp8_tc"], r["bf16_default"]
        print("%6d %4d %6s | %9.4f %8.1f | %9.4f %8.1f | %5.2fx" % (r["n"], r["d"], j["causal"], a["median_ms"],
              a["tflops"], b["median_ms"], b["tflops"], r["speedup_over_bf16"]))
EOF
} | tee "$OUT/summary.txt"
