# PyTorch's cuDNN attention backward, twice, at B = 2, H = 16, N = 4096, bf16, non-causal, head
# dimension argv[1]: the launches tools/device/ncu_bwd.sh and ncu_bwd_source.sh profile beside
# flashstep's backward.
#   python3 tools/device/cudnn_bwd_once.py D
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

d = int(sys.argv[1])
q, k, v = (torch.randn(2, 16, 4096, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(2):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        torch.autograd.grad(o, (q, k, v), torch.randn_like(o))
torch.cuda.synchronize()
