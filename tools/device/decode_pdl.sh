#!/usr/bin/env bash
# Device run for the combine launched as the split kernel's programmatic dependent (gpu/decode.cu,
# decode_combine_launch), and S = 8 against the default S at B x H = 32, Nk = 262144;
# gpu/ladder/notes/decode.md "The combine as a dependent launch".
# From the repository root on the GPU machine:
#   ROUNDS=3 bash tools/device/decode_pdl.sh BIN OUT
# BIN holds flashstep and flashstep_gpu_tests (lib.sh sets the environment); OUT gets the logs.
#   1. side by side (70 s at most): the [paged],[variants] and [decode] tests, four verifies with
#      S >= 2 (the combine runs), memcheck, racecheck and synccheck of a small verify with splits;
#   2. alone, ROUNDS rounds: per shape (bf16, d = 128, Nq = 1, B x H = 32, 256, Nk = 16384 ..
#      262144) one `bench-gpu --decode` process with the dependent launch and one without
#      (FLASHSTEP_DECODE_PDL=0), in alternating order; at B x H = 32, Nk = 262144 also S = 8
#      with the dependent launch (to set beside the default's S). About 3 s a process.
# The summary (OUT/summary.txt, printed last): the checks, then per shape the median ms of each
# side and their ratio, with every round's figures.
set -u
BIN=${1:?usage: decode_pdl.sh BIN OUT}
OUT=${2:?usage: decode_pdl.sh BIN OUT}
ROUNDS=${ROUNDS:-3}
source "$(dirname "$0")/decode_lib.sh"
decode_device_setup

# [SECTION] Correctness, side by side (each under its own timeout)
start_decode_tests 70
VERIFY=(
  "--nq 1 --nk 4096 --d 128 --M 128KiB --splits 8 --dtype bf16"
  "--nq 1 --nk 2000 --d 64 --M 64KiB --splits 7 --kv-len 1234 --page-size 7 --dtype bf16"
  "--nq 5 --nk 700 --d 64 --M 64KiB --splits 4 --causal --dtype fp16"
  "--nq 3 --nk 333 --d 32 --M 64KiB --splits 3 --dtype bf16"
)
run_verify_list "$OUT/verify.txt" 10 &
pid_verify=$!
SMALL="verify --schedule decode --nq 3 --nk 333 --d 64 --M 64KiB --splits 4 --dtype bf16"
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 "$FS" $SMALL > "$OUT/$tool.log" 2>&1 &
  eval "pid_$tool=$!"
done
wait $pid_pv; rc_pv=$?
wait $pid_dec; rc_dec=$?
wait $pid_verify
wait $pid_memcheck; rc_memcheck=$?
wait $pid_racecheck; rc_racecheck=$?
wait $pid_synccheck; rc_synccheck=$?
t_correct=$(( $(date +%s) - start ))

# [SECTION] Speed, alone and one after another
one() {  # one() TAG PDL ARGS...: a bench-gpu --decode table appended to OUT/TAG.txt
  local tag=$1 pdl=$2
  shift 2
  FLASHSTEP_DECODE_PDL=$pdl timeout 40 "$FS" bench-gpu --decode --d 128 "$@" >> "$OUT/$tag.txt" 2>&1 ||
    echo "rc=$? $tag $*" >> "$OUT/failed.txt"
}
for r in $(seq 1 "$ROUNDS"); do
  for bh in 32 256; do
    for nk in 16384 65536 262144; do
      if [ $((r % 2)) = 1 ]; then
        one "pdl_$r" 1 --heads $bh --nk $nk
        one "serial_$r" 0 --heads $bh --nk $nk
      else
        one "serial_$r" 0 --heads $bh --nk $nk
        one "pdl_$r" 1 --heads $bh --nk $nk
      fi
    done
  done
  one "s8_$r" 1 --heads 32 --nk 262144 --splits 8
done

# [SECTION] Summary (OUT/summary.txt, printed last)
{
  summary_head decode_pdl.sh "default rule incl."
  verify_lines "$OUT/verify.txt"
  for tool in memcheck racecheck synccheck; do
    eval "rc=\$rc_$tool"
    check_line "$tool verify (small, S = 4)" "$(verdict $rc)" "$(sanitized "$OUT/$tool.log")"
  done
  [ -s "$OUT/failed.txt" ] && cat "$OUT/failed.txt"
  python3 - "$OUT" "$ROUNDS" <<'PY'
import statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def rows(path):
    got = {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return got
    for line in lines:
        f = line.replace("|", " ").split()
        # Nk d BxH Bc v S ms GB/s %copy %roof S1ms S1GB/s fa2ms fa2GB/s
        if len(f) >= 14 and f[0].isdigit() and f[1] == "128":
            got[(int(f[2]), int(f[0]))] = (f"v{f[4]}/S{f[5]}", float(f[6]), float(f[7]))
    return got
pdl = [rows(f"{out}/pdl_{r}.txt") for r in range(1, rounds + 1)]
ser = [rows(f"{out}/serial_{r}.txt") for r in range(1, rounds + 1)]
s8 = [rows(f"{out}/s8_{r}.txt") for r in range(1, rounds + 1)]
print(f"combine as a dependent launch (pdl) or in stream order (serial); bf16, d = 128, Nq = 1; {rounds} rounds")
print("BxH Nk | kernel | pdl ms (median) GB/s | serial ms (median) | serial / pdl per round")
for bh in (32, 256):
    for nk in (16384, 65536, 262144):
        a = [p[(bh, nk)] for p in pdl if (bh, nk) in p]
        b = [s[(bh, nk)] for s in ser if (bh, nk) in s]
        if not a or not b:
            print(f"{bh} {nk}: no data")
            continue
        ratios = [y[1] / x[1] for x, y in zip(a, b)]
        print(f"{bh:3d} {nk:6d} | {a[0][0]} | {statistics.median(x[1] for x in a):.4f} {statistics.median(x[2] for x in a):.0f} | "
              f"{statistics.median(y[1] for y in b):.4f} | median {statistics.median(ratios):.4f} (" +
              " ".join(f"{q:.4f}" for q in ratios) + ")")
c = [p[(32, 262144)] for p in s8 if (32, 262144) in p]
a = [p[(32, 262144)] for p in pdl if (32, 262144) in p]
if c and a:
    print(f"B x H 32, Nk 262144: default {a[0][0]} {statistics.median(x[1] for x in a):.4f} ms, {c[0][0]} "
          f"{statistics.median(x[1] for x in c):.4f} ms; S 8 / default per round: " +
          " ".join(f"{y[1] / x[1]:.4f}" for x, y in zip(a, c)))
PY
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
