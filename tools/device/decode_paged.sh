#!/usr/bin/env bash
# Device run for flash-decoding over a paged KV cache and the split kernel's variants 4 and 5
# (gpu/decode.cu, docs/decode.md "Paged KV", gpu/ladder/notes/decode.md "Versions 4 and 5"). Run from the repository root on
# the GPU machine:
#   bash tools/device/decode_paged.sh BIN OUT
# BIN holds flashstep and flashstep_gpu_tests (lib.sh sets the environment), OUT gets the logs. Wall budget
# 80 s: the correctness checks run side by side (about 30 s at most), then PyTorch's SDPA, the
# table with the paged column and the variant x S sweep one after another (about 50 s at most).
# The summary table is the last output: one line per check, what / rc or PASS/FAIL / figure.
set -u
BIN=${1:?BIN}
OUT=${2:?OUT}
source "$(dirname "$0")/decode_lib.sh"
decode_device_setup

# [SECTION] Correctness, side by side (each under its own timeout)
start_decode_tests 28
VERIFY=(
  "--nq 1 --nk 4096 --d 128 --M 128KiB --splits 8 --page-size 16 --dtype bf16"
  "--nq 5 --nk 700 --d 64 --M 64KiB --splits 4 --page-size 24 --causal"
  "--nq 1 --nk 2000 --d 64 --M 64KiB --splits 7 --page-size 7 --kv-len 1234"
  "--nq 1 --nk 333 --d 128 --M 64KiB --splits 1 --page-size 100 --dtype fp16"
  "--nq 5 --nk 1000 --d 32 --M 16KiB --splits 20 --page-size 3"
)
run_verify_list "$OUT/verify.txt" 6 &
pid_verify=$!
timeout 28 compute-sanitizer --tool memcheck --error-exitcode 9 "$FS" verify --schedule decode --nq 3 --nk 333 --d 64 \
  --M 64KiB --splits 4 --page-size 7 --dtype bf16 > "$OUT/memcheck.log" 2>&1
rc_mem=$?
wait $pid_pv; rc_tests=$?
wait $pid_dec; rc_decode=$?
wait $pid_verify

# [SECTION] Speed, one after another: PyTorch, the table (paged beside unpaged), the sweep
timeout 20 python3 gpu/tools/sdpa_decode_bench.py --ds 128 --nks 16384,65536,262144 --json "$OUT/sdpa.json" \
  > "$OUT/sdpa.txt" 2>&1
rc_sdpa=$?
SDPA=()
[ -s "$OUT/sdpa.json" ] && SDPA=(--sdpa "$OUT/sdpa.json")
timeout 15 "$FS" bench-gpu --decode --d 128 --nk 16384 65536 262144 --page-size 16 "${SDPA[@]}" \
  --json-file "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
rc_bench=$?
timeout 15 "$FS" bench-gpu --decode --d 128 --nk 16384 65536 262144 --sweep-variants 3 4 5 \
  --sweep-splits 1 2 4 8 16 32 "${SDPA[@]}" --json-file "$OUT/sweep.json" > "$OUT/sweep.txt" 2>&1
rc_sweep=$?

# [SECTION] Summary (last)
echo
echo "summary: decode_paged.sh, $(cat "$OUT/gpu.txt" 2>/dev/null | head -1), $(( $(date +%s) - start )) s"
printf "%-44s %-12s %s\n" "check" "result" "figure"
printf "%-44s %-12s %s\n" "tests [paged],[variants]" "$(verdict $rc_tests)" "$(cases "$OUT/tests_paged_variants.log")"
printf "%-44s %-12s %s\n" "tests [decode] (unpaged, default variant)" "$(verdict $rc_decode)" "$(cases "$OUT/tests_decode.log")"
n=0
while read -r line; do
  case "$line" in
    "== verify"*) what=${line#== verify --schedule decode }; n=$((n + 1)) ;;
    rc=*) r=${line#rc=}
          fig=$(awk -v k="$what" 'index($0, "== verify --schedule decode " k) {f=1; next} f && /^paged/ {print "paged==unpaged: " ($NF == "ok" ? "bits equal" : $NF); exit}' "$OUT/verify.txt")
          printf "%-44s %-12s %s\n" "verify $n: ${what:0:32}" "$(verdict $r)" "$fig" ;;
  esac
done < "$OUT/verify.txt"
printf "%-44s %-12s %s\n" "memcheck verify --page-size 7 (small)" "$(verdict $rc_mem)" "$(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
printf "%-44s %-12s %s\n" "sdpa_decode_bench.py (d 128)" "$(verdict $rc_sdpa)" "$(grep -c '^sdpa' "$OUT/sdpa.txt" 2>/dev/null) shapes"
printf "%-44s %-12s %s\n" "bench-gpu --decode --page-size 16" "$(verdict $rc_bench)" "$(grep -c 'paged P=' "$OUT/bench.txt" 2>/dev/null) paged rows"
printf "%-44s %-12s %s\n" "bench-gpu --decode sweep (variant x S)" "$(verdict $rc_sweep)" "$(grep -cE '^ +[0-9]+ +128 ' "$OUT/sweep.txt" 2>/dev/null) points"
# The table's rows (Nk, BxH, S, decode ms, GB/s, %copy, vs sdpa, paged ms, paged %copy)
grep -E '^ +[0-9]+ +128 ' "$OUT/bench.txt" 2>/dev/null | awk '{printf "  bench Nk=%s BxH=%s S=%s: %s ms %s GB/s %s", $1, $3, $5, $7, $8, $9; for (i = 1; i <= NF; ++i) { if ($i ~ /x$/ && $i+0 > 0) printf " vs sdpa %s", $i; if ($i ~ /^P=/) printf " | paged %s %s ms %s", $i, $(i+1), $(i+3) } printf "\n"}'
# The best (variant, S) per shape in the sweep
grep -E '^ +[0-9]+ +128 ' "$OUT/sweep.txt" 2>/dev/null | tr -d '*' | sort -k1,1n -k3,3n -k7,7g | \
  awk '{key = $1 " " $3; if (!(key in best)) { best[key] = 1; printf "  sweep best Nk=%s BxH=%s: variant %s S=%s %s ms %s GB/s %s %s\n", $1, $3, $4, $5, $7, $8, $9, $10 } }'
