#!/usr/bin/env bash
# The default build under the kernel budget (gpu/README.md, "The kernel budget") against the
# build before it, in one device call: the checks of every default path (defaults_check.sh
# PHASE=checks: the four sanitizers, the [gpu] and [tc] tests), verify's lines through both
# binaries (verify_diff.sh), decode's times through both (bf16 unpaged and paged, float32: the
# kernels whose paging became a run-time switch and whose one-row case runs in the four-row
# kernel), and FP8 decode's variants 5 and 9, paged or not (both take a block table now).
# Usage, from the repository root on the GPU machine: bash tools/device/kernel_budget.sh BIN OUT
# BIN holds flashstep, flashstep_old (the build before), flashstep_gpu_tests, flashstep_tc_tests.
set -u
BIN=${1:?usage: kernel_budget.sh BIN OUT}
OUT=${2:?usage: kernel_budget.sh BIN OUT}
mkdir -p "$OUT"
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
S=()
PHASE=checks ROUNDS=1 timeout 300 bash tools/device/defaults_check.sh "$BIN" "$OUT/checks" > "$OUT/checks.log" 2>&1
S+=("defaults_check (sanitizers, [gpu], [tc]): rc=$? at $(el) s")
timeout 90 bash tools/device/verify_diff.sh "$BIN/flashstep" "$BIN/flashstep_old" "$OUT/vdiff" > "$OUT/vdiff.log" 2>&1
S+=("verify_diff: rc=$? at $(el) s")
for side in new old; do
  FS=$BIN/flashstep; [ $side = old ] && FS=$BIN/flashstep_old
  timeout 60 "$FS" bench-gpu --decode --dtype bf16 --d 128 --nk 65536 262144 --heads 32 256 --page-size 16 \
    --json-file "$OUT/decode_bf16_$side.json" > "$OUT/decode_bf16_$side.txt" 2>&1
  S+=("bench-gpu --decode bf16 ($side): rc=$? at $(el) s")
  timeout 40 "$FS" bench-gpu --decode --dtype fp32 --d 64 --nk 65536 --heads 32 \
    --json-file "$OUT/decode_fp32_$side.json" > "$OUT/decode_fp32_$side.txt" 2>&1
  S+=("bench-gpu --decode fp32 ($side): rc=$? at $(el) s")
done
for P in 0 16; do
  pg=(); [ $P -gt 0 ] && pg=(--page-size $P)
  timeout 90 "$BIN/flashstep" bench-gpu --decode --dtype fp8 --d 128 --nk 65536 262144 --heads 32 256 \
    --sweep-variants 5 9 --sweep-splits 1 8 32 "${pg[@]}" --json-file "$OUT/fp8_sweep_p$P.json" > "$OUT/fp8_sweep_p$P.txt" 2>&1
  S+=("bench-gpu --decode fp8 sweep 5, 9 page $P: rc=$? at $(el) s")
done
cd "$OUT" && tar czf all.tgz --exclude=all.tgz . ; cd - > /dev/null
echo "---- checks"; grep -vE "^ok " "$OUT/checks/summary.txt" | head -20; echo "ok lines: $(grep -c '^ok ' "$OUT/checks/summary.txt")"
echo "---- verify_diff"; cat "$OUT/vdiff/summary.txt"
echo "---- decode, d = 128 (ms: new / old)"
python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
def rows(name):
    try:
        return json.load(open(os.path.join(out, name)))["rows"]
    except Exception as e:
        return []
for kind in ("bf16", "fp32"):
    new, old = rows(f"decode_{kind}_new.json"), rows(f"decode_{kind}_old.json")
    ms = lambda r, k: r.get(k, {}).get("median_ms", float("nan")) if isinstance(r.get(k), dict) else float("nan")
    for a, b in zip(new, old):
        line = (f"{kind} Nk {a.get('nk')} BxH {a.get('heads')} d {a.get('d')}: decode {ms(a, 'decode'):.4f} / "
                f"{ms(b, 'decode'):.4f} = {ms(a, 'decode') / ms(b, 'decode'):.3f}")
        if "decode_paged" in a:
            line += f"; paged {ms(a, 'decode_paged'):.4f} / {ms(b, 'decode_paged'):.4f} = {ms(a, 'decode_paged') / ms(b, 'decode_paged'):.3f}"
        print(line)
for P in (0, 16):
    for r in rows(f"fp8_sweep_p{P}.json"):
        print(f"fp8 P={P} Nk {r['nk']} BxH {r['heads']} v{r['variant']} S {r['splits']}: {r['median_ms']:.4f} ms {r['kv_gbps']:.0f} GB/s")
PY
printf '%s\n' "${S[@]}"
