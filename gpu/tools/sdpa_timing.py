# How the PyTorch comparison scripts (sdpa_bench.py, sdpa_decode_bench.py, sdpa_bwd_bench.py)
# time a call: the way flashstep times its kernels (CUDA events, 3 warm-ups, the median of 20
# runs, in ms).
import statistics

import torch


def torch_dtype(name):
    """bf16 or fp16, as the scripts' --dtype names them."""
    return torch.bfloat16 if name == "bf16" else torch.float16


def median_ms(fn, warmup=3, reps=20, batch=1):
    """fn() timed by CUDA events after `warmup` untimed calls: the median of `reps` samples, each
    `batch` calls back to back between one pair of events, per call, in ms. With batch 1 the
    Python dispatch before each launch counts in the time (the GPU idles until the kernel
    arrives); with a few calls queued it runs under the previous call's kernels."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(batch):
            fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / batch)
    return statistics.median(ts)
