# Shared by the forward ladder's device scripts' summaries (fa3_ladder.sh, fa3_rungs.sh,
# fa3_tiles.sh): the TFLOP/s of flashstep_tc_bench (bench.txt, one run per rung appended) and of
# gpu/tools/sdpa_bench.py --backend cudnn (sdpa.txt), as one table per (N, d, causal).
#   python3 tools/device/tc_tables.py BENCH SDPA "VARIANTS" ["CORRECT"]
# prints each variant's TFLOP/s with its ratio to cuDNN in the same run, cuDNN's, and (given
# CORRECT, the variants whose tests passed) the fastest correct variant.
import re
import sys


def ours(path):
    """(d, N, causal, variant) -> TFLOP/s."""
    rows = {}
    for line in open(path):
        f = line.split()
        # dtype d N causal kernel... v ms TFLOP/s x-std
        if len(f) >= 9 and f[0] == "bf16" and f[3] in ("no", "yes"):
            rows[(int(f[1]), int(f[2]), f[3] == "yes", int(f[-4]))] = float(f[-2])
    return rows


def cudnn(path):
    """(d, N, causal) -> TFLOP/s of PyTorch's cuDNN backend."""
    rows = {}
    for line in open(path):
        m = re.search(r"sdpa cudnn .*d=(\d+)\s+N=(\d+)\s+causal=(\w+)\s+([\d.]+) ms\s+([\d.]+) TFLOP/s", line)
        if m:
            rows[(int(m[1]), int(m[2]), m[3] == "True")] = float(m[5])
    return rows


def print_table(bench, sdpa, variants, correct=None):
    tf, ref = ours(bench), cudnn(sdpa)
    best_note = "; best: fastest correct rung" if correct is not None else ""
    print("TFLOP/s, bf16, B x H x N = 131072, H = 8 (x: ratio to cuDNN in this run)" + best_note)
    print("%-5s %-3s %-3s " % ("N", "d", "cau") + " ".join("%14s" % ("v%d" % v) for v in variants) +
          " %6s%s" % ("cuDNN", " best" if correct is not None else ""))
    for causal in (False, True):
        for d in (64, 128):
            for n in (4096, 16384):
                c = ref.get((d, n, causal))
                cells = []
                for v in variants:
                    t = tf.get((d, n, causal, v))
                    cells.append("%14s" % ("-" if t is None else ("%.1f (%.2fx)" % (t, t / c) if c else "%.1f" % t)))
                line = "%-5d %-3d %-3s " % (n, d, "yes" if causal else "no") + " ".join(cells)
                line += " %6s" % ("-" if c is None else "%.1f" % c)
                if correct is not None:
                    got = [(tf[(d, n, causal, v)], v) for v in variants if v in correct and (d, n, causal, v) in tf]
                    line += " " + ("-" if not got else "v%d %.1f %.3fx" % (max(got)[1], max(got)[0],
                                                                         max(got)[0] / c if c else 0.0))
                print(line)


if __name__ == "__main__":
    variants = [int(v) for v in sys.argv[3].split()]
    correct = {int(v) for v in sys.argv[4].split()} if len(sys.argv) > 4 else None
    print_table(sys.argv[1], sys.argv[2], variants, correct)
