// What the tensor-core forward kernels share beyond their products (mma.sync in gpu/fa2_tc.cu,
// wgmma in gpu/fa2_wgmma.cu): the prologue that says which Q block, head and K/V blocks a
// thread block works on, and the epilogue's steps for one row of O_i and L_i.
#pragma once
#include "gpu/tc_ptx.cuh"

namespace flashstep::gpu::tc {

// One thread block's share of the grid: Q block i (BR rows from row0) of head h, the head's Q,
// K, V, the mask's row limits and how many BC-wide K/V blocks some row keeps (FA2fwd L6's loop
// bound: blocks past the last kept key are never loaded). by_head: the (heads, Tr) grid of
// block_index.
template <typename T, int D, int BR, int BC>
struct ForwardBlock {
  int i;
  int64_t h;
  const T *Qh, *Kh, *Vh;
  int row0;
  RowLimit lim;
  int n_blocks;

  __device__ __forceinline__ ForwardBlock(const TcParams& p, bool by_head) {
    const int Tr = (p.nq + BR - 1) / BR;
    const BlockIndex blk = block_index(p, Tr, by_head);
    i = blk.i;
    h = blk.h;
    Qh = static_cast<const T*>(p.Q) + h * p.nq * D;
    Kh = static_cast<const T*>(p.K) + h * p.nk * D;
    Vh = static_cast<const T*>(p.V) + h * p.nk * D;
    row0 = i * BR;
    lim = row_limit(p, h);
    n_blocks = kept_blocks(lim, row0, BR, p.nq, BC);
  }
};

// l_i of a row held by a quad of lanes, each of which summed its own columns
// (online_softmax_row). Every lane of the warp must call it, for rows past Nq too.
__device__ __forceinline__ float quad_row_sum(float l) {
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  return l;
}

// FA2fwd L12's factor diag(l_i)^-1: a row that keeps no key has l_i = 0, and its O is 0.
__device__ __forceinline__ float row_inverse(float l) { return l > 0.0f ? 1.0f / l : 0.0f; }

// FA2fwd L13 and L15 for row r of head h: L_i = m_i + log(l_i) in natural log (m is in units of
// tau log2(e) S), -inf for a row that keeps no key; written by the quad's first lane.
__device__ __forceinline__ void write_row_lse(const TcParams& p, int64_t h, int r, float m, float l, int t4) {
  if (t4 == 0) p.lse[h * p.nq + r] = l > 0.0f ? (m + __log2f(l)) * kLn2 : -INFINITY;
}

}  // namespace flashstep::gpu::tc
