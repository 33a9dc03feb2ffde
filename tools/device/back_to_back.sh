#!/usr/bin/env bash
# One device call that asks whether the host's work before each launch moves the comparisons
# with PyTorch: every figure timed twice, with one call per pair of CUDA events (--back-to-back 1, how
# the tables of docs/tensor-cores.md and docs/decode.md were made) and with 10 calls back to back
# per pair (--back-to-back 10: the host's dispatch, tensor maps, cuDNN's graph lookup run under the
# previous call's kernel). The same processes, the same shapes, one after another:
#   1. the forward: flashstep_tc_bench for the rungs in RUNGS (bf16, N = 4096, 16384, d = 64, 128,
#      causal and not) and PyTorch's cuDNN backend (gpu/tools/sdpa_bench.py);
#   2. decode at d = 128 (bf16, Nq = 1, Nk = 16384 and 65536, B x H = 32 and 256; the table times fa2 without splits too, 200 x 20 ms at Nk = 262144): bench-gpu
#      --decode (the default kernels) beside PyTorch's fastest backend (sdpa_decode_bench.py).
# Run from the repository root: bash tools/device/back_to_back.sh BIN OUT (about 90 s).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
RUNGS=${RUNGS:-21 22 19 29}
S=()
# The SM clock and the board's power, sampled every 100 ms while our forward rungs run.
clock_line() {  # FILE: median and minimum SM clock (MHz), median power (W) of the samples
  python3 - "$1" <<'EOF2'
import statistics, sys
c, p = [], []
for line in open(sys.argv[1]):
    f = [x.strip().split()[0] for x in line.split(",")]
    try:
        c.append(float(f[0])); p.append(float(f[1]))
    except (ValueError, IndexError):
        pass
print("SM clock median %.0f MHz, min %.0f; power median %.0f W (%d samples)" % (statistics.median(c), min(c), statistics.median(p), len(c)) if c else "no clock samples")
EOF2
}
for b in 1 10; do
  nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 > "$OUT/clocks_b$b.txt" 2>/dev/null &
  smi=$!
  timeout 60 "$BIN/flashstep_tc_bench" --no-verify --no-standard --variants "$(echo $RUNGS | tr ' ' ,)" --ds 64,128 \
    --ns 4096,16384 --dtypes bf16 --causal both --back-to-back $b > "$OUT/fwd_b$b.txt" 2>&1
  S+=("forward flashstep --back-to-back $b: rc=$?")
  kill $smi 2>/dev/null
  S+=("  while it ran: $(clock_line "$OUT/clocks_b$b.txt")")
  : > "$OUT/cudnn_b$b.txt"
  for c in "" "--causal"; do
    timeout 40 python3 gpu/tools/sdpa_bench.py --backend cudnn --ns 4096,16384 --ds 64,128 $c --back-to-back $b \
      >> "$OUT/cudnn_b$b.txt" 2>&1
    S+=("forward cuDNN ${c:-non-causal} --back-to-back $b: rc=$?")
  done
done
for b in 1 10; do
  timeout 60 python3 gpu/tools/sdpa_decode_bench.py --ds 128 --nks 16384,65536 --heads 32,256 --back-to-back $b \
    --json "$OUT/dec_sdpa_b$b.json" > "$OUT/dec_sdpa_b$b.txt" 2>&1
  S+=("decode PyTorch --back-to-back $b: rc=$?")
  timeout 60 "$BIN/flashstep" bench-gpu --decode --d 128 --nk 16384 65536 --sdpa "$OUT/dec_sdpa_b$b.json" \
    --back-to-back $b > "$OUT/dec_b$b.txt" 2>&1
  S+=("decode flashstep --back-to-back $b: rc=$?")
done
S+=("total $(($(date +%s) - T0)) s")
{
  printf '%s\n' "${S[@]}"
  python3 - "$OUT" "$RUNGS" <<'EOF'
import re, sys
out, rungs = sys.argv[1], [int(v) for v in sys.argv[2].split()]
def ours(b):
    tf = {}
    for line in open(f"{out}/fwd_b{b}.txt"):
        f = line.split()
        if len(f) >= 9 and f[0] == "bf16" and f[3] in ("no", "yes"):
            tf[(int(f[1]), int(f[2]), f[3] == "yes", int(f[-4]))] = float(f[-2])
    return tf
def cudnn(b):
    ref = {}
    for line in open(f"{out}/cudnn_b{b}.txt"):
        m = re.search(r"sdpa cudnn .*d=(\d+)\s+N=(\d+)\s+causal=(\w+)\s+([\d.]+) ms\s+([\d.]+) TFLOP/s", line)
        if m:
            ref[(int(m[1]), int(m[2]), m[3] == "True")] = float(m[5])
    return ref
t1, t10, c1, c10 = ours(1), ours(10), cudnn(1), cudnn(10)
print("forward TFLOP/s, bf16, B x H x N = 131072: each rung and cuDNN with --back-to-back 1 / --back-to-back 10; best rung / cuDNN")
print("%-5s %-3s %-3s " % ("N", "d", "cau") + " ".join("%13s" % ("v%d" % v) for v in rungs) + " %13s %s" % ("cuDNN", "best/cuDNN b1, b10"))
for causal in (False, True):
    for d in (64, 128):
        for n in (4096, 16384):
            k = (d, n, causal)
            cells = ["%6s/%6s" % tuple("-" if (d, n, causal, v) not in t else "%.1f" % t[(d, n, causal, v)] for t in (t1, t10)) for v in rungs]
            cd = "%6s/%6s" % tuple("-" if k not in c else "%.1f" % c[k] for c in (c1, c10))
            ratio = []
            for t, c in ((t1, c1), (t10, c10)):
                got = [(t[(d, n, causal, v)], v) for v in rungs if (d, n, causal, v) in t]
                ratio.append("-" if not got or k not in c else "v%d %.3f" % (max(got)[1], max(got)[0] / c[k]))
            print("%-5d %-3d %-3s " % (n, d, "yes" if causal else "no") + " ".join(cells) + " " + cd + " " + ", ".join(ratio))
EOF
  for b in 1 10; do
    echo "decode, d = 128, --back-to-back $b (bench-gpu --decode's table):"
    grep -E "^copy|^ +Nk |^ +[0-9]+ +128 " "$OUT/dec_b$b.txt" | head -8
  done
} | tee "$OUT/summary.txt"
