#!/usr/bin/env bash
# One device call to choose flash-decoding's default split-kernel variant and S: PyTorch's SDPA
# at the benchmark's shapes (gpu/tools/sdpa_decode_bench.py), then bench-gpu --decode's variant x S
# sweep on the same shapes (bf16, Nq = 1, d = 64 and 128, B x H = 32 and 256, Nk = 16384 ..
# 262144), and a summary per shape: the default's figure, the three best (variant, S) and their
# ratio to PyTorch's fastest backend. Usage (repository root): bash gpu/tools/decode_sweep_device.sh BIN OUT
set -u
BIN=${1:?usage: decode_sweep_device.sh BIN OUT}
OUT=${2:?usage: decode_sweep_device.sh BIN OUT}
mkdir -p "$OUT"
NKS=${NKS:-16384 65536 262144}
VARIANTS=${VARIANTS:-3 4 5}
T0=$(date +%s)
timeout 60 python3 gpu/tools/sdpa_decode_bench.py --ds 64,128 --nks "$(echo $NKS | tr ' ' ,)" --json "$OUT/sdpa.json" \
  > "$OUT/sdpa.txt" 2>&1
echo "sdpa_decode_bench.py: rc=$? ($(($(date +%s) - T0)) s)" > "$OUT/summary.txt"
timeout 120 "$BIN/flashstep" bench-gpu --decode --d 64 128 --nk $NKS --sweep-variants $VARIANTS \
  --sweep-splits 1 2 4 8 16 32 64 --sdpa "$OUT/sdpa.json" --json-file "$OUT/sweep.json" > "$OUT/sweep.txt" 2>&1
echo "bench-gpu --decode sweep: rc=$? ($(($(date +%s) - T0)) s)" >> "$OUT/summary.txt"
python3 - "$OUT/sweep.json" <<'PY' >> "$OUT/summary.txt" 2>&1
import json, sys
rows = json.load(open(sys.argv[1]))["sweep"]
shapes = sorted({(r["d"], r["heads"], r["nk"]) for r in rows})
print("d BxH Nk | default v3 S* ms %copy xsdpa | best three (variant/S: ms %copy xsdpa)")
for sh in shapes:
    rs = [r for r in rows if (r["d"], r["heads"], r["nk"]) == sh]
    dflt = [r for r in rs if r["variant"] == 3 and r["splits"] == r["default_splits"]]
    f = lambda r: f"{r['median_ms']:.4f} {100 * r['fraction_of_copy']:.0f}% {r.get('speedup_vs_sdpa', 0):.2f}x"
    best = sorted(rs, key=lambda r: r["median_ms"])[:3]
    print(f"{sh[0]} {sh[1]} {sh[2]} | S={dflt[0]['splits'] if dflt else '-'} {f(dflt[0]) if dflt else '-'} | "
          + " ; ".join(f"v{r['variant']}/S{r['splits']}: {f(r)}" for r in best))
PY
cat "$OUT/summary.txt"
