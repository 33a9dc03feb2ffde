#!/usr/bin/env bash
# One device call for flash-decoding's default split kernel and S (gpu/decode_backend.cpp's
# decode_default): the GPU tests [decode] (variant 0 included) and four `verify --schedule decode`
# runs with the default kernel (no --variant), then PyTorch's SDPA at the benchmark's shapes
# (gpu/tools/sdpa_decode_bench.py), bench-gpu --decode's table, which runs the defaults (variant
# 0, the default S; paged P = 16 beside), and its variant x S sweep (bf16, Nq = 1, d = 64 and
# 128, B x H = 32 and 256, Nk = 16384 .. 262144). Wall budget 150 s (timeouts 35 + 30 + 45 +
# 40 s; about 5 + 10 + 25 + 20 s expected). Usage (repository root):
#   bash tools/device/decode_sweep.sh BIN OUT
# OUT/summary.txt (printed last): one line per check, then per shape the default's figures (from
# the table: variant, S, ms, % of copy, % of the read roof, x PyTorch; paged), and the sweep's
# default against the sweep's best three.
set -u
BIN=${1:?usage: decode_sweep.sh BIN OUT}
OUT=${2:?usage: decode_sweep.sh BIN OUT}
source "$(dirname "$0")/decode_lib.sh"
decode_device_setup
NKS=${NKS:-16384 65536 262144}
VARIANTS=${VARIANTS:-3 5 6}

# [SECTION] Correctness: the tests and the default kernel's verify runs, side by side
start_decode_tests 35
VERIFY=(
  "--nq 1 --nk 4096 --d 128 --M 128KiB --dtype bf16"
  "--nq 1 --nk 4096 --d 128 --M 128KiB --dtype bf16 --page-size 16"
  "--nq 1 --nk 2000 --d 64 --M 64KiB --splits 8 --causal --dtype fp16"
  "--nq 3 --nk 333 --d 32 --M 64KiB --dtype bf16"
)
run_verify_list "$OUT/verify.txt" 8 &
pid_verify=$!
wait $pid_pv; rc_pv=$?
wait $pid_dec; rc_dec=$?
wait $pid_verify
t_correct=$(( $(date +%s) - start ))

# [SECTION] Speed, alone and one after another
timeout 30 python3 gpu/tools/sdpa_decode_bench.py --ds 64,128 --nks "$(echo $NKS | tr ' ' ,)" --json "$OUT/sdpa.json" \
  > "$OUT/sdpa.txt" 2>&1
rc_sdpa=$?
SDPA=()
[ -s "$OUT/sdpa.json" ] && SDPA=(--sdpa "$OUT/sdpa.json")
# The defaults first (the figures that matter most), then the sweep around them
timeout 45 "$FS" bench-gpu --decode --d 64 128 --nk $NKS --page-size 16 "${SDPA[@]}" --json-file "$OUT/bench.json" \
  > "$OUT/bench.txt" 2>&1
rc_bench=$?
timeout 40 "$FS" bench-gpu --decode --d 64 128 --nk $NKS --sweep-variants $VARIANTS \
  --sweep-splits 1 2 4 8 16 32 64 "${SDPA[@]}" --json-file "$OUT/sweep.json" > "$OUT/sweep.txt" 2>&1
rc_sweep=$?

# [SECTION] Summary (OUT/summary.txt, printed last)
{
  echo "decode_sweep.sh: $(head -1 "$OUT/gpu.txt"), correctness ${t_correct} s, total $(( $(date +%s) - start )) s"
  CHECK_WIDTH=52
  check_line "check" "result" "figure"
  check_line "tests [paged],[variants] (default rule incl.)" "$(verdict $rc_pv)" "$(cases "$OUT/tests_paged_variants.log")"
  check_line "tests [decode] (variant 0)" "$(verdict $rc_dec)" "$(cases "$OUT/tests_decode.log")"
  verify_lines "$OUT/verify.txt"
  check_line "sdpa_decode_bench.py (d 64, 128)" "$(verdict $rc_sdpa)" "$(grep -c '^sdpa' "$OUT/sdpa.txt" 2>/dev/null) shapes"
  check_line "sweep unpaged, variants $VARIANTS" "$(verdict $rc_sweep)" "$(points "$OUT/sweep.txt") points"
  check_line "bench-gpu --decode (the defaults), paged P = 16" "$(verdict $rc_bench)" "$(points "$OUT/bench.txt") shapes"
  python3 - "$OUT/bench.json" "$OUT/sweep.json" <<'PY' 2>&1
import sys
from decode_json import load
bench, sweep = load(sys.argv[1]), load(sys.argv[2])
if bench:
    print(f"defaults (bench-gpu --decode): copy {bench['copy_gbps']:.0f} GB/s, read roof {bench.get('read_roof_gbps', 0):.0f} GB/s")
    print("d BxH Nk | default vV/S ms %copy %roof x-sdpa | paged P=16 default vV/S ms %copy (x unpaged default)")
    for r in sorted(bench["rows"], key=lambda r: (r["d"], r["heads"], r["nk"])):
        x = r.get("decode", {})
        head = f"{r['d']} {r['heads']} {r['nk']} | "
        if "median_ms" not in x:
            print(head + f"skipped: {x.get('skipped', '?')}")
            continue
        line = (head + f"v{r['variant']}/S{r['splits']} {x['median_ms']:.4f} {100 * x['fraction_of_copy']:.0f}%c "
                f"{100 * x['fraction_of_read_roof']:.0f}%r {r.get('speedup_vs_sdpa', 0):.2f}x")
        pg = r.get("decode_paged", {})
        if "median_ms" in pg:
            line += (f" | v{r['paged_variant']}/S{r['paged_splits']} {pg['median_ms']:.4f} "
                     f"{100 * pg['fraction_of_copy']:.0f}% ({x['median_ms'] / pg['median_ms']:.2f}x)")
        print(line)
if sweep:
    rows = sweep["sweep"]
    key = lambda r: (r["d"], r["heads"], r["nk"])
    f = lambda r: f"{r['median_ms']:.4f} {100 * r['fraction_of_copy']:.0f}%c {r.get('speedup_vs_sdpa', 0):.2f}x"
    print("sweep: d BxH Nk | default vV/S* ms %copy x-sdpa (x best) | best three")
    for sh in sorted({key(r) for r in rows}):
        rs = [r for r in rows if key(r) == sh]
        dflt = [r for r in rs if r["variant"] == r.get("default_variant") and r["splits"] == r["default_splits"]]
        best = sorted(rs, key=lambda r: r["median_ms"])[:3]
        d = (f"v{dflt[0]['variant']}/S{dflt[0]['splits']} {f(dflt[0])} ({best[0]['median_ms'] / dflt[0]['median_ms']:.3f}x)"
             if dflt else "- (not in the sweep)")
        print(f"{sh[0]} {sh[1]} {sh[2]} | {d} | " + " ; ".join(f"v{r['variant']}/S{r['splits']} {f(r)}" for r in best))
PY
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
