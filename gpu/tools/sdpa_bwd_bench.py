# PyTorch's scaled_dot_product_attention forward, backward and forward + backward on exactly the
# shapes of `flashstep bench-gpu --backward --tensor-cores` (B = 16, H = 16, N = 4096 and 16384,
# d = 64 and 128, causal or not), timed as flashstep times them: CUDA events, 3 warm-ups, median
# of 20. FLOPs: forward 4 B H N^2 d, backward 2.5 x that, forward + backward 3.5 x (causal: the
# kept N(N+1)/2 scores). The backward is torch.autograd.grad of the saved graph with a fixed dO
# (no accumulation into .grad); forward + backward runs both, graph built each time.
#   python3 gpu/tools/sdpa_bwd_bench.py [--dtype bf16|fp16] [--backends flash,cudnn] [--causal both]
import argparse

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import sdpa_timing

ap = argparse.ArgumentParser()
ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
ap.add_argument("--backends", default="flash,cudnn")
ap.add_argument("--ns", default="4096,16384")
ap.add_argument("--ds", default="64,128")
ap.add_argument("--causal", default="both", choices=["no", "yes", "both"])
ap.add_argument("--batch", type=int, default=16)
ap.add_argument("--heads", type=int, default=16)
ap.add_argument("--warmup", type=int, default=3)
ap.add_argument("--reps", type=int, default=20)
ap.add_argument("--back-to-back", type=int, default=10, help="calls back to back per timed sample (sdpa_timing.median_ms)")
a = ap.parse_args()
dt = sdpa_timing.torch_dtype(a.dtype)
backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {a.dtype}, {a.back_to_back} calls back to back, B = {a.batch}, H = {a.heads}, "
      f"{a.warmup} warm-ups, median of {a.reps}")


def median_ms(fn):
    return sdpa_timing.median_ms(fn, a.warmup, a.reps, a.back_to_back)


causals = {"no": [False], "yes": [True], "both": [False, True]}[a.causal]
print(f"{'backend':7s} {'d':>4s} {'N':>6s} {'causal':6s} | {'fwd ms':>8s} {'bwd ms':>8s} {'f+b ms':>8s} | "
      f"{'fwd TF':>7s} {'bwd TF':>7s} {'f+b TF':>7s}")
for name in a.backends.split(","):
    for causal in causals:
        for d in map(int, a.ds.split(",")):
            for n in map(int, a.ns.split(",")):
                shape = (a.batch, a.heads, n, d)
                q, k, v = (torch.randn(shape, device="cuda", dtype=dt, requires_grad=True) for _ in range(3))
                dout = torch.randn(shape, device="cuda", dtype=dt)
                sdpa = torch.nn.functional.scaled_dot_product_attention
                try:
                    with sdpa_kernel(backends[name]):
                        with torch.no_grad():
                            fwd = median_ms(lambda: sdpa(q, k, v, is_causal=causal))
                        out = sdpa(q, k, v, is_causal=causal)
                        bwd = median_ms(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True))
                        del out
                        both = median_ms(lambda: torch.autograd.grad(sdpa(q, k, v, is_causal=causal), (q, k, v), dout))
                except RuntimeError as e:  # a backend that does not take this shape
                    print(f"{name:7s} {d:4d} {n:6d} {causal!s:6s} | not run: {str(e).splitlines()[0][:100]}")
                    continue
                pairs = n * (n + 1) / 2 if causal else n * n
                f = 4 * a.batch * a.heads * pairs * d
                print(f"{name:7s} {d:4d} {n:6d} {causal!s:6s} | {fwd:8.3f} {bwd:8.3f} {both:8.3f} | "
                      f"{f / fwd * 1e-9:7.1f} {2.5 * f / bwd * 1e-9:7.1f} {3.5 * f / both * 1e-9:7.1f}", flush=True)
                del q, k, v, dout
                torch.cuda.empty_cache()
