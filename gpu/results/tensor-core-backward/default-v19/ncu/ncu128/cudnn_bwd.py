import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(2, 16, 4096, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(2):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        torch.autograd.grad(o, (q, k, v), torch.randn_like(o))
torch.cuda.synchronize()
