# Six launches of PyTorch's cuDNN attention forward (bf16, non-causal, H = 8), for Nsight Compute to
# profile one of (tools/device/fwd_heads.sh, fwd_counters.sh). Usage: python3 cudnn_fwd_launch.py
# ROWS N D, where ROWS = B x H x N.
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

rows, n, d = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
if rows < 8 * n:
    sys.exit(f"cudnn_fwd_launch.py: ROWS ({rows}) must be at least 8 N ({8 * n})")
q, k, v = (torch.randn(rows // (n * 8), 8, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(6):
        torch.nn.functional.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
