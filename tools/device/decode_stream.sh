#!/usr/bin/env bash
# Device run for the read streams (gpu/read_streams.cu: which way of streaming bytes reads
# fastest) and the decode split kernel's versions 8 and 9 (gpu/decode.cu: version 6 under an L2
# evict_first policy; that stream with version 5's 256 threads); gpu/ladder/notes/decode.md "Read streams and
# versions 8, 9". From the repository root on the GPU machine:
#   bash tools/device/decode_stream.sh BIN OUT
# BIN holds flashstep and flashstep_gpu_tests (lib.sh sets the environment); OUT gets the logs. Wall budget
# 150 s: the correctness checks side by side (the [paged],[variants] and [decode] tests, four
# verifies of v8/v9, memcheck and racecheck of a small verify; 70 s at most), then alone, one
# after another: the read-stream table (timeout 20 s, about 3 s expected), PyTorch's SDPA (25 s,
# about 13 s) and the sweep of versions 5, 6, 8, 9 x S = 1, 4, 8, 16, 32 (35 s, about 12 s).
# Everything that matters is in OUT/summary.txt (printed last).
set -u
BIN=${1:?usage: decode_stream.sh BIN OUT}
OUT=${2:?usage: decode_stream.sh BIN OUT}
source "$(dirname "$0")/decode_lib.sh"
decode_device_setup

# [SECTION] Correctness, side by side (each under its own timeout)
start_decode_tests 70
VERIFY=(
  "--nq 1 --nk 4096 --d 128 --M 128KiB --splits 8 --dtype bf16 --variant 8"
  "--nq 1 --nk 2000 --d 64 --M 64KiB --splits 7 --kv-len 1234 --page-size 7 --dtype bf16 --variant 8"
  "--nq 5 --nk 700 --d 64 --M 64KiB --splits 4 --causal --dtype fp16 --variant 9"
  "--nq 1 --nk 4096 --d 128 --M 128KiB --splits 8 --page-size 16 --dtype bf16 --variant 9"
)
run_verify_list "$OUT/verify.txt" 10 &
pid_verify=$!
SMALL="verify --schedule decode --nq 3 --nk 333 --d 64 --M 64KiB --splits 4 --dtype bf16"
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 "$FS" $SMALL --variant 8 > "$OUT/memcheck.log" 2>&1 &
pid_mem=$!
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 "$FS" $SMALL --variant 9 --page-size 7 \
  > "$OUT/memcheck_v9_paged.log" 2>&1 &
pid_mem9=$!
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 "$FS" $SMALL --variant 8 > "$OUT/racecheck.log" 2>&1 &
pid_race=$!
wait $pid_pv; rc_pv=$?
wait $pid_dec; rc_dec=$?
wait $pid_verify
wait $pid_mem; rc_mem=$?
wait $pid_mem9; rc_mem9=$?
wait $pid_race; rc_race=$?
t_correct=$(( $(date +%s) - start ))

# [SECTION] Speed, alone and one after another
timeout 20 "$FS" bench-gpu --decode --read-streams --reps 30 --json-file "$OUT/streams.json" > "$OUT/streams.txt" 2>&1
rc_streams=$?
timeout 25 python3 gpu/tools/sdpa_decode_bench.py --ds 64,128 --nks 16384,65536,262144 --json "$OUT/sdpa.json" \
  > "$OUT/sdpa.txt" 2>&1
rc_sdpa=$?
SDPA=()
[ -s "$OUT/sdpa.json" ] && SDPA=(--sdpa "$OUT/sdpa.json")
timeout 35 "$FS" bench-gpu --decode --d 64 128 --nk 16384 65536 262144 --sweep-variants 5 6 8 9 \
  --sweep-splits 1 4 8 16 32 "${SDPA[@]}" --json-file "$OUT/sweep.json" > "$OUT/sweep.txt" 2>&1
rc_sweep=$?

# [SECTION] Summary (OUT/summary.txt, printed last)
{
  summary_head decode_stream.sh "v8, v9 incl."
  verify_lines "$OUT/verify.txt"
  check_line "memcheck verify v8 (small)" "$(verdict $rc_mem)" "$(sanitized "$OUT/memcheck.log")"
  check_line "memcheck verify v9 --page-size 7" "$(verdict $rc_mem9)" "$(sanitized "$OUT/memcheck_v9_paged.log")"
  check_line "racecheck verify v8 (small)" "$(verdict $rc_race)" "$(sanitized "$OUT/racecheck.log")"
  check_line "read streams (bench-gpu --read-streams)" "$(verdict $rc_streams)" "$(grep -c ' KiB | ' "$OUT/streams.txt" 2>/dev/null) shapes"
  check_line "sdpa_decode_bench.py (d 64, 128)" "$(verdict $rc_sdpa)" "$(grep -c '^sdpa' "$OUT/sdpa.txt" 2>/dev/null) shapes"
  check_line "sweep, variants 5 6 8 9" "$(verdict $rc_sweep)" "$(points "$OUT/sweep.txt") points"
  python3 - "$OUT/streams.json" "$OUT/sweep.json" <<'PY' 2>&1
import sys
from decode_json import load
streams, sweep = load(sys.argv[1]), load(sys.argv[2])
if streams:
    print(f"read streams (2 GiB): copy {streams['copy_gbps']:.0f} GB/s, read roof {streams['read_roof_gbps']:.0f} GB/s; "
          "stream | thr blk/SM KiB-in-flight/SM | GB/s")
    for r in sorted(streams["streams"], key=lambda r: -r["gbps"]):
        print(f"  {r['name']:<32} | {r['threads']:4} {r['blocks_per_sm']} {r['in_flight_kib_per_sm']:4} | {r['gbps']:.0f}")
if sweep:
    rows = sweep["sweep"]
    key = lambda r: (r["d"], r["heads"], r["nk"])
    print("sweep (bf16, Nq = 1): d BxH Nk | per version its best S: vV/S ms GB/s x-sdpa | best")
    for sh in sorted({key(r) for r in rows}):
        rs = [r for r in rows if key(r) == sh]
        per = []
        for v in (5, 6, 8, 9):
            vb = sorted([r for r in rs if r["variant"] == v], key=lambda r: r["median_ms"])[:1]
            per += [f"v{v}/{r['splits']} {r['median_ms']:.4f} {r['kv_gbps']:.0f} {r.get('speedup_vs_sdpa', 0):.2f}x" for r in vb]
        best = min(rs, key=lambda r: r["median_ms"])
        print(f"{sh[0]} {sh[1]} {sh[2]} | " + " ; ".join(per) + f" | v{best['variant']}/{best['splits']}")
PY
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
