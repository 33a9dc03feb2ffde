#!/usr/bin/env bash
# Alternating rounds of two backward configurations in one device call, for promoting a rung to
# the default (gpu/ladder/NOTES.md, "How a rung is added"): ROUNDS times, bench-gpu --backward
# --tensor-cores --variant A then --variant B (bf16, B = 16, H = 16, N = 4096 and 16384, d = D,
# causal and not, BTB calls back to back), then PyTorch's cuDNN backward once on the same shapes
# (gpu/tools/sdpa_bwd_bench.py, the same BTB). The table last: each side's median TFLOP/s, B over
# A per round, B over cuDNN, and each side's forward + backward over cuDNN's.
# Usage (repository root, GPU machine): A=9 B=12 D=128 ROUNDS=3 bash tools/device/bwd_rounds.sh BIN OUT
# (BIN: a build holding both configurations, e.g. a ladder build; about 5 minutes.)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_setup "$0" "$@"
A=${A:-9} B=${B:-12} D=${D:-128} ROUNDS=${ROUNDS:-3} BTB=${BTB:-3}
for r in $(seq 1 "$ROUNDS"); do
  for v in $A $B; do
    : > "$OUT/bench_r${r}_v$v.txt"
    for c in "" "--causal"; do
      timeout 90 "$FS" bench-gpu --backward --tensor-cores --dtype bf16 --n 4096 16384 --d "$D" --no-fp32 \
        --back-to-back "$BTB" --variant "$v" $c >> "$OUT/bench_r${r}_v$v.txt" 2>&1
      say "round $r v$v ${c:-non-causal}: rc=$?"
    done
  done
done
timeout 200 python3 gpu/tools/sdpa_bwd_bench.py --dtype bf16 --backends cudnn --ns 4096,16384 --ds "$D" --causal both \
  --back-to-back "$BTB" > "$OUT/sdpa.txt" 2>&1
say "cuDNN: rc=$?; total $(($(date +%s) - T0)) s"
python3 - "$OUT" "$A" "$B" "$D" "$ROUNDS" <<'PY' | tee "$OUT/table.txt"
import statistics, sys
sys.path.insert(0, "tools/device")
import bwd_tables
out, a, b, d, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
runs = {(r, v): bwd_tables.ours(f"{out}/bench_r{r}_v{v}.txt") for r in range(1, rounds + 1) for v in (a, b)}
torch = bwd_tables.torch(f"{out}/sdpa.txt")
print(f"backward TFLOP/s, bf16, B = 16, H = 16, d = {d}; v{a} and v{b} alternating, {rounds} rounds; cuDNN once")
print("   N causal | v%-3d median | v%-3d median | v%d / v%d per round (median) | v%d / cuDNN (median) | cuDNN"
      " | f+b v%d / cuDNN | f+b v%d / cuDNN" % (a, b, b, a, b, a, b))
for causal in (False, True):
    for n in (4096, 16384):
        ta = [runs[(r, a)].get((n, d, causal, a)) for r in range(1, rounds + 1)]
        tb = [runs[(r, b)].get((n, d, causal, b)) for r in range(1, rounds + 1)]
        if any(t is None for t in ta + tb):
            print(f"{n:6d} {'yes' if causal else 'no ':3s} | missing data")
            continue
        ba, bb = [t[1] for t in ta], [t[1] for t in tb]
        ratios = [y / x for x, y in zip(ba, bb)]
        cu = torch.get(("cudnn", n, d, causal))
        vs = f"{statistics.median(bb) / cu[1]:.3f}x" if cu else "-"
        # forward + backward (the default forward's time plus each side's backward), median over the rounds
        fb = [f"{statistics.median(t[2] for t in ts) / cu[2]:.3f}x" if cu else "-" for ts in (ta, tb)]
        print(f"{n:6d} {'yes' if causal else 'no ':6s} | {statistics.median(ba):11.1f} | {statistics.median(bb):11.1f} | "
              + " ".join(f"{x:.3f}" for x in ratios) + f" ({statistics.median(ratios):.3f}) | {vs:>8s} | "
              + (f"{cu[1]:.1f}" if cu else "-") + f" | {fb[0]:>8s} | {fb[1]:>8s}")
PY
printf '%s\n' "${S[@]}" >> "$OUT/table.txt"
