// The forward's launch parameters (gpu/tc_launch.h) from its device buffers and the host API's
// shape and options (gpu/tensor_core.h): one place for the forward's host code
// (gpu/tensor_core.cpp) and the backward's (gpu/backward_tc.cpp), which runs the same forward.
#pragma once
#include "gpu/tc_launch.h"
#include "gpu/tensor_core.h"

namespace flashstep::gpu {

inline tc::TcParams make_tc_params(const void* Q, const void* K, const void* V, void* O, float* lse,
                                   const int* kv_lens, const Shape& s, float scale, const TcOptions& o) {
  tc::TcParams p;
  p.Q = Q;
  p.K = K;
  p.V = V;
  p.O = O;
  p.lse = lse;
  p.heads = int(s.heads());
  p.nq = int(s.nq);
  p.nk = int(s.nk);
  p.d = int(s.d);
  p.scale = scale;
  p.elem = o.dtype == Dtype::fp16 ? tc::Elem::fp16 : tc::Elem::bf16;
  p.mask.causal = o.causal;
  p.mask.kv_len = int(o.kv_len);
  p.mask.kv_lens = kv_lens;  // device array, one per batch entry, or null
  p.mask.heads_per_batch = int(s.H);
  return p;
}

}  // namespace flashstep::gpu
