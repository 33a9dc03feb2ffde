// Standard attention's softmax between the two cuBLAS products (the tensor-core path's baseline, the way
// PyTorch's math path runs it): S = tau Q K^T was written to HBM in the 16-bit input type by
// cuBLAS; this kernel reads each row of S, writes P = softmax(S) in the same type and lse in
// float32; cuBLAS then computes O = P V. S and P are (heads * Nq) x Nk in HBM: the N^2 traffic
// FlashAttention avoids.
//
// One 128-thread block per row; two passes over the row (the second mostly from L2): an online
// max and sum, then P. 16-byte loads and stores when Nk is a multiple of 8. Masked keys (causal
// bottom-right, key padding) get weight 0; a row that keeps none gets P = 0 and lse = -inf.
#include "gpu/common.cuh"
#include "gpu/tc_launch.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace flashstep::gpu::tc {

namespace {

constexpr int kThreads = 128;

__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
template <typename T>
__device__ __forceinline__ T from_f(float x);
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }

// (m, l) <- the running max and sum of the union of two sets of scores.
__device__ __forceinline__ void merge(float& m, float& l, float m2, float l2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;
  l = l * __expf(m - mn) + l2 * __expf(m2 - mn);
  m = mn;
}

// Groups of W consecutive elements (W = 8: one 16-byte access; W = 1 for any Nk).
template <typename T, int W>
struct Group {
  T v[W];
};

template <typename T, int W>
__global__ void __launch_bounds__(kThreads) softmax_rows_kernel(const T* __restrict__ S, T* __restrict__ P,
                                                                float* __restrict__ lse, int nq, int nk,
                                                                TcMask mask) {
  const int64_t row = blockIdx.x;
  const int64_t h = row / nq;
  const int r = int(row % nq);
  int kv = nk;
  if (mask.kv_lens) kv = min(kv, mask.kv_lens[h / mask.heads_per_batch]);
  else if (mask.kv_len >= 0) kv = min(kv, mask.kv_len);
  const int keep = mask.causal ? min(kv, r + nk - nq + 1) : kv;  // columns [0, keep) are kept
  const auto* src = reinterpret_cast<const Group<T, W>*>(S + row * nk);
  auto* dst = reinterpret_cast<Group<T, W>*>(P + row * nk);
  const int groups = nk / W;

  // Pass 1: this thread's max and sum over its kept columns, then the block's.
  float m = -INFINITY, l = 0.0f;
  for (int gi = threadIdx.x; gi * W < keep; gi += kThreads) {
    const Group<T, W> x = src[gi];
    float gm = -INFINITY;
#pragma unroll
    for (int e = 0; e < W; ++e)
      if (gi * W + e < keep) gm = fmaxf(gm, to_f(x.v[e]));
    float gl = 0.0f;
#pragma unroll
    for (int e = 0; e < W; ++e)
      if (gi * W + e < keep) gl += __expf(to_f(x.v[e]) - gm);
    merge(m, l, gm, gl);
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, off), l2 = __shfl_xor_sync(0xffffffffu, l, off);
    merge(m, l, m2, l2);
  }
  __shared__ float sm[kThreads / 32], sl[kThreads / 32];
  if (threadIdx.x % 32 == 0) {
    sm[threadIdx.x / 32] = m;
    sl[threadIdx.x / 32] = l;
  }
  __syncthreads();
  m = sm[0];
  l = sl[0];
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) merge(m, l, sm[w], sl[w]);

  // Pass 2: P = exp(S - m) / l, rounded to the input type; masked columns 0.
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  for (int gi = threadIdx.x; gi < groups; gi += kThreads) {
    Group<T, W> y;
    if (gi * W < keep) {
      const Group<T, W> x = src[gi];
#pragma unroll
      for (int e = 0; e < W; ++e)
        y.v[e] = from_f<T>(gi * W + e < keep ? __expf(to_f(x.v[e]) - m) * inv : 0.0f);
    } else {
#pragma unroll
      for (int e = 0; e < W; ++e) y.v[e] = from_f<T>(0.0f);
    }
    dst[gi] = y;
  }
  if (threadIdx.x == 0) lse[row] = l > 0.0f ? m + logf(l) : -INFINITY;
}

template <typename T>
void launch(const void* S, void* P, float* lse, int64_t rows, int nq, int nk, const TcMask& mask) {
  const T* s = static_cast<const T*>(S);
  T* o = static_cast<T*>(P);
  if (nk % 8 == 0) softmax_rows_kernel<T, 8><<<unsigned(rows), kThreads>>>(s, o, lse, nq, nk, mask);
  else softmax_rows_kernel<T, 1><<<unsigned(rows), kThreads>>>(s, o, lse, nq, nk, mask);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void softmax_rows_tc(const void* S, void* P, float* lse, int64_t rows, int nq, int nk, Elem elem,
                     const TcMask& mask) {
  if (rows <= 0) return;
  if (elem == Elem::bf16) launch<__nv_bfloat16>(S, P, lse, rows, nq, nk, mask);
  else launch<__half>(S, P, lse, rows, nq, nk, mask);
}

}  // namespace flashstep::gpu::tc
