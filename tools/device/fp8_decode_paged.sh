#!/usr/bin/env bash
# The FP8 cache's paged decode (variant 10, P = 16) against its unpaged run and PyTorch's bf16, in
# one device call of at most about 200 s (docs/fp8-gpu.md):
#   1. paged verifies (each also runs its unpaged twin and compares them bit for bit): P = 16,
#      7, 5, 3 and 1 (a stage over more than 32 pages: the lanes' second pieces), a page longer
#      than a stage, several query rows (variant 9's four-row kernel), variant 9 at one row (its
#      four-row kernel in a default build: the verify line says so), and P = 16 with the table
#      entries read at the copy's issue, a stage ahead, and after the L2 prefetch, all from warp 0
#      (FLASHSTEP_DECODE_TABLE_AHEAD=0, 1, 2; 3, the default, deals the stages to the warps);
#   2. the [fp8] tests (paged = unpaged bit for bit, one row = the same row among four, the
#      default rule);
#   3. compute-sanitizer memcheck, racecheck, synccheck, initcheck on a paged verify (P = 16;
#      memcheck also on P = 3 at d = 64, more pieces per stage than lanes);
#   4. PyTorch's fastest bf16 backend (gpu/tools/sdpa_decode_bench.py, 10 calls back to back),
#      then bench-gpu --decode --dtype fp8 --sweep-variants 10 at d = 128, Nk = 65536 and 262144,
#      B x H = 32 and 256, S = 4, 8, 16, 32: unpaged, and paged (P = 16) four ways
#      (FLASHSTEP_DECODE_TABLE_AHEAD): 3 the default (table entries read a stage ahead, the
#      split's table prefetched into the L2, each stage issued by another warp in turn), 2 (the
#      same from warp 0), 1 (a stage ahead, warp 0) and 0 (at the copy's issue, warp 0: the code
#      before), the default with the pool's pages in logical order (FLASHSTEP_DECODE_PAGES_IN_ORDER=1:
#      the same copies, the DRAM placement of an unpaged cache), then (time permitting)
#      paged with P = 128 (one copy of K and one of V per stage, as unpaged); RUNS picks and
#      orders these (p0 p16a3 p16io p128 p16a0 p16a1 p16a2 by default; pN: P = N, the default
#      way); the table last, with whether the paged targets (>= 85% of the read roof, >= 1.8x PyTorch) are met.
# Variants 11 and 12 (variant 10 with all of V, or each stage's second half of V, by every
# thread's cp.async; ladder rungs): their verifies and the four sanitizers on them with LSU=1, the speed as
# RUNS tags p16v11 and p16v12 (a ladder build: they moved there after their measurement).
# Every command has a timeout; a step that would start past BUDGET seconds is skipped and says
# so. Outputs: $OUT/table.txt (the table last, with the summary), $OUT/summary.txt, $OUT/gpu.txt
# and $OUT/logs.tar.gz (every log and JSON file).
# Usage, from the repository root on the GPU machine: bash tools/device/fp8_decode_paged.sh BIN OUT
# (BIN holds flashstep and flashstep_gpu_tests; about 3 minutes.)
set -u
source tools/device/lib.sh
dev_setup "$0" "$@"
T=$BIN/flashstep_gpu_tests
BUDGET=${BUDGET:-220}
W=$OUT/logs
mkdir -p "$W"
: > "$OUT/summary.txt"

# 1. paged verifies (the default variant unless named)
VERIFY=(
  "--nq 1 --nk 20000 --d 128 --dtype fp8 --fp8-scale per-block --page-size 16"
  "--nq 1 --nk 65536 --d 128 --dtype fp8 --page-size 16 --splits 32"
  "--nq 1 --nk 30001 --d 64 --dtype fp8 --fp8-scale per-block --page-size 1 --splits 8"
  "--nq 1 --nk 12345 --d 128 --dtype fp8 --rotate --pattern outliers --page-size 3 --splits 7"
  "--nq 1 --nk 9000 --d 128 --dtype fp8 --fp8-scale per-block --page-size 300 --splits 4 --kv-len 8000"
  "--nq 4 --nk 5000 --d 64 --dtype fp8 --page-size 7 --kv-len 3000 --splits 5"
  "--nq 2 --nk 777 --d 128 --dtype fp8 --rotate --splits 1 --page-size 5"
  "--nq 1 --nk 20000 --d 128 --dtype fp8 --fp8-scale per-block --page-size 16 --variant 9"
)
n=0
# Variants 11 and 12 are ladder rungs: verified with LSU=1 (a ladder build), where a default build
# would refuse them.
LSU_VERIFY=()
[ -n "${LSU:-}" ] && LSU_VERIFY=(
    "--nq 1 --nk 20000 --d 128 --dtype fp8 --fp8-scale per-block --page-size 16 --variant 11" \
    "--nq 1 --nk 12345 --d 128 --dtype fp8 --rotate --pattern outliers --page-size 3 --splits 7 --variant 11" \
    "--nq 4 --nk 5000 --d 64 --dtype fp8 --page-size 7 --kv-len 3000 --splits 5 --variant 11" \
    "--nq 1 --nk 30001 --d 64 --dtype fp8 --page-size 1 --splits 8 --variant 11" \
    "--nq 1 --nk 20000 --d 128 --dtype fp8 --page-size 16 --splits 6 --variant 12" \
    "--nq 1 --nk 9000 --d 128 --dtype fp8 --fp8-scale per-block --page-size 300 --splits 4 --kv-len 8000 --variant 12" \
    "--nq 1 --nk 30001 --d 64 --dtype fp8 --page-size 1 --splits 8 --variant 12")
for args in "${VERIFY[@]}" "AHEAD=0 --nq 1 --nk 20000 --d 64 --dtype fp8 --page-size 16 --splits 6" \
    "AHEAD=1 --nq 1 --nk 20000 --d 128 --dtype fp8 --page-size 16 --splits 6" \
    "AHEAD=2 --nq 1 --nk 20000 --d 128 --dtype fp8 --page-size 3 --splits 5" "${LSU_VERIFY[@]}"; do
  ahead=3
  case "$args" in AHEAD=*) ahead=${args%% *}; ahead=${ahead#AHEAD=}; args=${args#* } ;; esac
  echo "== FLASHSTEP_DECODE_TABLE_AHEAD=$ahead verify --schedule decode $args"
  FLASHSTEP_DECODE_TABLE_AHEAD=$ahead timeout 25 "$FS" verify --schedule decode $args; echo "rc=$?"
  n=$((n + 1))
done > "$W/verify.txt" 2>&1
grep -E '^== |^verify|^final|^paged|^(PASS|FAIL)' "$W/verify.txt" > "$W/verify_lines.txt"
say "paged verifies: $(grep -c '^PASS' "$W/verify.txt") PASS of $n; $(grep -c '^rc=0' "$W/verify.txt") exit 0;" \
  "paged = unpaged bit for bit: $(grep -c '^paged .*equal bit for bit  ok' "$W/verify.txt") of $n;" \
  "four-row kernel named (variant 9, one row): $(grep -c 'in its four-row kernel' "$W/verify.txt")"

# 2. the [fp8] tests
if before 90 "tests [fp8]"; then
  catch2 "$W/tests_fp8.log" timeout 60 "$T" "[fp8]"
  say "tests [fp8]: $(tests_line "$W/tests_fp8.log" $?)"
fi

# 3. the sanitizers on a paged verify (the paged kernel and its unpaged twin)
SMALLP="verify --schedule decode --nq 1 --nk 3000 --d 128 --dtype fp8 --fp8-scale per-block --page-size 16 --splits 4"
SMALL3="verify --schedule decode --nq 1 --nk 2000 --d 64 --dtype fp8 --page-size 3 --splits 3"
for run in "memcheck p16 $SMALLP" "racecheck p16 $SMALLP" "synccheck p16 $SMALLP" "initcheck p16 $SMALLP" \
    "memcheck p3 $SMALL3" ${LSU:+"memcheck p16v11 $SMALLP --variant 11" "racecheck p16v11 $SMALLP --variant 11" \
    "synccheck p16v11 $SMALLP --variant 11" "initcheck p16v11 $SMALLP --variant 11" "memcheck p3v11 $SMALL3 --variant 11" \
    "memcheck p16v12 $SMALLP --variant 12" "racecheck p16v12 $SMALLP --variant 12" "synccheck p16v12 $SMALLP --variant 12" \
    "initcheck p16v12 $SMALLP --variant 12" "memcheck p3v12 $SMALL3 --variant 12"}; do
  set -- $run
  tool=$1 tag=$2
  shift 2
  before $([ -n "${LSU:-}" ] && echo 190 || echo 120) "compute-sanitizer $tool $tag" || continue
  log=$W/sanitizer_${tool}_$tag.txt
  timeout 25 compute-sanitizer --tool $tool --error-exitcode 9 "$FS" "$@" > "$log" 2>&1
  say "compute-sanitizer $tool ($tag): rc=$? $(sanitized "$log") $(grep -c '^PASS' "$log") PASS"
done
# 4. speed: PyTorch's bf16, then variant 10 unpaged and paged (three ways of reading the table)
if before 130 "PyTorch bf16 decode"; then
  timeout 70 python3 gpu/tools/sdpa_decode_bench.py --ds 128 --nks 65536,262144 --heads 32,256 --back-to-back 10 \
    --json "$W/sdpa.json" > "$W/sdpa.txt" 2>&1
  say "PyTorch bf16 decode: rc=$?"
fi
SDPA=(); [ -s "$W/sdpa.json" ] && SDPA=(--sdpa "$W/sdpa.json")
for run in ${RUNS:-p0 p16a3 p16io p128 p16a0 p16a1 p16a2}; do
  inorder=0 variant=10
  case $run in p0) set -- p0 0 3 ;; p128) set -- p128 128 3 ;; p16io) set -- p16io 16 3; inorder=1 ;;
               p16a*) set -- $run 16 "${run#p16a}" ;; p16v*) set -- $run 16 3; variant=${run#p16v} ;;
               p[0-9]*) set -- $run "${run#p}" 3 ;; esac
  tag=$1 P=$2 ahead=$3
  before $((BUDGET - 35)) "fp8 sweep $tag" || continue
  pg=(); [ "$P" -gt 0 ] && pg=(--page-size "$P")
  FLASHSTEP_DECODE_PAGES_IN_ORDER=$inorder FLASHSTEP_DECODE_TABLE_AHEAD=$ahead timeout 35 "$FS" bench-gpu --decode --dtype fp8 --d 128 --nk 65536 262144 \
    --heads 32 256 --sweep-variants $variant --sweep-splits 4 8 16 32 "${pg[@]}" "${SDPA[@]}" --back-to-back 10 \
    --json-file "$W/sweep_$tag.json" > "$W/sweep_$tag.txt" 2>&1
  say "bench-gpu --decode --dtype fp8 --sweep-variants $variant, $tag (P $P, table ahead $ahead): rc=$? at $(($(date +%s) - T0)) s"
done

say "total $(($(date +%s) - T0)) s"

{
  cat "$W/verify_lines.txt"
  python3 - "$W" "$ROOF_REF" <<'EOF'
import json, os, sys
work, roof_ref = sys.argv[1], float(sys.argv[2])
runs = [("p0", "unpaged"), ("p16a3", "paged, 3: ahead, L2, warps (default)"), ("p16a2", "paged, 2: ahead, L2, warp 0"),
        ("p16a1", "paged, 1: table ahead, warp 0"), ("p16a0", "paged, 0: at issue, warp 0 (before)"),
        ("p16io", "paged, 3, pages in pool order"),
        ("p16v11", "paged, variant 11: V by cp.async"), ("p16v12", "paged, 12: half of V by cp.async"),
        ("p32", "paged P = 32 (4 copies of K, 4 of V a stage)"), ("p64", "paged P = 64 (2 and 2)"),
        ("p128", "paged P = 128 (a copy per stage)")]
sdpa = {}
try:
    for r in json.load(open(os.path.join(work, "sdpa.json")))["rows"]:
        if r.get("best_ms"):
            sdpa[(r["nk"], r["heads"])] = r["best_ms"]
except Exception:
    pass
res = {}
for tag, _ in runs:
    try:
        j = json.load(open(os.path.join(work, f"sweep_{tag}.json")))
        res[tag] = (j.get("sweep", []), j.get("read_roof_gbps", float("nan")))
    except Exception:
        res[tag] = ([], float("nan"))
print(f"fp8 decode, variant 10, d = 128, Nq = 1, P = 16 where paged; 10 calls back to back; % of the read roof {roof_ref:.0f} GB/s;"
      " x sdpa = PyTorch bf16 ms / fp8 ms; best = best S of 4, 8, 16, 32; dflt = the default S (*)")
print("%7s %4s %-36s | %3s %8s %6s %6s | %3s %8s %6s %6s | %s" % ("Nk", "BxH", "run", "S", "best ms", "%roof", "x sdpa",
      "S*", "dflt ms", "%roof", "x sdpa", "all S (ms)"))
shapes = sorted({(r["nk"], r["heads"]) for tag, _ in runs for r in res[tag][0]})
verdicts = []
for nk, heads in shapes:
    bytes_kv = 2.0 * heads * nk * 128  # e4m3: one byte per element
    for tag, name in runs:
        rs = [r for r in res[tag][0] if r["nk"] == nk and r["heads"] == heads]
        if not rs:
            continue
        b = min(rs, key=lambda r: r["median_ms"])
        dflt = [r for r in rs if r["splits"] == r["default_splits"]]
        sd = sdpa.get((nk, heads), float("nan"))
        pct = lambda ms: 100 * bytes_kv / (ms * 1e6) / roof_ref
        d = dflt[0] if dflt else None
        alls = " ".join(f"{r['splits']}:{r['median_ms']:.4f}" for r in sorted(rs, key=lambda r: r["splits"]))
        print("%7d %4d %-36s | %3d %8.4f %5.1f%% %5.2fx | %3s %8s %6s %6s | %s" % (nk, heads, name, b["splits"],
              b["median_ms"], pct(b["median_ms"]), sd / b["median_ms"], d["default_splits"] if d else "-",
              f"{d['median_ms']:.4f}" if d else "-", f"{pct(d['median_ms']):.1f}%" if d else "-",
              f"{sd / d['median_ms']:.2f}x" if d else "-", alls))
        if tag == "p16a3":
            verdicts.append((nk, heads, pct(b["median_ms"]), sd / b["median_ms"]))
    un, pa = res["p0"][0], res["p16a3"][0]
    bu = min((r["median_ms"] for r in un if r["nk"] == nk and r["heads"] == heads), default=float("nan"))
    bp = min((r["median_ms"] for r in pa if r["nk"] == nk and r["heads"] == heads), default=float("nan"))
    b0 = min((r["median_ms"] for r in res["p16a0"][0] if r["nk"] == nk and r["heads"] == heads), default=float("nan"))
    bo = min((r["median_ms"] for r in res["p16io"][0] if r["nk"] == nk and r["heads"] == heads), default=float("nan"))
    print(f"  paged (default) / unpaged = {bp / bu:.3f}; paged before / paged default = {b0 / bp:.3f};"
          f" pages in pool order / unpaged = {bo / bu:.3f}")
    for v in ("11", "12"):  # time over variant 10's, paged (below 1: faster)
        bv = min((r["median_ms"] for r in res["p16v" + v][0] if r["nk"] == nk and r["heads"] == heads), default=float("nan"))
        if bv == bv:
            print(f"  paged variant {v} / variant 10 = {bv / bp:.3f} ({100 * bytes_kv / (bv * 1e6) / roof_ref:.1f}% of the roof,"
                  f" {sdpa.get((nk, heads), float('nan')) / bv:.2f}x PyTorch)")
for nk, heads, pct, x in verdicts:
    ok = pct >= 85 and x >= 1.8
    print(f"target paged Nk {nk} BxH {heads}: {pct:.1f}% of the roof (>= 85), {x:.2f}x PyTorch (>= 1.8): {'met' if ok else 'NOT met'}")
EOF
  printf '%s\n' "${S[@]}"
} > "$OUT/table.txt"
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$W"
cat "$OUT/table.txt"
