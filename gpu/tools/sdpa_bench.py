# PyTorch's scaled_dot_product_attention, timed the way flashstep_tc_bench times the ladder
# (CUDA events, 3 warm-ups and at least 25 ms of them, median of 20; B x H x N = 131072 rows, H = 8; FLOPs 4 B H N^2 d,
# causal counting the kept N(N+1)/2 scores): the side-by-side for docs/tensor-cores.md.
#   python3 gpu/tools/sdpa_bench.py [--causal] [--dtype bf16|fp16] [--backend flash|cudnn]
import argparse

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from sdpa_timing import median_ms, torch_dtype

ap = argparse.ArgumentParser()
ap.add_argument("--causal", action="store_true")
ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
ap.add_argument("--backend", default="flash", choices=["flash", "cudnn"])
ap.add_argument("--ns", default="1024,4096,16384")
ap.add_argument("--ds", default="64,128")
ap.add_argument("--back-to-back", type=int, default=10, help="calls back to back per timed sample (sdpa_timing.median_ms; 10: Python's launch latency hidden, as bench-gpu times flashstep)")
ap.add_argument("--rows", type=int, default=131072, help="B x H x N, H = 8 (bench-gpu's --rows)")
a = ap.parse_args()
if a.rows < 8:
    ap.error("--rows must be at least 8 (H = 8)")
dt = torch_dtype(a.dtype)
backend = SDPBackend.FLASH_ATTENTION if a.backend == "flash" else SDPBackend.CUDNN_ATTENTION
print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {a.back_to_back} calls back to back per timed sample")
for d in map(int, a.ds.split(",")):
    for n in map(int, a.ns.split(",")):
        H = 8
        B = max(1, a.rows // (n * H))
        q, k, v = (torch.randn(B, H, n, d, device="cuda", dtype=dt) for _ in range(3))
        with sdpa_kernel(backend):
            ms = median_ms(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=a.causal), batch=a.back_to_back)
        pairs = n * (n + 1) / 2 if a.causal else n * n
        print(f"sdpa {a.backend:5s} {a.dtype} d={d:<4d} N={n:<6d} causal={a.causal!s:5s} "
              f"{ms:8.3f} ms {4 * B * H * pairs * d / ms * 1e-9:7.1f} TFLOP/s")
