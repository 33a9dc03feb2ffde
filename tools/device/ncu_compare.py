# Nsight Compute's raw pages (ncu --page raw) of several kernels side by side: the first launch in
# each file, the metrics that say where a tensor-core kernel's time goes (the tensor pipe, the
# other pipes, issue, warp stalls, the launch shape, L2). Used by ncu_bwd.sh.
#   python3 tools/device/ncu_compare.py NAME=raw.txt [NAME=raw.txt ...]
import re
import sys

ROWS = [
    ("time (ms)", "gpu__time_duration.sum"),
    ("grid", "launch__grid_size"),
    ("threads", "launch__block_size"),
    ("registers", "launch__registers_per_thread"),
    ("shared KiB", "launch__shared_mem_per_block_dynamic"),
    ("warps per scheduler", "smsp__warps_active.avg.per_cycle_active"),
    ("tensor pipe % (elapsed)", "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.avg.pct_of_peak_sustained_elapsed"),
    ("issue active %", "smsp__issue_active.avg.pct_of_peak_sustained_active"),
    ("instructions", "smsp__inst_executed.sum"),
    ("alu pipe %", "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active"),
    ("fma pipe %", "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"),
    ("xu pipe %", "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"),
    ("lsu pipe %", "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"),
    ("uniform pipe %", "sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_active"),
    ("L2 throughput %", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("L1 throughput % (active)", "l1tex__throughput.avg.pct_of_peak_sustained_active"),
    ("L1 lsu wavefronts %", "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed"),
    ("L1 bank reads %", "l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed"),
    ("L1 bank writes %", "l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed"),
    ("mio to registers %", "sm__mio2rf_writeback_active.avg.pct_of_peak_sustained_elapsed"),
]
# Shared-memory counts (MemoryWorkloadAnalysis_Tables): every .sum metric of shared memory's wavefronts,
# instructions and bank conflicts a file holds, in the order first seen.
SHARED = re.compile(r"(wavefronts_mem_shared|op_shared|bank_conflicts_pipe_lsu_mem_shared)[^.]*\.sum$")
STALLS = ["wait", "barrier", "long_scoreboard", "short_scoreboard", "gmma", "math_pipe_throttle", "mio_throttle",
          "lg_throttle", "dispatch_stall", "not_selected", "branch_resolving"]


def first_launch(path):
    name, metrics, ms_done = None, {}, set()
    for line in open(path, errors="replace"):
        m = re.match(r"  (\S.*) \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\), Context", line)
        if m:
            if name:
                break
            name = m.group(1)[:110]
            continue
        if name:
            parts = line.split()
            if len(parts) >= 2:
                metrics.setdefault(parts[0], parts[-1])
                if len(parts) >= 3 and parts[0] == "gpu__time_duration.sum":  # ncu picks ns, us, ms or s
                    scale = {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0, "s": 1e3}
                    if parts[1] in scale and parts[0] not in ms_done:
                        metrics[parts[0]] = f"{float(parts[-1].replace(',', '')) * scale[parts[1]]:.4g}"
                        ms_done.add(parts[0])
    return name, metrics


cols = [(a.split("=", 1)[0], *first_launch(a.split("=", 1)[1])) for a in sys.argv[1:]]
w = 34
print("".ljust(w) + "".join(f"{c[0]:>16s}" for c in cols))
shared = [k for c in cols for k in c[2] if SHARED.search(k)]
shared = [(k.split("__", 1)[-1][:w - 1], k) for i, k in enumerate(shared) if k not in shared[:i]]
for label, key in ROWS + [(f"stall {s} /issue", f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio") for s in STALLS] + shared:
    print(label.ljust(w) + "".join(f"{c[2].get(key, '-'):>16s}" for c in cols))
for c in cols:
    print(f"{c[0]}: {c[1]}")
