// Device helpers shared by the tensor-core kernels (gpu/fa2_tc.cu's mma.sync ladder and
// gpu/fa2_wgmma.cu's Hopper rungs): cp.async, 16-bit packing, exp2, the mask's row limit, the
// online softmax of one row and the loads before the loop over j.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

#include "gpu/common.cuh"
#include "gpu/tc_launch.h"
#if defined(FLASHSTEP_LADDER)
#include "gpu/ladder/poly_exp2.h"  // POLY > 0: the ladder's polynomial-exp2 rungs
#endif

namespace flashstep::gpu::tc {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return uint32_t(__cvta_generic_to_shared(p));
}
// 16 bytes global -> shared; src_bytes = 0 reads nothing and writes zeros.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Two floats rounded to nearest even into one register of two 16-bit values (lo first).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// 2^x by the special-function unit (ex2.approx: about 2 ulp; 2^-inf = +0).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// The last key column row r keeps (bottom-right causal, key padding); -1 when none.
struct RowLimit {
  int kv, off;
  bool causal;
  __device__ int hi(int r) const { return causal ? min(kv - 1, r + off) : kv - 1; }
};

// Head h's row limits: bottom-right causal and key padding (one length, or one per batch entry).
__device__ __forceinline__ RowLimit row_limit(const TcParams& p, int64_t h) {
  RowLimit lim{p.nk, p.nk - p.nq, p.mask.causal};
  if (p.mask.kv_lens) lim.kv = min(lim.kv, p.mask.kv_lens[h / p.mask.heads_per_batch]);
  else if (p.mask.kv_len >= 0) lim.kv = min(lim.kv, p.mask.kv_len);
  return lim;
}

// This block's Q block i and head h. Causal grids run the longest Q blocks first; with by_head
// the grid is (heads, Tr), so every head's longest block is scheduled before any head's second
// longest (v11's order), else (Tr, heads).
struct BlockIndex {
  int i;
  int64_t h;
};
__device__ __forceinline__ BlockIndex block_index(const TcParams& p, int Tr, bool by_head) {
  const int bi = by_head ? int(blockIdx.y) : int(blockIdx.x);
  return BlockIndex{p.mask.causal ? Tr - 1 - bi : bi, by_head ? int64_t(blockIdx.x) : int64_t(blockIdx.y)};
}

// Algorithm 2's block skipping: how many Bc-wide K/V blocks some row of [row0, row0 + Br) keeps;
// blocks past the last key any row keeps are never loaded.
__device__ __forceinline__ int kept_blocks(const RowLimit& lim, int row0, int Br, int nq, int Bc) {
  const int last_hi = lim.hi(min(row0 + Br, nq) - 1);
  return last_hi < 0 ? 0 : last_hi / Bc + 1;
}

// FA2fwd L9 for one row of S_ij held by a quad of lanes, NV scores in this lane (at(k), k < NV):
// m_ij = max(m_i, rowmax(S_ij)), P~_ij = exp(S_ij - m_ij) in place, l_ij = e^(m_i - m_ij) l_i +
// rowsum(P~_ij), with m in units of tau log2(e) S. l stays this lane's partial sum (the quad's
// sum is taken once, after L11). Returns alpha = e^(m_i - m_ij), the rescale of O_i's row.
// ILP > 1 keeps ILP independent partial maxima and sums (score k goes to partial k mod ILP,
// folded pairwise at the end): the same maximum, the row sum in another order, and chains of
// NV / ILP dependent instructions instead of NV, for warps that have little else to hide them.
// POLY > 0 takes every POLY-th score's exp2 (k mod POLY = POLY - 1) from gpu/ladder/poly_exp2.h's
// polynomial on the float32 pipes instead of the special-function unit (16 a clock per SM): in a
// ladder build only (the defaults have POLY = 0).
template <int NV, int ILP = 1, int POLY = 0, class At>
__device__ __forceinline__ float online_softmax_row(At at, float& m_i, float& l_i, float scale_log2) {
  static_assert(ILP >= 1 && NV % ILP == 0 && (ILP & (ILP - 1)) == 0, "ILP: a power of two dividing NV");
#if !defined(FLASHSTEP_LADDER)
  static_assert(POLY == 0, "the polynomial exp2 is a ladder rung: configure with -DFLASHSTEP_LADDER=ON");
#endif
  float mxs[ILP];
#pragma unroll
  for (int r = 0; r < ILP; ++r) mxs[r] = -INFINITY;
#pragma unroll
  for (int k = 0; k < NV; ++k) mxs[k % ILP] = fmaxf(mxs[k % ILP], at(k));
#pragma unroll
  for (int w = ILP / 2; w > 0; w /= 2)
#pragma unroll
    for (int r = 0; r < w; ++r) mxs[r] = fmaxf(mxs[r], mxs[r + w]);
  float mx = mxs[0];
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
  const float m_new = fmaxf(m_i, mx * scale_log2);
  // A row with nothing kept so far has m_new = -inf: subtract 0 so exp2 gives 0, not NaN.
  const float m_use = m_new == -INFINITY ? 0.0f : m_new;
  const float alpha = fast_exp2(m_i - m_use);
  float sums[ILP];
#pragma unroll
  for (int r = 0; r < ILP; ++r) sums[r] = 0.0f;
#pragma unroll
  for (int k = 0; k < NV; ++k) {
    float& x = at(k);
    const float arg = fmaf(x, scale_log2, -m_use);
#if defined(FLASHSTEP_LADDER)
    x = POLY > 0 && k % (POLY > 0 ? POLY : 1) == POLY - 1 ? poly_exp2(arg) : fast_exp2(arg);
#else
    x = fast_exp2(arg);
#endif
    sums[k % ILP] += x;
  }
#pragma unroll
  for (int w = ILP / 2; w > 0; w /= 2)
#pragma unroll
    for (int r = 0; r < w; ++r) sums[r] += sums[r + w];
  l_i = alpha * l_i + sums[0];
  m_i = m_new;
  return alpha;
}

// FA2fwd L4 (Q_i, one cp.async group), then L7 for the first STAGES - 1 blocks, one group each.
template <int STAGES, class LoadQ, class LoadKV>
__device__ __forceinline__ void issue_first_loads(LoadQ load_q, LoadKV load_kv, int n_blocks) {
  load_q();
  cp_async_commit();
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < n_blocks) load_kv(s);
    cp_async_commit();  // empty groups keep the count uniform
  }
}

// Host side: one launch of a tensor-core kernel, bf16 or fp16 by p.elem, on block_index's grid
// ((heads, Tr) when by_head, else (Tr, heads)), opted in to `smem` bytes of shared memory once
// per kernel (opted[0] for bf16, opted[1] for fp16).
template <class KernelBf16, class KernelFp16>
void launch_tc_kernel(KernelBf16 bf16, KernelFp16 fp16, const TcParams& p, int Br, int threads,
                      int64_t smem, bool by_head, int64_t (&opted)[2]) {
  const unsigned Tr = unsigned((p.nq + Br - 1) / Br);
  const dim3 grid = by_head ? dim3(unsigned(p.heads), Tr) : dim3(Tr, unsigned(p.heads));
  if (p.elem == Elem::bf16) {
    opt_in_shared(bf16, smem, opted[0]);
    bf16<<<grid, threads, smem>>>(p);
  } else {
    opt_in_shared(fp16, smem, opted[1]);
    fp16<<<grid, threads, smem>>>(p);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace flashstep::gpu::tc
