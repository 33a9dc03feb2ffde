# How the PyTorch comparison scripts (sdpa_bench.py, sdpa_decode_bench.py, sdpa_bwd_bench.py)
# time a call: the way flashstep times its kernels (CUDA events, 3 warm-ups continued until they
# have taken FLASHSTEP_WARMUP_MS of GPU time, default 25, as gpu/common.cuh's median_ms; the
# median of 20 runs, in ms).
import os
import sys
import statistics

import torch


def torch_dtype(name):
    """bf16 or fp16, as the scripts' --dtype names them."""
    return torch.bfloat16 if name == "bf16" else torch.float16


def warmup_ms():
    """FLASHSTEP_WARMUP_MS (default 25) as milliseconds >= 0; anything else stops with one line."""
    text = os.environ.get("FLASHSTEP_WARMUP_MS", "25")
    try:
        # as strtod with nothing after the number (gpu/warmup_env.h): no spaces, no underscores
        ms = float(text) if text == text.strip() and "_" not in text else -1.0
    except ValueError:
        ms = -1.0
    if not ms >= 0.0 or ms == float("inf"):
        sys.exit("error: FLASHSTEP_WARMUP_MS must be a number of milliseconds >= 0, not '%s'" % text)
    return ms


def median_ms(fn, warmup=3, reps=20, batch=1):
    """fn() timed by CUDA events after `warmup` untimed calls (and more until they have taken
    FLASHSTEP_WARMUP_MS of GPU time): the median of `reps` samples, each
    `batch` calls back to back between one pair of events, per call, in ms. With batch 1 the
    Python dispatch before each launch counts in the time (the GPU idles until the kernel
    arrives); with a few calls queued it runs under the previous call's kernels."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    warm_ms = warmup_ms() if warmup > 0 else 0.0
    warm, k = 0.0, 0
    while warm < warm_ms and k < 100000:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        warm += s.elapsed_time(e)
        k += 1
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
