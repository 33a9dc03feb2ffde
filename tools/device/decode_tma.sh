#!/usr/bin/env bash
# Device run for the decode split kernel's bulk-copy variants 6 and 7 (gpu/decode.cu; gpu/ladder/notes/decode.md
# "Versions 6 and 7"), paged and unpaged, and the read roof of bench-gpu --decode. From the
# repository root on the GPU machine:
#   bash tools/device/decode_tma.sh BIN OUT
# BIN holds flashstep and flashstep_gpu_tests (lib.sh sets the environment); OUT gets the logs. Wall budget
# 150 s: the correctness checks side by side (tests, verify --variant 6/7, compute-sanitizer; 45 s
# at most), then alone, one after another: PyTorch's SDPA at the sweep's shapes, the variant x S
# sweep unpaged (3 5 6 7) and paged P = 16 (5 6 7) (timeouts 30 + 40 + 22 s; about 13 + 15 + 10 s
# expected). Everything that matters is in OUT/summary.txt (printed last): one line per check,
# then one line per shape.
set -u
BIN=${1:?usage: decode_tma.sh BIN OUT}
OUT=${2:?usage: decode_tma.sh BIN OUT}
source "$(dirname "$0")/decode_lib.sh"
decode_device_setup

# [SECTION] Correctness, side by side (each under its own timeout)
start_decode_tests 45
VERIFY=(
  "--nq 1 --nk 4096 --d 128 --M 128KiB --splits 8 --dtype bf16 --variant 6"
  "--nq 1 --nk 4096 --d 128 --M 128KiB --splits 8 --page-size 16 --dtype bf16 --variant 6"
  "--nq 5 --nk 700 --d 64 --M 64KiB --splits 4 --causal --dtype fp16 --variant 6"
  "--nq 1 --nk 2000 --d 64 --M 64KiB --splits 7 --kv-len 1234 --page-size 7 --dtype bf16 --variant 6"
  "--nq 1 --nk 999 --d 128 --M 64KiB --splits 5 --page-size 1 --dtype bf16 --variant 7"
)
run_verify_list "$OUT/verify.txt" 8 &
pid_verify=$!
SMALL="verify --schedule decode --nq 3 --nk 333 --d 64 --M 64KiB --splits 4 --dtype bf16 --variant 6"
timeout 45 compute-sanitizer --tool memcheck --error-exitcode 9 "$FS" $SMALL > "$OUT/memcheck.log" 2>&1 &
pid_mem=$!
timeout 45 compute-sanitizer --tool memcheck --error-exitcode 9 "$FS" $SMALL --page-size 7 > "$OUT/memcheck_paged.log" 2>&1 &
pid_memp=$!
timeout 45 compute-sanitizer --tool racecheck --error-exitcode 9 "$FS" $SMALL > "$OUT/racecheck.log" 2>&1 &
pid_race=$!
timeout 45 compute-sanitizer --tool racecheck --error-exitcode 9 "$FS" $SMALL --page-size 7 > "$OUT/racecheck_paged.log" 2>&1 &
pid_racep=$!
wait $pid_pv; rc_pv=$?
wait $pid_dec; rc_dec=$?
wait $pid_verify
wait $pid_mem; rc_mem=$?
wait $pid_memp; rc_memp=$?
wait $pid_race; rc_race=$?
wait $pid_racep; rc_racep=$?
t_correct=$(( $(date +%s) - start ))

# [SECTION] Speed, alone and one after another
timeout 30 python3 gpu/tools/sdpa_decode_bench.py --ds 64,128 --nks 16384,65536,262144 --json "$OUT/sdpa.json" \
  > "$OUT/sdpa.txt" 2>&1
rc_sdpa=$?
SDPA=()
[ -s "$OUT/sdpa.json" ] && SDPA=(--sdpa "$OUT/sdpa.json")
timeout 40 "$FS" bench-gpu --decode --d 64 128 --nk 16384 65536 262144 --sweep-variants 3 5 6 7 \
  --sweep-splits 1 2 4 8 16 32 64 "${SDPA[@]}" --json-file "$OUT/sweep.json" > "$OUT/sweep.txt" 2>&1
rc_sweep=$?
timeout 22 "$FS" bench-gpu --decode --d 64 128 --nk 16384 65536 262144 --page-size 16 --sweep-variants 5 6 7 \
  --sweep-splits 1 8 32 "${SDPA[@]}" --json-file "$OUT/sweep_paged.json" > "$OUT/sweep_paged.txt" 2>&1
rc_paged=$?

# [SECTION] Summary (OUT/summary.txt, printed last)
sanitized() { grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$1" | tail -1; }
{
  echo "decode_tma.sh: $(head -1 "$OUT/gpu.txt"), correctness ${t_correct} s, total $(( $(date +%s) - start )) s"
  check_line "check" "result" "figure"
  check_line "tests [paged],[variants] (v6, v7 incl.)" "$(verdict $rc_pv)" "$(cases "$OUT/tests_paged_variants.log")"
  check_line "tests [decode] (default variant)" "$(verdict $rc_dec)" "$(cases "$OUT/tests_decode.log")"
  verify_lines "$OUT/verify.txt"
  check_line "memcheck verify v6 (small)" "$(verdict $rc_mem)" "$(sanitized "$OUT/memcheck.log")"
  check_line "memcheck verify v6 --page-size 7" "$(verdict $rc_memp)" "$(sanitized "$OUT/memcheck_paged.log")"
  check_line "racecheck verify v6 (small)" "$(verdict $rc_race)" "$(sanitized "$OUT/racecheck.log")"
  check_line "racecheck verify v6 --page-size 7" "$(verdict $rc_racep)" "$(sanitized "$OUT/racecheck_paged.log")"
  check_line "sdpa_decode_bench.py (d 64, 128)" "$(verdict $rc_sdpa)" "$(grep -c '^sdpa' "$OUT/sdpa.txt" 2>/dev/null) shapes"
  check_line "sweep unpaged, variants 3 5 6 7" "$(verdict $rc_sweep)" "$(points "$OUT/sweep.txt") points"
  check_line "sweep paged P = 16, variants 5 6 7" "$(verdict $rc_paged)" "$(points "$OUT/sweep_paged.txt") points"
  python3 - "$OUT/sweep.json" "$OUT/sweep_paged.json" <<'PY' 2>&1
import sys
from decode_json import load
f = lambda r: f"{r['median_ms']:.4f} {100 * r['fraction_of_copy']:.0f}%c {100 * r.get('fraction_of_read_roof', 0):.0f}%r {r.get('speedup_vs_sdpa', 0):.2f}x"
key = lambda r: (r["d"], r["heads"], r["nk"])
flat, paged = load(sys.argv[1]), load(sys.argv[2])
if flat:
    rows = flat["sweep"]
    print(f"unpaged: copy {flat['copy_gbps']:.0f} GB/s, read roof {flat.get('read_roof_gbps', 0):.0f} GB/s; "
          "ms %copy %roof x-sdpa; best per variant: vV/S ms x-sdpa")
    print("d BxH Nk | default vV/S* | best three | best v5, v6, v7")
    for sh in sorted({key(r) for r in rows}):
        rs = [r for r in rows if key(r) == sh]
        dflt = [r for r in rs if r["variant"] == r.get("default_variant", 3) and r["splits"] == r["default_splits"]]
        best = sorted(rs, key=lambda r: r["median_ms"])[:3]
        per = []
        for v in (5, 6, 7):
            vb = sorted([r for r in rs if r["variant"] == v], key=lambda r: r["median_ms"])[:1]
            per += [f"v{v}/S{r['splits']} {r['median_ms']:.4f} {r.get('speedup_vs_sdpa', 0):.2f}x" for r in vb]
        print(f"{sh[0]} {sh[1]} {sh[2]} | v{dflt[0]['variant']}/S{dflt[0]['splits']} {f(dflt[0])} | " if dflt else f"{sh[0]} {sh[1]} {sh[2]} | - | ",
              end="")
        print(" ; ".join(f"v{r['variant']}/S{r['splits']} {f(r)}" for r in best) + " | " + " ; ".join(per))
    print("v6 by S (the default S rule's data): d BxH Nk | S:%roof for S = 1, 2, 4, ...")
    for sh in sorted({key(r) for r in rows}):
        rs = sorted([r for r in rows if key(r) == sh and r["variant"] == 6], key=lambda r: r["splits"])
        print(f"{sh[0]} {sh[1]} {sh[2]} | " + " ".join(f"{r['splits']}:{100 * r.get('fraction_of_read_roof', 0):.0f}" for r in rs))
if paged:
    rows = paged["sweep"]
    ref = {(key(r), r["variant"], r["splits"]): r["median_ms"] for r in (flat["sweep"] if flat else [])}
    print("paged P=16: d BxH Nk | best per variant: vV/S ms %copy (x unpaged same v/S)")
    for sh in sorted({key(r) for r in rows}):
        rs = [r for r in rows if key(r) == sh]
        out = []
        for v in (5, 6, 7):
            vb = sorted([r for r in rs if r["variant"] == v], key=lambda r: r["median_ms"])[:1]
            for r in vb:
                u = ref.get((sh, v, r["splits"]))
                out.append(f"v{v}/S{r['splits']} {r['median_ms']:.4f} {100 * r['fraction_of_copy']:.0f}%"
                           + (f" ({u / r['median_ms']:.2f}x)" if u else ""))
        print(f"{sh[0]} {sh[1]} {sh[2]} | " + " ; ".join(out))
PY
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
