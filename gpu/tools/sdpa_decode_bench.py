# PyTorch's scaled_dot_product_attention at decoding shapes, for bench-gpu --decode: Nq = 1
# against Nk keys, B x H heads (H = 8), every backend PyTorch offers (flash, efficient, cudnn,
# math), timed as flashstep times (CUDA events, 3 warm-ups and at least 25 ms of them, median of 20); the fastest backend
# per shape is what bench-gpu --decode --sdpa FILE sets beside flashstep's decode.
#   python3 gpu/tools/sdpa_decode_bench.py [--dtype bf16|fp16] [--json FILE]
import argparse
import json

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from sdpa_timing import median_ms, torch_dtype

ap = argparse.ArgumentParser()
ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
ap.add_argument("--nks", default="4096,16384,65536,262144")
ap.add_argument("--ds", default="64,128")
ap.add_argument("--back-to-back", type=int, default=10, help="calls back to back per timed sample (sdpa_timing.median_ms; 10: Python's launch latency hidden, as bench-gpu times flashstep)")
ap.add_argument("--heads", default="32,256")
ap.add_argument("--json", default="")
a = ap.parse_args()
dt = torch_dtype(a.dtype)
backends = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}
print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {a.dtype}, Nq = 1, {a.back_to_back} calls back to back per timed sample")
rows = []
for d in map(int, a.ds.split(",")):
    for heads in map(int, a.heads.split(",")):
        for nk in map(int, a.nks.split(",")):
            H = 8
            B = max(1, heads // H)
            q = torch.randn(B, H, 1, d, device="cuda", dtype=dt)
            k = torch.randn(B, H, nk, d, device="cuda", dtype=dt)
            v = torch.randn(B, H, nk, d, device="cuda", dtype=dt)
            row = {"nk": nk, "d": d, "heads": B * H, "dtype": a.dtype, "backends": {}}
            for name, be in backends.items():
                try:
                    with sdpa_kernel(be):
                        row["backends"][name] = median_ms(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v), batch=a.back_to_back)
                except Exception as ex:  # a backend that does not take the shape
                    row["backends"][name] = None
                    row.setdefault("errors", {})[name] = str(ex).splitlines()[0][:200]
                torch.cuda.empty_cache()
            ok = {n: t for n, t in row["backends"].items() if t is not None}
            row["best_backend"] = min(ok, key=ok.get) if ok else None
            row["best_ms"] = ok[row["best_backend"]] if ok else None
            kv = 2 * B * H * nk * d * q.element_size()
            times = " ".join(f"{n}={t:.4f}" if t is not None else f"{n}=n/a" for n, t in row["backends"].items())
            best = f"{row['best_ms']:.4f} ms ({row['best_backend']}, {kv / row['best_ms'] * 1e-6:.0f} GB/s)" if ok else "none"
            print(f"sdpa d={d:<4d} BxH={B * H:<4d} Nk={nk:<7d} best {best}  [{times}]", flush=True)
            rows.append(row)
            del q, k, v
            torch.cuda.empty_cache()
if a.json:
    with open(a.json, "w") as fh:
        json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows}, fh, indent=1)
