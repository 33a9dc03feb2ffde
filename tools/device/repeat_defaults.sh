#!/usr/bin/env bash
# One device call that times the defaults against PyTorch ROUNDS times, alternating, so that the
# ratios come with their spread between runs of one call (cuDNN's own figure moved by 5-15%
# between calls and by 7% between two scripts of one call):
#   forward: bench-gpu --tensor-cores (variant 0; bf16, N = 4096, 16384, d = 64, 128, causal and
#            not) and gpu/tools/sdpa_bench.py --backend cudnn on the same shapes;
#   decode:  bench-gpu --decode (the default kernel and S; bf16, d = 128, Nq = 1, Nk = 16384 ..
#            262144, B x H = 32 and 256; one process per shape) beside
#            gpu/tools/sdpa_decode_bench.py's fastest backend, timed in the same round just before.
# Each round is one process per side, each timed sample 10 calls back to back on both sides (the
# defaults of bench-gpu and of gpu/tools/sdpa_bench.py; Python's launch latency hidden). Run from the repository root: ROUNDS=3 bash tools/device/repeat_defaults.sh
# BIN OUT (about 60 s a round). DECODE=0 leaves the decode rows out (the forward alone, about 25 s
# a round).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
ROUNDS=${ROUNDS:-3}
DECODE=${DECODE:-1}
S=()
for r in $(seq 1 "$ROUNDS"); do
  : > "$OUT/fwd_$r.txt"
  : > "$OUT/cudnn_$r.txt"
  for c in "" "--causal"; do
    timeout 60 "$BIN/flashstep" bench-gpu --tensor-cores --dtype bf16 --n 4096 16384 --d 64 128 --no-sweep $c \
      >> "$OUT/fwd_$r.txt" 2>&1 || S+=("round $r forward flashstep ${c:-non-causal}: rc=$?")
    timeout 40 python3 gpu/tools/sdpa_bench.py --backend cudnn --ns 4096,16384 --ds 64,128 $c >> "$OUT/cudnn_$r.txt" 2>&1 ||
      S+=("round $r forward cuDNN ${c:-non-causal}: rc=$?")
  done
  : > "$OUT/dec_$r.txt"
  [ "$DECODE" = 0 ] && continue
  timeout 60 python3 gpu/tools/sdpa_decode_bench.py --ds 128 --nks 16384,65536,262144 --heads 32,256 \
    --json "$OUT/dec_sdpa_$r.json" > /dev/null 2>&1 || S+=("round $r decode PyTorch: rc=$?")
  # One process per shape: in one table, the first column of the row after Nk = 262144's ran 12-14%
  # slower than the same kernel timed alone (docs/decode.md, "H200 results").
  : > "$OUT/dec_$r.txt"
  for bh in 32 256; do
    for nk in 16384 65536 262144; do
      timeout 40 "$BIN/flashstep" bench-gpu --decode --d 128 --heads $bh --nk $nk --sdpa "$OUT/dec_sdpa_$r.json" \
        >> "$OUT/dec_$r.txt" 2>&1 || S+=("round $r decode flashstep B x H $bh Nk $nk: rc=$?")
    done
  done
done
S+=("$ROUNDS rounds, total $(($(date +%s) - T0)) s (a failed step is listed above; none listed: all rc = 0)")
{
  printf '%s\n' "${S[@]}"
  python3 - "$OUT" "$ROUNDS" <<'PY'
import re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
fwd, dec = {}, {}
for r in range(1, rounds + 1):
    ours, causal = {}, False
    for line in open(f"{out}/fwd_{r}.txt"):
        if line.startswith("bench-gpu"):
            causal = ", causal," in line
        m = re.match(r"\s*(\d+)\s+(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+(\d+)\s*\|\s*([\d.]+)\s+([\d.]+)", line)
        if m:
            ours[(int(m[1]), int(m[2]), causal)] = (int(m[3]), float(m[5]))
    for line in open(f"{out}/cudnn_{r}.txt"):
        m = re.search(r"d=(\d+)\s+N=(\d+)\s+causal=(\w+)\s+([\d.]+) ms\s+([\d.]+) TFLOP/s", line)
        if m:
            k = (int(m[2]), int(m[1]), m[3] == "True")
            if k in ours:
                fwd.setdefault(k, []).append((ours[k][0], ours[k][1], float(m[5])))
    for line in open(f"{out}/dec_{r}.txt"):
        f = line.replace("|", " ").split()
        # Nk d BxH Bc v S ms GB/s %copy %roof S1ms S1GB/s fa2ms fa2GB/s sdpams backend vs
        if len(f) >= 17 and f[0].isdigit() and f[-1].endswith("x"):
            dec.setdefault((int(f[0]), int(f[1]), int(f[2])), []).append((f"v{f[4]}/S{f[5]}", float(f[6]), float(f[7]), float(f[14]) / float(f[6])))
def spread(xs):
    return "median %.3fx (min %.3f, max %.3f; %s)" % (statistics.median(xs), min(xs), max(xs), " ".join("%.3f" % x for x in xs))
print(f"forward, variant 0 against cuDNN, bf16, B x H x N = 131072, H = 8; {rounds} rounds")
print("N d causal | v | ours TFLOP/s (median) | cuDNN (median) | ratio per round")
for causal in (False, True):
    for d in (64, 128):
        for n in (4096, 16384):
            v = fwd.get((n, d, causal), [])
            if not v:
                print(f"{n} {d} {causal}: no data")
                continue
            print(f"{n:6d} {d:4d} {'yes' if causal else 'no ':3s} | v{v[0][0]} | {statistics.median(x[1] for x in v):7.1f} | "
                  f"{statistics.median(x[2] for x in v):7.1f} | " + spread([x[1] / x[2] for x in v]))
print(f"decode, the default against PyTorch's fastest backend, bf16, d = 128, Nq = 1; {rounds} rounds")
print("Nk BxH | kernel | ms (median) | GB/s (median) | x PyTorch per round")
for (nk, d, bh), v in sorted(dec.items(), key=lambda kv: (kv[0][2], kv[0][0])):
    print(f"{nk:7d} {bh:4d} | {v[0][0]} | {statistics.median(x[1] for x in v):.4f} | {statistics.median(x[2] for x in v):5.0f} | "
          + spread([x[3] for x in v]))
PY
} | tee "$OUT/summary.txt"
