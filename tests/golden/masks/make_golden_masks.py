#!/usr/bin/env python3
"""Golden outputs for masked attention, computed by PyTorch in float64.

The mask is built here from the definitions in docs/algorithm.md (bottom-right alignment for
Nq != Nk, causal, sliding window [a - left, a + right] around the aligned column a = r + Nk - Nq,
-1 meaning unbounded, key padding keeping keys c < kv_len), not from core/mask.h, so that the
engine's mask code is checked against an independent oracle. Rows that keep no key have O = 0 and
lse = -inf. The rows that keep some key are cross-checked with scaled_dot_product_attention.

Usage: python3 make_golden_masks.py OUT_DIR   (writes CASE.{q,k,v,o,lse}.npy and manifest.json)
"""
import json
import sys

import numpy as np
import torch

CASES = [
    # name, nq, nk, d, causal, window_left, window_right, kv_len
    ("win_nq96_nk160_d32", 96, 160, 32, False, 16, 8, -1),
    ("win_causal_nq130_nk77_d40", 130, 77, 40, True, 20, -1, -1),
    ("kvlen_nq100_nk120_d32", 100, 120, 32, False, -1, -1, 70),
    ("kvlen_causal_win_nq64_nk100_d16", 64, 100, 16, True, 10, -1, 50),
    ("winright_kvlen_nq80_nk72_d24", 80, 72, 24, False, -1, 5, 61),
]


def keep_mask(nq, nk, causal, left, right, kv_len):
    r = torch.arange(nq, dtype=torch.int64).unsqueeze(1)
    c = torch.arange(nk, dtype=torch.int64).unsqueeze(0)
    a = r + (nk - nq)  # the key column that query row r lines up with
    keep = torch.ones(nq, nk, dtype=torch.bool)
    if causal:
        keep &= c <= a
    if left >= 0:
        keep &= c >= a - left
    if right >= 0:
        keep &= c <= a + right
    if kv_len >= 0:
        keep &= c < kv_len
    return keep


def main():
    out = sys.argv[1]
    gen = torch.Generator().manual_seed(20261202)
    manifest = {"generator": f"PyTorch {torch.__version__}, float64 math from the mask definitions, "
                             "cross-checked with scaled_dot_product_attention", "cases": []}
    for name, nq, nk, d, causal, left, right, kv_len in CASES:
        q = torch.randn(nq, d, generator=gen, dtype=torch.float32)
        k = torch.randn(nk, d, generator=gen, dtype=torch.float32)
        v = torch.randn(nk, d, generator=gen, dtype=torch.float32)
        scale = 1.0 / d ** 0.5
        keep = keep_mask(nq, nk, causal, left, right, kv_len)
        s = scale * (q.double() @ k.double().T)
        s = s.masked_fill(~keep, float("-inf"))
        lse = torch.logsumexp(s, dim=1)  # -inf for a row that keeps no key
        rows = keep.any(dim=1)
        p = torch.zeros_like(s)
        p[rows] = torch.exp(s[rows] - lse[rows].unsqueeze(1))
        o = p @ v.double()
        ref = torch.nn.functional.scaled_dot_product_attention(
            q.double()[rows].unsqueeze(0), k.double().unsqueeze(0), v.double().unsqueeze(0),
            attn_mask=keep[rows].unsqueeze(0), scale=scale)[0]
        err = (ref - o[rows]).abs().max().item()
        assert err < 1e-12, (name, err)
        for tag, t in (("q", q), ("k", k), ("v", v), ("o", o), ("lse", lse)):
            np.save(f"{out}/{name}.{tag}.npy", t.numpy())
        manifest["cases"].append({"name": name, "nq": nq, "nk": nk, "d": d, "causal": causal,
                                  "window_left": left, "window_right": right, "kv_len": kv_len,
                                  "scale": scale, "rows_without_keys": int((~rows).sum()),
                                  "sdpa_max_abs_diff": err})
        print(f"{name}: rows without keys {int((~rows).sum())}, sdpa diff {err:.2e}")
    with open(f"{out}/manifest.json", "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
