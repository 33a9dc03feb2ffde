// What a tensor-core backward kernel knows about its thread block (head h, K/V block j starting
// at key col0): the head's inputs and dQ accumulator, its mask's row limits and the Q blocks its
// loop over i visits; the loads of L2_i, D_i; and the host's launch of a backward kernel. Used by
// gpu/fa2_bwd_wgmma.cu. gpu/fa2_bwd_tc.cu's mma.sync rungs (measured, at 255 registers) keep their
// own copy of the first two: with bwd_head, ptxas spilled 4-12 bytes more in every one of them.
#pragma once
#include "gpu/bwd_tc_launch.h"
#include "gpu/tc_ptx.cuh"

namespace flashstep::gpu::tc {

template <typename T>
struct BwdHead {
  const T *Q, *dO, *K, *V;  // (N, d) row-major, this head's
  const float *L2, *D;      // rows_pad each
  float* dQ;                // the float32 accumulator
  RowLimit lim;
  int Tr;       // Q blocks of BR rows
  int i_first;  // the first Q block with a row that keeps a key of block j; Tr when none does
};

template <typename T, int D, int BR>
__device__ __forceinline__ BwdHead<T> bwd_head(const TcBwdParams& p, int64_t h, int col0) {
  const int64_t q0 = h * p.fwd.nq * D, k0 = h * p.fwd.nk * D;
  BwdHead<T> b;
  b.Q = static_cast<const T*>(p.fwd.Q) + q0;
  b.dO = static_cast<const T*>(p.dO) + q0;
  b.K = static_cast<const T*>(p.fwd.K) + k0;
  b.V = static_cast<const T*>(p.fwd.V) + k0;
  b.L2 = p.L2 + h * p.rows_pad;
  b.D = p.D + h * p.rows_pad;
  b.dQ = p.dq_acc + q0;
  b.lim = row_limit(p.fwd, h);
  b.Tr = (p.fwd.nq + BR - 1) / BR;
  // Rows keep more keys as r grows: the first row that keeps key col0 is col0 - off (causal).
  b.i_first = b.Tr;
  if (col0 <= b.lim.hi(p.fwd.nq - 1)) b.i_first = b.lim.causal ? max(0, col0 - b.lim.off) / BR : 0;
  return b;
}

// L2_i and D_i of Q block i (BR floats each, from buffers padded to whole Q blocks, so 16-byte
// aligned) into shared memory at dst (L2_i) and dst + 4 BR (D_i), one cp.async chunk per thread.
template <int BR, int THREADS, typename T>
__device__ __forceinline__ void load_stats(uint32_t dst, const BwdHead<T>& b, int i, int tid) {
  constexpr int CHUNKS = BR / 4;
  for (int e = tid; e < 2 * CHUNKS; e += THREADS) {
    const float* src = (e < CHUNKS ? b.L2 : b.D) + i * BR + (e % CHUNKS) * 4;
    cp_async16(dst + uint32_t((e / CHUNKS) * BR * 4 + (e % CHUNKS) * 16), src, 16);
  }
}

// Host side: one launch of kernel<bf16> or kernel<fp16> (by p.fwd.elem) on `grid`, opted in to
// `smem` bytes of shared memory once per type (opted[0] for bf16, opted[1] for fp16).
using BwdKernel = void (*)(const TcBwdParams);
inline void launch_bwd_kernel(BwdKernel bf16, BwdKernel fp16, const TcBwdParams& p, dim3 grid, int threads,
                              int64_t smem, int64_t (&opted)[2]) {
  const int t = p.fwd.elem == Elem::bf16 ? 0 : 1;
  const BwdKernel kernel = t == 0 ? bf16 : fp16;
  opt_in_shared(kernel, smem, opted[t]);
  kernel<<<grid, threads, smem>>>(p);
  CUDA_CHECK_LAUNCH();
}

}  // namespace flashstep::gpu::tc
