// Algorithm 0 L2 for the standard-attention baseline: P = softmax(S) row by row, S and P in
// global memory (HBM), plus each row's logsumexp for the lse output.
//
// Variants:
//   1  row_softmax_v1_kernel: one 256-thread block per row. Pass 1 reads S once and keeps a
//      running (max, sum) per thread with the online-softmax update of core/online_softmax.h,
//      merged across threads the same way; pass 2 reads S again and writes P. (The simulator
//      counts one read of S and one write of P; the second read mostly hits L1/L2.)
//      Algorithm 2's additions: masked scores (core/mask.h's rule, via KeyMask) get zero
//      weight, a row that keeps no key gets P = 0 and lse = -inf; with dropout the written P
//      holds the dropped and rescaled weights (the CPU drops them as it loads P for Alg0 L3;
//      O = P V is the same).
#include "core/online_softmax.h"
#include "gpu/common.cuh"
#include "gpu/kernels.h"
#include "gpu/register_tile.cuh"

#include <cmath>

namespace flashstep::gpu {

namespace {

// Merges (m2, l2) into (m, l): l = e^(m - m_new) l + e^(m2 - m_new) l2.
__device__ __forceinline__ void merge_stats(float& m, float& l, float m2, float l2) {
  const float mn = merged_max(m, m2);
  l = merged_sum(rescale_factor(m, mn), l, rescale_factor(m2, mn), l2);
  m = mn;
}

__global__ void __launch_bounds__(256) row_softmax_v1_kernel(const float* __restrict__ S,
                                                             float* __restrict__ P,
                                                             float* __restrict__ lse, int cols,
                                                             int nq, Extras x) {
  const int64_t row = blockIdx.x, h = row / nq;
  const int q = int(row % nq);  // the query row within its head
  const float* s = S + row * cols;
  float* out = P + row * cols;
  // Kept keys of this row: [lo, hi] (all of them without a mask).
  int64_t lo = 0, hi = cols - 1;
  if (x.mask.any()) {
    const KeyMask mk = x.mask.for_batch(h / x.heads_per_batch);
    lo = mk.lo(q);
    hi = mk.hi(q, cols);
  }
  float m = -INFINITY, l = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    if (c >= lo && c <= hi) merge_stats(m, l, s[c], 1.0f);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
    const float l2 = __shfl_xor_sync(0xffffffffu, l, off);
    merge_stats(m, l, m2, l2);
  }
  __shared__ float wm[8], wl[8];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    wm[warp] = m;
    wl[warp] = l;
  }
  __syncthreads();
  m = wm[0];
  l = wl[0];
  for (int w = 1; w < int(blockDim.x / 32); ++w) merge_stats(m, l, wm[w], wl[w]);
  // A fully masked row (m = -inf, l = 0) gets P = 0 (softmax_weight), not NaN.
  const float inv_l = l == 0.0f ? 0.0f : 1.0f / l;
  // P[c]: zero where masked. With dropout, a separate loop (one uniform branch per row): kept
  // inside the softmax loop, Philox's state made ptxas spill.
  auto weight = [&](int c) { return (c < lo || c > hi) ? 0.0f : softmax_weight(s[c], m) * inv_l; };
  if (x.dropout > 0.0f) {
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = dropout_weight(weight(c), x, h, q, c);
  } else {
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = weight(c);
  }
  if (threadIdx.x == 0) lse[row] = row_logsumexp(m, l);
}

}  // namespace

void row_softmax(const float* S, float* P, float* lse, int64_t rows, int cols, int nq,
                 const Extras& x) {
  row_softmax_v1_kernel<<<unsigned(rows), 256>>>(S, P, lse, cols, nq, x);
  CUDA_CHECK_LAUNCH();
}

}  // namespace flashstep::gpu
