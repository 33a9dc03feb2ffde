# How the PyTorch comparison scripts (sdpa_bench.py, sdpa_decode_bench.py, sdpa_bwd_bench.py)
# time a call: the way flashstep times its kernels (CUDA events, 3 warm-ups, the median of 20
# runs, in ms).
import statistics

import torch


def torch_dtype(name):
    """bf16 or fp16, as the scripts' --dtype names them."""
    return torch.bfloat16 if name == "bf16" else torch.float16


def median_ms(fn, warmup=3, reps=20):
    """fn() timed by CUDA events after `warmup` untimed calls: the median of `reps` runs, in ms."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)
