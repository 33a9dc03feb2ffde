#!/usr/bin/env bash
# Measured DRAM bytes against the simulator (docs/l2-model.md, "Measured").
#
# For each point: Nsight Compute's dram__bytes_read.sum / dram__bytes_write.sum and
# gpu__time_duration.sum, summed over the attention kernels of one run on B = 1, H heads (input
# fills and storage conversions left out by name), next to what `flashstep run` predicts for
# the same problem: the paper's HBM bytes, and the DRAM bytes of the L2 model (--gpu h200
# --heads H --ncu: the L2 emptied before each kernel, as ncu's default cache control does).
# ncu runs with --clock-control none (the clocks as found) and its default replay (kernel
# replay; caches flushed before each kernel).
#
# Points (POINTS, space separated):
#   fp32:N:d  standard, fa1 and fa2 through `flashstep gpu` on float32 .npy inputs (fresh
#             random values), --M $SRAM (default 128KiB). fa1 is one launch per j: to keep a
#             call short, ncu profiles Alg1 L2's initialisation and the first FA1_SAMPLE launches
#             (default 16; 0 = all) and the launches' bytes are scaled to all Tc of them (every
#             launch moves the same tiles; the JSON keeps the sampled launches' min and max).
#   tc:N:d    bf16 on the tensor-core path through flashstep_tc_bench (one forward each, device
#             random inputs): FlashAttention-2 (variant TC_VARIANT, default 13: wgmma, Br 128, Bc 64) and
#             standard attention through cuBLAS (standard_tc: S and P stored in bf16). The model
#             runs fa2 on the kernel's Br, Bc (--br 128 --bc 64 --M 192KiB) and standard, --dtype bf16.
#   diag:N:d  fa1 (sampled as above) and fa2 in float32 with L2 metrics beside the DRAM ones, for
#             the write discrepancy (docs/l2-model.md): sectors that came over the fabric between
#             the two L2 partitions (lts__t_sectors_srcunit_ltcfabric.sum) and all L2 read and
#             write sectors (lts__t_sectors_op_{read,write}.sum); no model run.
# Default: what the first measurement left out (N = 16384 in float32, bf16 on tensor cores), then
# the diagnostics at N = 4096, d = 64 (last: the first to be skipped when time runs out).
# SHAPES="N:d ..." (the old spelling) means fp32:N:d for each.
#
# The model runs (CPU) start first, in parallel, each under MODEL_TIMEOUT seconds; the ncu runs
# follow one by one, each under NCU_TIMEOUT, and none starts after BUDGET seconds (the whole
# call stays within about BUDGET + NCU_TIMEOUT, 7.5 minutes by default). A failure is logged to $OUT/ncu_dram.log and put in
# the point's "error"; the others go on. Writes OUT_JSON (default $OUT/dram.json: the format the
# desktop app loads with `flashstep gui --dram`, app/gui/l2_view.h) and $OUT/dram_table.txt, and
# prints the comparison table last.
#   usage (on the GPU machine, from the repo root, binaries carried):
#     tools/device/ncu_dram.sh [OUT_JSON]
#   env: FLASHSTEP (build-gpu/app/flashstep), TC_BENCH (flashstep_tc_bench beside it), HEADS (32),
#        SRAM (128KiB), POINTS, FA1_SAMPLE (16), MODEL_TIMEOUT (400), NCU_TIMEOUT (120),
#        BUDGET (330)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dev_libs
dev_gpu_env > /dev/null
F=${FLASHSTEP:-build-gpu/app/flashstep}
TCB=${TC_BENCH:-$(dirname "$F")/flashstep_tc_bench}
OUT=${OUT:-/tmp/flashstep-device}
JSON=${1:-$OUT/dram.json}
H=${HEADS:-32}
M=${SRAM:-128KiB}
FA1_SAMPLE=${FA1_SAMPLE:-16}
MODEL_TIMEOUT=${MODEL_TIMEOUT:-400}
NCU_TIMEOUT=${NCU_TIMEOUT:-120}
BUDGET=${BUDGET:-330}
if [ -n "${SHAPES:-}" ]; then POINTS=""; for s in $SHAPES; do POINTS="$POINTS fp32:$s"; done; fi
POINTS=${POINTS:-"fp32:16384:64 fp32:16384:128 tc:4096:64 tc:4096:128 tc:16384:64 tc:16384:128 diag:4096:64"}
METRICS=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum
DIAG_METRICS=$METRICS,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum
# flashstep and flashstep_tc_bench link cuBLAS dynamically: the device has it with its toolkit.
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
LOG=$OUT/ncu_dram.log
: > "$LOG"
log() { echo "$(date +%T) $*" | tee -a "$LOG" >&2; }
t0=$(date +%s)

# One line per measurement: tag kind schedule kernel n d dtype M(elements) csv model-file.
MANIFEST=$WORK/manifest.txt
: > "$MANIFEST"
elements() { case $1 in *KiB) echo $(( ${1%KiB} * 256 ));; *) echo "$1";; esac; }

# The model for every point, in the background (one CPU core each).
model() {  # tag, then `flashstep run` arguments
  local tag=$1; shift
  ( timeout "$MODEL_TIMEOUT" "$F" run "$@" --gpu h200 --heads "$H" --ncu > "$WORK/model_$tag.txt" 2>&1
    echo "rc=$?" >> "$WORK/model_$tag.txt" ) &
}
for p in $POINTS; do
  IFS=: read -r kind n d <<< "$p"
  if [ "$kind" = fp32 ]; then
    for s in standard fa1 fa2; do
      model "${s}_${n}_${d}" --schedule "$s" --n "$n" --d "$d" --M "$M"
      echo "${s}_${n}_${d} fp32 $s $s $n $d fp32 $(elements "$M") $OUT/ncu_${s}_n${n}_d${d}.csv $WORK/model_${s}_${n}_${d}.txt" >> "$MANIFEST"
    done
  elif [ "$kind" = tc ]; then
    model "fa2tc_${n}_${d}" --schedule fa2 --dtype bf16 --n "$n" --d "$d" --M 192KiB --br 128 --bc 64
    model "stdtc_${n}_${d}" --schedule standard --dtype bf16 --n "$n" --d "$d" --M "$M"
    echo "fa2tc_${n}_${d} tc fa2 fa2_tc $n $d bf16 $(elements 192KiB) $OUT/ncu_tc_n${n}_d${d}.csv $WORK/model_fa2tc_${n}_${d}.txt" >> "$MANIFEST"
    echo "stdtc_${n}_${d} tc standard standard_tc $n $d bf16 $(elements "$M") $OUT/ncu_tc_n${n}_d${d}.csv $WORK/model_stdtc_${n}_${d}.txt" >> "$MANIFEST"
  elif [ "$kind" = diag ]; then
    for s in fa1 fa2; do
      echo "diag_${s}_${n}_${d} diag $s $s $n $d fp32 $(elements "$M") $OUT/ncu_diag_${s}_n${n}_d${d}.csv -" >> "$MANIFEST"
    done
  else
    log "FAIL point $p: kind must be fp32 or tc"
  fi
done

# The measurements, one at a time.
ncu_run() {  # metrics, csv, then the command
  local metrics=$1 csv=$2; shift 2
  if [ $(( $(date +%s) - t0 )) -gt "$BUDGET" ]; then log "SKIP (over BUDGET=$BUDGET s): $(basename "$csv")"; return; fi
  timeout "$NCU_TIMEOUT" ncu --clock-control none --csv --metrics "$metrics" "$@" > "$csv" 2> "${csv%.csv}.err"
  local rc=$?
  if [ $rc -ne 0 ]; then log "FAIL rc=$rc: ncu $* ($(tail -1 "${csv%.csv}.err"))"; else log "ok: $(basename "$csv")"; fi
}
inputs() {  # N d: float32 .npy inputs (1, H, N, d) in $WORK
  python3 - "$WORK" "$1" "$2" "$H" <<'EOF'
import sys, numpy as np
work, n, d, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(n * 1000 + d)
for name in "qkv":  # fresh random inputs, never zeros
    np.save(f"{work}/{name}.npy", rng.standard_normal((1, h, n, d), dtype=np.float32))
EOF
}
gpu_run() {  # metrics csv schedule: ncu over `flashstep gpu` on the inputs in $WORK
  local filter=()
  [ "$3" = fa1 ] && [ "$FA1_SAMPLE" -gt 0 ] && filter=(-k regex:fa1 -c $((FA1_SAMPLE + 1)))
  ncu_run "$1" "$2" ${filter[@]+"${filter[@]}"} "$F" gpu --schedule "$3" \
    --q "$WORK/q.npy" --k "$WORK/k.npy" --v "$WORK/v.npy" --M "$M"
}
for p in $POINTS; do
  IFS=: read -r kind n d <<< "$p"
  if [ "$kind" = fp32 ] || [ "$kind" = diag ]; then
    if ! inputs "$n" "$d"; then log "FAIL inputs for $p"; continue; fi
    if [ "$kind" = fp32 ]; then
      for s in standard fa1 fa2; do gpu_run "$METRICS" "$OUT/ncu_${s}_n${n}_d${d}.csv" "$s"; done
    else
      for s in fa1 fa2; do gpu_run "$DIAG_METRICS" "$OUT/ncu_diag_${s}_n${n}_d${d}.csv" "$s"; done
    fi
  elif [ "$kind" = tc ]; then
    ncu_run "$METRICS" "$OUT/ncu_tc_n${n}_d${d}.csv" "$TCB" --no-verify --dtypes bf16 --ds "$d" --ns "$n" \
      --rows $((H * n)) --H "$H" --reps 1 --warmup 0 --variants "${TC_VARIANT:-13}"
  fi
done
log "measurements done ($(( $(date +%s) - t0 )) s); waiting for the model runs"
wait
log "model runs done ($(( $(date +%s) - t0 )) s)"

python3 - "$JSON" "$H" "$M" "$FA1_SAMPLE" "$MANIFEST" "$OUT/dram_table.txt" "$LOG" <<'EOF'
import sys, csv, json, re, math, os
out, heads, sram, sample, manifest, table_path, log_path = sys.argv[1:8]
heads, sample = int(heads), int(sample)
skip = re.compile(r"fill|storage|dropout_mask")  # not attention: input fills, conversions
units = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1, "usecond": 1e3,
         "msecond": 1e6, "second": 1e9}
def log(msg):
    print(msg, file=sys.stderr)
    open(log_path, "a").write(msg + "\n")

def kernels(path):
    """[(name, read, write, ns)] in launch order, fills and conversions left out."""
    if not os.path.exists(path):
        raise RuntimeError(f"no ncu output {path}")
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]
    ks = {}
    for r in csv.DictReader(lines):
        if skip.search(r["Kernel Name"]):
            continue
        k = ks.setdefault(int(r["ID"]), [r["Kernel Name"], 0.0, 0.0, 0.0, {}])
        v = float(r["Metric Value"].replace(",", "")) * units.get(r["Metric Unit"], 1)
        col = {"dram__bytes_read.sum": 1, "dram__bytes_write.sum": 2, "gpu__time_duration.sum": 3}.get(r["Metric Name"])
        if col: k[col] += v
        else: k[4][r["Metric Name"]] = k[4].get(r["Metric Name"], 0.0) + v  # diag: L2 sectors
    if not ks:
        raise RuntimeError(f"no attention kernel in {path}")
    return [tuple(ks[i]) for i in sorted(ks)]

def measure(kind, sched, kernel, n, d, m_elems, path):
    ks = kernels(path)
    note = {}
    if kind == "tc":  # one forward of standard_tc (cuBLAS GEMM, softmax, GEMM), then fa2_tc
        first = next((i for i, k in enumerate(ks) if "fa2_tc" in k[0] or "fa2_wgmma" in k[0]), None)
        if first is None:
            raise RuntimeError("no fa2_tc kernel in " + path)
        ks = ks[first:first + 1] if kernel == "fa2_tc" else ks[:first]
        if not ks:
            raise RuntimeError(f"no {kernel} kernel in {path}")
    elif sched == "fa1" and sample > 0 and len(ks) < 1 + math.ceil(n / math.ceil(m_elems / (4 * d))):
        # Alg1 L2's init, then launches j = 0 .. sample-1 of Tc = ceil(N / Bc), Bc = ceil(M / 4d)
        tc = math.ceil(n / math.ceil(m_elems / (4 * d)))
        init = [k for k in ks if "init" in k[0]]
        launches = [k for k in ks if "init" not in k[0]]
        if len(init) != 1 or not launches:
            raise RuntimeError(f"fa1: expected 1 init kernel and launches in {path}, got {len(init)}, {len(launches)}")
        scale = tc / len(launches)
        note = {"sampled_launches": len(launches), "launches": tc,
                "launch_read_bytes_min": min(k[1] for k in launches), "launch_read_bytes_max": max(k[1] for k in launches),
                "launch_write_bytes_min": min(k[2] for k in launches), "launch_write_bytes_max": max(k[2] for k in launches)}
        total = [init[0][c] + scale * sum(k[c] for k in launches) for c in (1, 2, 3)]
        return {"dram_read_bytes": total[0], "dram_write_bytes": total[1], "kernel_ms": total[2] / 1e6}, 1 + tc, note
    return ({"dram_read_bytes": sum(k[1] for k in ks), "dram_write_bytes": sum(k[2] for k in ks),
             "kernel_ms": sum(k[3] for k in ks) / 1e6}, len(ks), note)

def gb(text, key):
    m = re.search(key, text)
    return float(m.group(1)) * 1e9 if m else None

def model(path):
    text = open(path).read() if os.path.exists(path) else ""
    if "rc=0" not in text:
        raise RuntimeError("model run failed: " + " | ".join(text.strip().splitlines()[-2:]))
    return {
        "hbm_read_bytes": gb(text, r"heads\s+DRAM read [\d.e+-]+ GB, write [\d.e+-]+ GB; HBM read ([\d.e+-]+) GB"),
        "hbm_write_bytes": gb(text, r"HBM read [\d.e+-]+ GB, write ([\d.e+-]+) GB"),
        "l2_dram_read_bytes": gb(text, r"heads\s+DRAM read ([\d.e+-]+) GB"),
        "l2_dram_write_bytes": gb(text, r"heads\s+DRAM read [\d.e+-]+ GB, write ([\d.e+-]+) GB"),
        "ncu_dram_read_bytes": gb(text, r"as ncu\s+DRAM read ([\d.e+-]+) GB"),
        "ncu_dram_write_bytes": gb(text, r"as ncu\s+DRAM read [\d.e+-]+ GB, write ([\d.e+-]+) GB"),
    }

points, diags = [], []
for line in open(manifest):
    tag, kind, sched, kernel, n, d, dtype, m_elems, path, model_path = line.split()
    n, d, m_elems = int(n), int(d), int(m_elems)
    if kind == "diag":  # sums over the profiled kernels (fa1: sampled, not scaled)
        try:
            ks = kernels(path)
            sums = {"dram_read_bytes": sum(k[1] for k in ks), "dram_write_bytes": sum(k[2] for k in ks)}
            for k in ks:
                for name, v in k[4].items(): sums[name] = sums.get(name, 0.0) + v
            diags.append({"schedule": sched, "n": n, "d": d, "heads": heads, "kernels_profiled": len(ks), "sums": sums})
        except Exception as e:
            diags.append({"schedule": sched, "n": n, "d": d, "error": str(e)})
            log(f"FAIL diagnostics {tag}: {e}")
        continue
    p = {"schedule": sched, "kernel": kernel, "n": n, "d": d, "heads": heads, "dtype": dtype, "M": m_elems}
    try:
        p["simulated"] = model(model_path)
    except Exception as e:
        p["model_error"] = str(e)
        log(f"FAIL model {tag}: {e}")
    try:
        p["measured"], p["kernels"], note = measure(kind, sched, kernel, n, d, m_elems, path)
        p.update(note)
    except Exception as e:
        p["error"] = str(e)
        log(f"FAIL measurement {tag}: {e}")
    points.append(p)
json.dump({"gpu": "h200", "method": "ncu --clock-control none, dram__bytes_{read,write}.sum, "
           "attention kernels only", "points": points, "diagnostics": diags}, open(out, "w"), indent=1)

rows = [f"{'schedule':9} {'kernel':11} {'dtype':5} {'N':>6} {'d':>4} {'kern':>4} | {'read meas':>10} {'model':>10} "
        f"{'HBM':>10} {'m/meas':>6} | {'write meas':>10} {'model':>10} {'HBM':>10} {'m/meas':>6} | ms"]
f = lambda x: f"{x / 1e9:10.4f}" if x is not None else "         ?"
r = lambda a, b: f"{a / b:6.2f}" if a is not None and b else "     ?"
for p in points:
    m, s = p.get("measured"), p.get("simulated", {})
    head = f"{p['schedule']:9} {p['kernel']:11} {p['dtype']:5} {p['n']:6} {p['d']:4}"
    if m is None:
        rows.append(f"{head}    - | measurement failed: {p.get('error', '?')[:80]}")
        continue
    rows.append(f"{head} {p['kernels']:4} | {f(m['dram_read_bytes'])} {f(s.get('ncu_dram_read_bytes'))} "
                f"{f(s.get('hbm_read_bytes'))} {r(s.get('ncu_dram_read_bytes'), m['dram_read_bytes'])} | "
                f"{f(m['dram_write_bytes'])} {f(s.get('ncu_dram_write_bytes'))} {f(s.get('hbm_write_bytes'))} "
                f"{r(s.get('ncu_dram_write_bytes'), m['dram_write_bytes'])} | {m['kernel_ms']:.3f}"
                + (f" (fa1: {p['sampled_launches']} of {p['launches']} launches measured)" if "sampled_launches" in p else ""))
rows.append("GB = 1e9 B, every head; model = the L2 model counted as ncu counts (--ncu); m/meas = model / measured")
for g in diags:  # 32-byte sectors, over the profiled kernels
    if "error" in g:
        rows.append(f"diag {g['schedule']} N={g['n']} d={g['d']}: failed: {g['error'][:80]}")
        continue
    u = g["sums"]
    sec = lambda name: f"{u[name] * 32 / 1e9:.4f} GB" if name in u else "?"
    rows.append(f"diag {g['schedule']} N={g['n']} d={g['d']} ({g['kernels_profiled']} kernels): DRAM read "
                f"{u['dram_read_bytes'] / 1e9:.4f} GB, write {u['dram_write_bytes'] / 1e9:.4f} GB; L2 sectors "
                f"read {sec('lts__t_sectors_op_read.sum')}, write {sec('lts__t_sectors_op_write.sum')}, "
                f"over the partition fabric {sec('lts__t_sectors_srcunit_ltcfabric.sum')}")
open(table_path, "w").write("\n".join(rows) + "\n")
EOF
log "done ($(( $(date +%s) - t0 )) s)"
cat "$OUT/dram_table.txt" 2>/dev/null || echo "no table: see $LOG"
