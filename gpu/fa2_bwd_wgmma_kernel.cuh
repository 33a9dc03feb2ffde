// The kernel template of FlashAttention-2's backward on warpgroup MMA (sm_90a), shared by
// gpu/fa2_bwd_wgmma.cu (the default, configuration 9) and gpu/ladder/bwd_wgmma_rungs.cu (the
// ladder's other wgmma rungs, 5-8, 10 and 12). Everything is in an anonymous namespace: each
// including file gets its own copies of what it instantiates.
//
// Variants 5-7 of the backward ladder (gpu/fa2_bwd_tc.cu lists v1-v4): FlashAttention-2's
// backward (Dao 2023, Algorithm 2) on warpgroup MMA (wgmma.mma_async, sm_90a only; this file is
// compiled for 90a alone, with gpu/fa2_wgmma.cu). FlashAttention-3's backward structure (arXiv
// 2407.08608, appendix B) as far as it goes without warp specialisation: all five products on
// wgmma (v5), operands read by the tensor cores from shared memory through matrix descriptors,
// no ldmatrix. v6 is v5 with dQ's product on mma.sync as v2 does it (ldmatrix.trans of dS^T and
// K_j): the one product whose wgmma form (both operands MN-major) no earlier rung has run.
// v7 is v5 with FlashAttention-3's dQ accumulation: tau dQ_i goes to one of two shared-memory
// slabs laid out as its rows are in HBM, and one thread has the bulk copy engine add it to the
// float32 accumulator (cp.reduce.async.bulk .add.f32), in place of 256 threads' red.v4 (below, at
// write_dq_bulk); at d = 128 no third __syncthreads per Q block. v8 (d = 64) is v7 with the two
// warpgroups apart between the loop's first barrier and the next: a named barrier per warpgroup
// for its own rows of dS^T (all its K-split dQ product reads) and one bulk add per warpgroup.
// v9 is v5 with the grid's K/V blocks fastest, v10 v9 with each block's Q-block loop rotated
// (WgBwdConfig::ORDER). v12 is v9 with the matrix descriptors built once (WgBwdDescOnce):
// each wgmma's descriptor one add from its buffer's, the same products in the same order.
//
// One thread block per (head, K/V block j), Bc = 128 keys, two warpgroups: warpgroup w owns keys
// 64 w .. 64 w + 63 of K_j, V_j and their rows of dK~_j, dV~_j (float32 registers, m64 x d
// accumulators) for the whole loop over i. Per Q block i (Br = 64 queries; FA2b L8), with keys
// as the MMA's rows (M = 64 keys per warpgroup), as v1-v4:
//   S_ij^T = K_j Q_i^T        ss: A = K_j (K-major), B = Q_i (K-major), m64n64, D / 16 steps
//   P_ij^T = exp2(S^T tau log2 e - L2_i)  in the S registers; masked keys 0 (FA2b L11)
//   dP_ij^T = V_j dO_i^T      ss: A = V_j, B = dO_i, both K-major (FA2b L13)
//   dV~_j += P_ij^T dO_i      rs: A = P^T rounded to the type in registers (the accumulator
//                             layout is wgmma's register A fragment, as P~ in the forward's v13),
//                             B = dO_i MN-major (as it arrives, queries x d) (FA2b L12)
//   dS_ij^T = P^T o (dP^T - D_i)  float32 P, rounded once to the type (FA2b L14)
//   dK~_j += dS_ij^T Q_i      rs: A = dS^T in registers, B = Q_i MN-major (FA2b L16)
//   dS_ij^T -> shared memory (keys x queries, 128-byte swizzled rows); barrier;
//   dQ_i += tau dS_ij K_j     ss with both operands MN-major (imm-trans-a = imm-trans-b = 1, which
//                             PTX allows for 16-bit types): A = dS, read from the stored dS^T
//                             (queries contiguous), B = K_j (d contiguous) (FA2b L15).
//     d = 128: warpgroup w computes d columns 64 w .. over all 128 keys;
//     d = 64:  warpgroup w computes all 64 columns over its own 64 keys (a K split: a 32-column
//              MN-major operand would be half a 128-byte swizzle row, which we do not rely on).
//   The float32 dQ partials go to shared memory (d = 64: one slab per warpgroup, summed on the
//   way out); barrier; all 256 threads add tau dQ_i to the float32 accumulator in HBM with
//   red.global.add.v4.f32, one row's 16 consecutive bytes per thread (coalesced; other K/V blocks
//   add to the same rows at the same time, Dao-AILab/flash-attention#815). dQ is converted to the
//   type afterwards (gpu/backward_tc.cpp), as for v1-v4.
// FA2b L18: dK_j = tau dK~_j, dV_j = dV~_j rounded once to the type and written.
//
// Shared memory: every 16-bit tile is 64-column panels of 128-byte rows, 16-byte chunk c of row r
// at c xor (r mod 8) (wgmma's 128B swizzle; panels 1024-byte aligned, 8-row groups 1024 bytes
// apart). Q_i, dO_i, L2_i, D_i are double-buffered by cp.async; writes by cp.async and by st.shared
// reach the tensor cores' async proxy through fence.proxy.async before the barrier. Three barriers
// per i: Q_i landed (and block i - 1 done), dS^T complete, dQ partials complete.
//
// Masks (causal bottom-right, key padding) and block skipping as v1-v4: block j starts at the
// first Q block with a row that keeps one of its keys; a warpgroup whose 64 keys no row of Q_i
// keeps skips its products (wgmma is issued per warpgroup) and writes zeros for its rows of dS^T;
// dQ's k steps over keys no row of Q_i keeps are not issued; only warps with a key some row masks
// pay the per-element test. Rows past Nq are zero-filled with L2 = +inf (P = 0); keys past Nk are
// zero-filled and masked.
#pragma once
#include "gpu/bwd_tc_block.cuh"
#include "gpu/bwd_tc_launch.h"
#include "gpu/common.cuh"
#include "gpu/tc_mma.cuh"
#include "gpu/tc_ptx.cuh"
#include "gpu/wgmma_ptx.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

namespace {

// Byte offset of 16-byte chunk c (of D / 8) of row r in a ROWS-row tile stored as 64-column panels.
template <int ROWS>
__device__ __forceinline__ uint32_t panel_chunk(int r, int c) {
  return uint32_t((c >> 3) * ROWS * 128 + r * 128 + ((((c & 7) ^ (r & 7))) << 4));
}

// ROWS rows of a (n x D) row-major tensor from row `row0` into panels; rows >= n are zero-filled.
template <int ROWS, int D, int THREADS, typename T>
__device__ __forceinline__ void cp_panels(uint32_t dst, const T* src, int row0, int n, int tid) {
  static_assert((ROWS * (D / 8)) % THREADS == 0, "whole chunks per thread");
#pragma unroll
  for (int k = 0; k < ROWS * (D / 8) / THREADS; ++k) {
    const int e = tid + k * THREADS, r = e / (D / 8), c = e % (D / 8);
    const bool in = row0 + r < n;
    cp_async16(dst + panel_chunk<ROWS>(r, c), src + (in ? int64_t(row0 + r) * D + c * 8 : 0), in ? 16 : 0);
  }
}

__device__ __forceinline__ void red_add4(float* dst, float4 v) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
               : "memory");
}

// v7's dQ writer: the bulk copy engine adds `bytes` (a multiple of 16) of float32 from shared
// memory element-wise into global memory (both 16-byte aligned), asynchronously; the issuing
// thread commits its bulk ops as one group and waits for them by group.
__device__ __forceinline__ void bulk_reduce_add_f32(float* dst, uint32_t src, uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst), "r"(src),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// At most N bulk groups of this thread still reading their shared memory.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// Every bulk group of this thread complete (its writes to global memory performed).
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// Named barriers 1 and 2 (0 is __syncthreads): `threads` threads take part, whole warps; a warp
// that arrives does not wait.
template <int ID, int THREADS>
__device__ __forceinline__ void bar_sync() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(ID), "n"(THREADS) : "memory");
}
template <int ID, int THREADS>
__device__ __forceinline__ void bar_arrive() {
  asm volatile("bar.arrive %0, %1;\n" ::"n"(ID), "n"(THREADS) : "memory");
}
// Named barrier `id` (a register) for the 128 threads of one warpgroup, all waiting (v8).
__device__ __forceinline__ void bar_sync_wg(int id) { asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory"); }

// The elementwise steps of one warp's 16 keys x Br queries (N = Br / 2 registers: element 4n + e
// of an m64nBr accumulator with keys as rows: key key0 + g + 8 (e / 2), query row0 + 8n + 2 t4 +
// (e % 2)), shared by every wgmma configuration (here, gpu/bwd_ws_kernel.cuh and
// gpu/ladder/bwd_pipe_kernel.cuh): Br = 64 (N = 32) everywhere but configuration 19 (Br = 128).
// L2_i's or D_i's values of queries 8n + 2 t4 and + 1 (a thread's n-th pair). PERM > 0 (Br = 64):
// the values stored with each t4's 16 side by side, PERM floats apart (query 8n + 2 t4 + e at
// PERM t4 + 2n + e), read as float4, one per two pairs (the compiler merges the repeated load).
// Configuration 24 has PERM = 16: t4 = 0 and 2 (1 and 3) then read the same banks, two wavefronts
// a load; 45 has PERM = 20 (banks 0, 20, 8 and 28 for t4 = 0-3): one.
template <int N, int PERM>
__device__ __forceinline__ float2 bwd_stat_pair(const float* stats, int n, int t4) {
  if constexpr (PERM > 0) {
    static_assert(N == 32 && (PERM == 16 || PERM == 20), "the permuted statistics are laid out for Br = 64");
    const float4 v = *reinterpret_cast<const float4*>(stats + t4 * PERM + 4 * (n / 2));
    return n % 2 ? make_float2(v.z, v.w) : make_float2(v.x, v.y);
  } else {
    return *reinterpret_cast<const float2*>(stats + n * 8 + 2 * t4);
  }
}
// FA2b L11: P = exp2(S tau log2 e - L2_i) in place of S; masked keys (key > hi(row), keys past Nk
// included) exactly 0 where `partial` (some row of Q_i masks a key of this warp); padding rows
// have L2 = +inf, so P = 0 there without a test.
template <int N, int PERM = 0>
__device__ __forceinline__ void bwd_probabilities(float (&s)[N], const float* sL2, float scale_log2, bool partial,
                                                  int key0, int row0, const RowLimit& lim, int g, int t4) {
#pragma unroll
  for (int n = 0; n < N / 4; ++n) {
    const float2 l2 = bwd_stat_pair<N, PERM>(sL2, n, t4);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float x = fast_exp2(fmaf(s[4 * n + e], scale_log2, -(e & 1 ? l2.y : l2.x)));
      s[4 * n + e] = partial && key0 + g + 8 * (e / 2) > lim.hi(row0 + n * 8 + 2 * t4 + (e & 1)) ? 0.0f : x;
    }
  }
}
// FA2b L14: dS^T = P^T o (dP^T - D_i) in float32, in place of dP^T.
template <int N, int PERM = 0>
__device__ __forceinline__ void bwd_ds(float (&dp)[N], const float (&s)[N], const float* sD, int t4) {
#pragma unroll
  for (int n = 0; n < N / 4; ++n) {
    const float2 dd = bwd_stat_pair<N, PERM>(sD, n, t4);
#pragma unroll
    for (int e = 0; e < 4; ++e) dp[4 * n + e] = s[4 * n + e] * (dp[4 * n + e] - (e & 1 ? dd.y : dd.x));
  }
}
// An accumulator rounded to the type, straight into register A fragments: column tiles 2kk,
// 2kk + 1 are (k 0-7, k 8-15) of k step kk (queries 16 kk ..).
template <typename T, int N>
__device__ __forceinline__ void bwd_fragments(const float (&x)[N], uint32_t (&a)[N / 8][4]) {
#pragma unroll
  for (int kk = 0; kk < N / 8; ++kk)
#pragma unroll
    for (int q = 0; q < 4; ++q) a[kk][q] = pack2<T>(x[8 * kk + 2 * q], x[8 * kk + 2 * q + 1]);
}
// dS^T's fragments to shared memory (keys x queries, 128-byte swizzled rows) for L15: fragment
// register q of k step kk holds keys g (q even) or g + 8 (q odd) at queries 16 kk + 8 (q / 2) +
// 2 t4, + 1: chunk 2 (kk mod 4) + q / 2 of that key's row in panel kk / 4 (64 queries a panel,
// the Bc = 128 key rows of a panel 16 KiB apart; Br = 64 has one). krow: the warp's first key
// row + g.
template <int KK>
__device__ __forceinline__ void bwd_store_ds_t(uint32_t sDS, const uint32_t (&dsa)[KK][4], int krow, int t4) {
#pragma unroll
  for (int kk = 0; kk < KK; ++kk)
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int r = krow + 8 * (q & 1), c = 2 * (kk % 4) + q / 2;
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sDS + uint32_t(r * 128 + ((c ^ (r & 7)) << 4) + 4 * t4 +
                                                                    (kk / 4) * 128 * 128)),
                   "r"(dsa[kk][q]));
    }
}
// acc = X_j Y_i^T for warpgroup wg's 64 keys (X = K_j or V_j: BC rows; Y = Q_i or dO_i: BR
// rows; both K-major 64-column panels): D / 16 k steps of 32 bytes along each 128-byte row.
template <typename T, int D, int BC, int BR>
__device__ __forceinline__ void bwd_keys_by_queries(float (&acc)[BR / 2], uint32_t sX, uint32_t sY, int wg) {
#pragma unroll
  for (int kd = 0; kd < D / 16; ++kd) {
    const uint32_t koff = uint32_t((kd % 4) * 32);
    wgmma_ss<T>(acc, desc_sw128(sX + uint32_t((kd / 4) * BC * 128 + wg * 64 * 128) + koff),
                desc_sw128(sY + uint32_t((kd / 4) * BR * 128) + koff), kd > 0);
  }
}
// acc[pn] += A^T Y_i, A^T in register fragments (a: BR / 16 k steps of 16 queries), Y_i the
// MN-major tile at sY (BR rows of 64-column panels): dV~_j += P^T dO_i, dK~_j += dS^T Q_i.
template <typename T, int PANELS, int BR>
__device__ __forceinline__ void bwd_keys_by_cols(float (&acc)[PANELS][32], const uint32_t (&a)[BR / 16][4], uint32_t sY) {
#pragma unroll
  for (int kk = 0; kk < BR / 16; ++kk)
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn)
      wgmma_rs<T>(acc[pn], a[kk], desc_sw128(sY + uint32_t(pn * BR * 128 + kk * 2048)), 1);
}

// v12 (DESC_ONCE): the same products, and dQ's, from base descriptors built once (BwdDescs,
// below); each wgmma's descriptor is its base plus the byte offset (desc_add), with the same
// offsets as above, so the tensor cores read the same operands in the same order.
// acc = X_j Y_i^T: dX describes this warpgroup's first key row of X_j, dY Y_i's first row.
template <typename T, int D, int BC, int BR>
__device__ __forceinline__ void bwd_keys_by_queries_desc(float (&acc)[BR / 2], uint64_t dX, uint64_t dY) {
#pragma unroll
  for (int kd = 0; kd < D / 16; ++kd) {
    const uint32_t koff = uint32_t((kd % 4) * 32);
    wgmma_ss<T>(acc, desc_add(dX, uint32_t((kd / 4) * BC * 128) + koff),
                desc_add(dY, uint32_t((kd / 4) * BR * 128) + koff), kd > 0);
  }
}
// acc[pn] += A^T Y_i: dY describes Y_i's first row. WIDE (d = 128, configuration 29): one m64n128k16
// per k step over both 64-column panels of Y_i (the second BR x 128 bytes on, through the leading
// offset, as the forward's wide O += P~ V) in place of one m64n64k16 per panel: A read once.
template <typename T, int PANELS, int BR, bool WIDE = false>
__device__ __forceinline__ void bwd_keys_by_cols_desc(float (&acc)[PANELS][32], const uint32_t (&a)[BR / 16][4],
                                                      uint64_t dY) {
  static_assert(!WIDE || PANELS == 2, "the wide product spans two 64-column panels (d = 128)");
  if constexpr (WIDE) {
#pragma unroll
    for (int kk = 0; kk < BR / 16; ++kk)
      wgmma_rs<T>(acc[0], acc[1], a[kk], desc_add(desc_lbo(dY, BR * 128), uint32_t(kk * 2048)), 1);
  } else {
#pragma unroll
    for (int kk = 0; kk < BR / 16; ++kk)
#pragma unroll
      for (int pn = 0; pn < PANELS; ++pn)
        wgmma_rs<T>(acc[pn], a[kk], desc_add(dY, uint32_t(pn * BR * 128 + kk * 2048)), 1);
  }
}
// FA2b L15's product dq = dS_ij K_j (the kernel's wgmma form of it, below) over STEPS k steps of 16
// keys: dDS and dK describe the rows of dS^T and K_j where this warpgroup's first step starts (d =
// 64: its own 64 keys; d = 128: key 0, and its 64-column panel of K_j). Steps over keys no row of
// Q_i keeps (col0 + 16 kk > hi_last) are not issued; the first always is (scale_d = 0).
template <typename T, int STEPS>
__device__ __forceinline__ void bwd_dq_product_desc(float (&dq)[32], uint64_t dDS, uint64_t dK, int col0, int hi_last) {
#pragma unroll
  for (int kk = 0; kk < STEPS; ++kk)
    if (kk == 0 || col0 + 16 * kk <= hi_last)
      wgmma_ss_mn<T>(dq, desc_add(dDS, uint32_t(kk * 2048)), desc_add(dK, uint32_t(kk * 2048)), kk > 0);
}
// dQ's product, just issued, and dK's, in flight since L16, retired together: commit, wait for every
// group, and fence the accumulators so that nothing reads or writes them before the wait.
template <int PANELS>
__device__ __forceinline__ void bwd_retire_dq_dk(float (&dq)[32], float (&dk)[PANELS][32]) {
  wgmma_commit();
  wgmma_wait_all();
  fence_regs(dq);
#pragma unroll
  for (int pn = 0; pn < PANELS; ++pn) fence_regs(dk[pn]);
}
// FA2b L18: dK_j = tau dK~_j and dV_j = dV~_j rounded once to the type, this warp's 16 keys from
// key0 (keys past Nk not written).
template <typename T, int D, int PANELS>
__device__ __forceinline__ void bwd_write_dk_dv(const TcBwdParams& p, int64_t h, int key0, int g, int t4,
                                                const float (&dk)[PANELS][32], const float (&dv)[PANELS][32]) {
  T* dKh = static_cast<T*>(p.dK) + h * p.fwd.nk * D;
  T* dVh = static_cast<T*>(p.dV) + h * p.fwd.nk * D;
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int key = key0 + g + 8 * hr;
    if (key >= p.fwd.nk) continue;
    uint32_t* ok = reinterpret_cast<uint32_t*>(dKh + int64_t(key) * D + 2 * t4);
    uint32_t* ov = reinterpret_cast<uint32_t*>(dVh + int64_t(key) * D + 2 * t4);
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn)
#pragma unroll
      for (int n = 0; n < 8; ++n) {
        ok[(pn * 64 + n * 8) / 2] = pack2<T>(p.fwd.scale * dk[pn][4 * n + 2 * hr], p.fwd.scale * dk[pn][4 * n + 2 * hr + 1]);
        ov[(pn * 64 + n * 8) / 2] = pack2<T>(dv[pn][4 * n + 2 * hr], dv[pn][4 * n + 2 * hr + 1]);
      }
  }
}

// The shared-memory tiles of one K/V block's backward, in bytes (16-bit inputs), shared by every
// wgmma configuration: K_j or V_j (Bc x d), Q_i or dO_i (Br x d), one Q block's buffer (Q_i, dO_i,
// L2_i, D_i) and that padded to the 1024-byte swizzle atom, dS_ij^T (keys x queries).
template <int D, int BR, int BC>
struct BwdTileBytes {
  static constexpr int64_t SMEM_KV = int64_t(BC) * D * 2;
  static constexpr int64_t SMEM_QI = int64_t(BR) * D * 2;
  static constexpr int64_t SMEM_BUF = 2 * SMEM_QI + 2 * BR * 4;
  static constexpr int64_t SMEM_BUF_PAD = (SMEM_BUF + 1023) / 1024 * 1024;
  static constexpr int64_t SMEM_DS = int64_t(BC) * BR * 2;
};

template <int V_, int D_, bool DQ_MMA_, bool DQ_BULK_ = false, bool WG_APART_ = false, int ORDER_ = 0>
struct WgBwdConfig : BwdTileBytes<D_, 64, 128> {
  static constexpr int VARIANT = V_, D = D_, BR = 64, BC = 128, THREADS = 256, PANELS = D / 64;
  // v6: dQ_i += dS K_j on mma.sync, the 8 warps over 4 row groups x 2 column halves of dQ_i.
  static constexpr bool DQ_MMA = DQ_MMA_;
  // v7: tau dQ_i added to HBM by the bulk copy engine from a dense, row-swizzled slab (below).
  static constexpr bool DQ_BULK = DQ_BULK_;
  static_assert(!(DQ_MMA && DQ_BULK), "v7 is v5's dQ product with another writer");
  // v8 (d = 64): the warpgroups meet once per Q block (the loop's first barrier). Each reads only
  // its own 64 keys' rows of dS^T for dQ's product (the K split), so a named barrier per warpgroup
  // replaces the dS^T __syncthreads, and each adds its own partial to HBM from its own slab.
  static constexpr bool WG_APART = WG_APART_;
  static_assert(!WG_APART || (D_ == 64 && DQ_BULK), "v8 is v7 at d = 64");
  // The grid's order (v5-v8: 0). 0: heads fastest, every head's block j = 0 first (the most work
  // when causal), so the SMs run 132 heads' blocks at once, each streaming its own Q, dO and dQ
  // through L2 (at N = 16384, d = 64: 8 MiB a head, about 1 GiB for 132 heads: from DRAM).
  // 1 (v9): K/V blocks fastest, so the blocks running at once are one or two heads' K/V blocks,
  // which share that head's Q_i, dO_i and dQ_i in L2 (FlashAttention-2's grid order).
  // 2 (v10): v9, and block j starts its loop over Q blocks at the (j mod n)-th of its n blocks and
  // wraps around, so that the blocks of one head add into different rows of dQ at a time.
  static constexpr int ORDER = ORDER_;
  // v12 (WgBwdDescOnce, below): each operand buffer's matrix descriptor built once, every wgmma's
  // formed from it by one add. false: desc_sw128 per wgmma.
  static constexpr bool DESC_ONCE = false;
  // v5's dQ split between the two warpgroups (above): d = 64 over keys (one slab each), d = 128
  // over columns (one slab). v7: two slabs used by Q blocks in turn (even, odd), each one dense
  // Br x d tile; at d = 64 the warpgroups' partials are summed into it.
  static constexpr bool DQ_KSPLIT = D == 64 && !DQ_MMA;
  static constexpr bool DQ_ROWSPLIT = false;  // configuration 19's split (gpu/bwd_ws_kernel.cuh)
  static constexpr int STATS_PERM = 0, STATS_PERM_D = 0;  // configurations 24's and 45's statistics layouts (bwd_stat_pair)
  static constexpr bool WIDE_KV = false;      // configuration 29's wide dV and dK products (bwd_keys_by_cols_desc)
  static constexpr bool K_FRAG = false;       // configuration 46's dS from P as rounded (bwd_block_after_s)
  static constexpr int SLABS = WG_APART ? 4 : DQ_BULK || DQ_KSPLIT ? 2 : 1;  // v8: (Q block parity, warpgroup)
  static constexpr int DQ_LD = DQ_BULK ? D : D + 8;  // + 8 floats: fewer bank conflicts (v5, v6)
  using Tiles = BwdTileBytes<D_, 64, 128>;
  using Tiles::SMEM_KV, Tiles::SMEM_QI, Tiles::SMEM_BUF, Tiles::SMEM_BUF_PAD, Tiles::SMEM_DS;
  static constexpr int64_t SMEM_DQ = int64_t(SLABS) * BR * DQ_LD * 4;
  // + 1024: the dynamic shared memory is aligned up to the swizzle atom by hand.
  static constexpr int64_t SMEM = 2 * SMEM_KV + 2 * SMEM_BUF_PAD + SMEM_DS + SMEM_DQ + 1024;
  static_assert(BR * 2 == 128, "a dS^T row (Br queries) is one 128-byte swizzle row");
};

// v12: configuration C with DESC_ONCE. Each operand buffer's matrix descriptor is built once
// (BwdDescs: per block; Q_i's and dO_i's one add per Q block) and every wgmma's is that base plus
// its byte offset >> 4 (desc_add: one add), in place of desc_sw128 per wgmma (mask, shift, ORs:
// about 10 integer instructions; under Nsight Compute v9's uniform pipe, where they run, is 10x as
// busy as cuDNN's per unit of tensor work: gpu/results/tensor-core-backward/pipelined/ncu/). The
// same operands in the same order: the results are C's, bit for bit. A type of its own rather than
// a template parameter of WgBwdConfig, so that the other configurations' kernels keep their names
// and their PTX byte for byte.
template <class C>
struct WgBwdDescOnce : C {
  static constexpr bool DESC_ONCE = true;
  // desc_add's bound: every tile's shared address stays below 256 KiB, so no offset carries out of
  // the descriptor's 14-bit start-address field (an SM's shared memory is 228 KiB; this checks the
  // tiles' own size).
  static_assert(C::SMEM <= 256 * 1024, "desc_add needs shared addresses below 256 KiB");
};

// v12's base descriptors (WgBwdDescOnce), built once per block: this warpgroup's 64 keys
// of K_j and of V_j (the A operands of S^T and dP^T), buffer 0's Q_i (its dO_i is SMEM_QI bytes on,
// buffer 1 SMEM_BUF_PAD bytes on), and dQ's two operands where this warpgroup's k steps start
// (d = 64: its own 64 keys' rows of dS^T and K_j; d = 128: dS^T's first row and its 64-column
// panel of K_j; DQ_ROWSPLIT, d = 64 with Br = 128: the first row of dS^T's panel of this
// warpgroup's 64 queries, and K_j's first row).
struct BwdDescs {
  uint64_t k_wg, v_wg, buf0, dq_ds, dq_k;
};
template <class C>
__device__ __forceinline__ BwdDescs bwd_descs(uint32_t sK, uint32_t sV, uint32_t sBuf0, uint32_t sDS, int wg) {
  const uint32_t keys = uint32_t(wg * 64 * 128);  // this warpgroup's first key row of a BC-row tile
  const uint32_t panel = uint32_t(wg * C::BC * 128);  // this warpgroup's 64-column panel of a BC-row tile
  const uint32_t dq_k = C::DQ_KSPLIT ? keys : C::DQ_ROWSPLIT ? 0u : panel;
  const uint32_t dq_ds = C::DQ_KSPLIT ? keys : C::DQ_ROWSPLIT ? panel : 0u;
  return BwdDescs{desc_sw128(sK + keys), desc_sw128(sV + keys), desc_sw128(sBuf0), desc_sw128(sDS + dq_ds),
                  desc_sw128(sK + dq_k)};
}

// dQ's partial of this warp (an m64n64 accumulator: query rows 16 warp + g + 8 (e / 2), columns
// 8n + 2 t4 + (e % 2)) to a float32 slab of rows DQ_LD floats apart, from column cbase.
template <int DQ_LD>
__device__ __forceinline__ void bwd_store_dq_slab(float* slab, const float (&dq)[32], int cbase, int warp, int g, int t4) {
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr)
      *reinterpret_cast<float2*>(slab + (warp * 16 + g + 8 * hr) * DQ_LD + cbase + 8 * n + 2 * t4) =
          make_float2(dq[4 * n + 2 * hr], dq[4 * n + 2 * hr + 1]);
}

// v7's dense slab (D floats a row, each row's 8-float chunks swizzled: column c at c xor 8 (r mod 8),
// so that a warp's float2 stores of 8 rows spread over the banks): tau times this warp's m64n64
// partial (as bwd_store_dq_slab) from column cbase; the copy engine carries the layout into HBM
// and fa2_bwd_tc_dq_to_type undoes it. key = r mod 8 = g (rows 16 warp + g + 8 hr). The
// warp-specialised kernel passes g through per_block: the 8 swizzled chunk offsets are then formed
// in its Q-block loop where they are stored, not hoisted out of it into 8 registers live through
// every product (ptxas spilled 28 bytes at d = 128 with them hoisted).
template <int D>
__device__ __forceinline__ void bwd_store_dq_slab_swizzled(float* slab, const float (&dq)[32], int cbase, int warp, int g,
                                                           uint32_t key, int t4, float tau) {
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const int r = warp * 16 + g + 8 * hr, c = cbase + 8 * n + 2 * t4;
      *reinterpret_cast<float2*>(slab + r * D + (c ^ int(key << 3))) =
          make_float2(tau * dq[4 * n + 2 * hr], tau * dq[4 * n + 2 * hr + 1]);
    }
}

// tau dQ_i from a slab of shared memory (Br rows DQ_LD floats apart; KSPLIT: a second partial Br
// rows further on, summed) into the float32 accumulator dQ in HBM: four consecutive floats of one
// row per thread and step, thread `first` of COUNT (rows past Nq are not written).
template <int D, int BR, int DQ_LD, bool KSPLIT, int COUNT>
__device__ __forceinline__ void bwd_add_dq_slab(float* dQ, const float* slab, int row0, int nq, float tau, int first) {
  for (int e = first; e < BR * D / 4; e += COUNT) {
    const int r = e / (D / 4), c = (e % (D / 4)) * 4;
    if (row0 + r >= nq) break;  // rows grow with e
    float4 v = *reinterpret_cast<const float4*>(slab + r * DQ_LD + c);
    if constexpr (KSPLIT) {
      const float4 w = *reinterpret_cast<const float4*>(slab + (BR + r) * DQ_LD + c);
      v = make_float4(v.x + w.x, v.y + w.y, v.z + w.z, v.w + w.w);
    }
    red_add4(dQ + int64_t(row0 + r) * D + c, make_float4(tau * v.x, tau * v.y, tau * v.z, tau * v.w));
  }
}

// The operands of one Q block's products for configuration C: shared-memory addresses (v5-v11,
// desc_sw128 per wgmma) or base descriptors (DESC_ONCE: this warpgroup's keys of K_j and V_j, Q_i
// and dO_i), whichever C reads.
struct BwdBlockOperands {
  uint32_t sK, sV, sQ, sdO;
  uint64_t k_wg, v_wg, q, dO;
};
// FA2b L10-L14 and L16 for this warpgroup's 64 keys and Q block i: S^T, P^T (into A fragments),
// dP^T with dV~_j += P^T dO_i, dS^T rounded into dsa, then dK~_j += dS^T Q_i issued and left in
// flight (the caller stores dS^T under it; dQ's wait retires it). Shared by the kernel below and
// the warp-specialised rungs (gpu/ladder/bwd_ws_kernel.cuh), whose consumers run these products.
template <typename T, class C>
__device__ __forceinline__ void bwd_block_after_s(float (&dk)[C::PANELS][32], float (&dv)[C::PANELS][32],
                                                  uint32_t (&dsa)[C::BR / 16][4], float (&s)[C::BR / 2],
                                                  const BwdBlockOperands& op, int wg, const float* sL2, const float* sD,
                                                  float scale_log2, bool partial, int key0, int row0,
                                                  const RowLimit& lim, int g, int t4);
template <typename T, class C>
__device__ __forceinline__ void bwd_block_products(float (&dk)[C::PANELS][32], float (&dv)[C::PANELS][32],
                                                   uint32_t (&dsa)[C::BR / 16][4], const BwdBlockOperands& op, int wg,
                                                   const float* sL2, const float* sD, float scale_log2, bool partial,
                                                   int key0, int row0, const RowLimit& lim, int g, int t4) {
  constexpr int D = C::D, BR = C::BR, BC = C::BC;
  // FA2b L10: S_ij^T = K_j Q_i^T (64 keys x Br queries per warpgroup), float32. Element
  // s[4n + e]: key key0 + g + 8 (e / 2), query row0 + 8n + 2 t4 + (e % 2).
  float s[BR / 2];
  fence_regs(s);
  wgmma_fence();
  if constexpr (C::DESC_ONCE)
    bwd_keys_by_queries_desc<T, D, BC, BR>(s, op.k_wg, op.q);
  else
    bwd_keys_by_queries<T, D, BC, BR>(s, op.sK, op.sQ, wg);
  wgmma_commit();
  wgmma_wait_all();
  fence_regs(s);
  bwd_block_after_s<T, C>(dk, dv, dsa, s, op, wg, sL2, sD, scale_log2, partial, key0, row0, lim, g, t4);
}
// 46: FA2b L14 from P as rounded for dV's product (gpu/bwd_ws_steps.cuh).
template <typename T, int N, int PERM>
__device__ __forceinline__ void bwd_ds_rounded_p(float (&dp)[N], const uint32_t (&pa)[N / 8][4], const float* sD, int t4);
// The rest of bwd_block_products once S^T is in s (configuration 28 issues it a Q block ahead, 46
// computes it from K_j's fragments in registers).
template <typename T, class C>
__device__ __forceinline__ void bwd_block_after_s(float (&dk)[C::PANELS][32], float (&dv)[C::PANELS][32],
                                                  uint32_t (&dsa)[C::BR / 16][4], float (&s)[C::BR / 2],
                                                  const BwdBlockOperands& op, int wg, const float* sL2, const float* sD,
                                                  float scale_log2, bool partial, int key0, int row0,
                                                  const RowLimit& lim, int g, int t4) {
  constexpr int D = C::D, BR = C::BR, BC = C::BC, PANELS = C::PANELS;
  // FA2b L11: P_ij = exp2(S tau log2 e - L2_i); P^T rounded to the type into A fragments.
  bwd_probabilities<BR / 2, C::STATS_PERM>(s, sL2, scale_log2, partial, key0, row0, lim, g, t4);
  uint32_t pa[BR / 16][4];
  bwd_fragments<T>(s, pa);

  // FA2b L13: dP_ij^T = V_j dO_i^T; FA2b L12: dV~_j += P_ij^T dO_i (one group).
  float dp[BR / 2];
  fence_regs(dp);
#pragma unroll
  for (int pn = 0; pn < PANELS; ++pn) fence_regs(dv[pn]);
  wgmma_fence();
  if constexpr (C::DESC_ONCE) {
    bwd_keys_by_queries_desc<T, D, BC, BR>(dp, op.v_wg, op.dO);
    bwd_keys_by_cols_desc<T, PANELS, BR, C::WIDE_KV>(dv, pa, op.dO);
  } else {
    bwd_keys_by_queries<T, D, BC, BR>(dp, op.sV, op.sdO, wg);
    bwd_keys_by_cols<T, PANELS, BR>(dv, pa, op.sdO);
  }
  wgmma_commit();
  wgmma_wait_all();
  fence_regs(dp);
#pragma unroll
  for (int pn = 0; pn < PANELS; ++pn) fence_regs(dv[pn]);

  // FA2b L14: dS_ij^T = P^T o (dP^T - D_i) in float32, rounded once to the type. 46: from P^T's
  // fragments (P rounded once more), so that the float32 P need not stay live beside dP^T.
  if constexpr (C::K_FRAG)
    bwd_ds_rounded_p<T, BR / 2, C::STATS_PERM_D>(dp, pa, sD, t4);
  else
    bwd_ds<BR / 2, C::STATS_PERM_D>(dp, s, sD, t4);
  bwd_fragments<T>(dp, dsa);

  // FA2b L16: dK~_j += dS_ij^T Q_i (tau at the end); left in flight while dS^T is stored.
#pragma unroll
  for (int pn = 0; pn < PANELS; ++pn) fence_regs(dk[pn]);
  wgmma_fence();
  if constexpr (C::DESC_ONCE)
    bwd_keys_by_cols_desc<T, PANELS, BR, C::WIDE_KV>(dk, dsa, op.q);
  else
    bwd_keys_by_cols<T, PANELS, BR>(dk, dsa, op.sQ);
  wgmma_commit();
}

template <typename T, class C>
__global__ void __launch_bounds__(C::THREADS, 1) fa2_bwd_wgmma_kernel(const TcBwdParams p) {
  constexpr int D = C::D, BR = C::BR, BC = C::BC, PANELS = C::PANELS;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  const uint32_t sK = smem_addr(smem), sV = sK + uint32_t(C::SMEM_KV), sBuf0 = sV + uint32_t(C::SMEM_KV);
  const uint32_t sDS = sBuf0 + uint32_t(2 * C::SMEM_BUF_PAD);
  float* sdq = reinterpret_cast<float*>(smem + 2 * C::SMEM_KV + 2 * C::SMEM_BUF_PAD + C::SMEM_DS);
  const int tid = threadIdx.x, wg = tid / 128, warp = (tid / 32) % 4, lane = tid % 32, g = lane / 4, t4 = lane % 4;
  const BwdDescs dsc = bwd_descs<C>(sK, sV, sBuf0, sDS, wg);  // v12's base descriptors (dead code elsewhere)

  // The grid is (heads, Tc) for order 0 (every head's block j = 0, the most work when causal,
  // first), (Tc, heads) otherwise.
  const int64_t h = C::ORDER == 0 ? blockIdx.x : blockIdx.y;
  const int j = int(C::ORDER == 0 ? blockIdx.y : blockIdx.x), col0 = j * BC;
  const int wkey0 = col0 + wg * 64, key0 = wkey0 + warp * 16;  // this warpgroup's and this warp's first key
  const BwdHead<T> hd = bwd_head<T, D, BR>(p, h, col0);  // the head's tensors, mask, Q blocks
  const RowLimit lim = hd.lim;
  const int Tr = hd.Tr, i_first = hd.i_first;
  // FA2b L8's Q blocks i_first .. Tr - 1, the t-th of them q_block(t): in order, or rotated by j (v10).
  const int n_i = Tr - i_first, rot = C::ORDER == 2 && n_i > 0 ? j % n_i : 0;
  auto q_block = [&](int t) { return i_first + (t + rot) % n_i; };

  auto buf_addr = [&](int buf) { return sBuf0 + uint32_t(buf * C::SMEM_BUF_PAD); };
  auto load_i = [&](int i, int buf) {
    const uint32_t b = buf_addr(buf);
    cp_panels<BR, D, C::THREADS>(b, hd.Q, i * BR, p.fwd.nq, tid);
    cp_panels<BR, D, C::THREADS>(b + uint32_t(C::SMEM_QI), hd.dO, i * BR, p.fwd.nq, tid);
    load_stats<BR, C::THREADS>(b + uint32_t(2 * C::SMEM_QI), hd, i, tid);  // L2_i, D_i
  };

  // FA2b L6: load K_j, V_j (with the first Q block's tiles, one group); L7: dK~_j = dV~_j = 0.
  if (i_first < Tr) {
    cp_panels<BC, D, C::THREADS>(sK, hd.K, col0, p.fwd.nk, tid);
    cp_panels<BC, D, C::THREADS>(sV, hd.V, col0, p.fwd.nk, tid);
    load_i(q_block(0), 0);
  }
  cp_async_commit();
  float dk[PANELS][32] = {}, dv[PANELS][32] = {};
  const float scale_log2 = p.fwd.scale * kLog2e;


  // v7's dQ writer (FlashAttention-3's dQ accumulation, without a writer warp): the m64 x 64
  // accumulator dq (this warpgroup's, unscaled) goes to slab (Q block number k) % 2, a dense
  // Br x d float32 tile laid out as tau dQ_i's rows are in HBM, except that within each row the
  // 8-float chunks are swizzled: column c at c xor 8 (r mod 8) (8 rows' float2 stores then hit
  // every bank twice, the minimum; the unswizzled row-major tile puts them all on 8 banks).
  // dQ's accumulator in HBM keeps that swizzle (rows in order); the conversion to the type
  // undoes it (fa2_bwd_tc_dq_to_type). Then one thread has the bulk copy engine add the tile's
  // rows below Nq to the accumulator: one contiguous range, rows row0 .. of this head.
  //   d = 128: each warpgroup writes its 64 columns; fence.proxy.async (the engine reads through
  //   the async proxy); warps 1-7 arrive at named barrier 1, warp 0 waits there; thread 0 issues.
  //   d = 64 (a K split): warpgroup 1 writes its partial and arrives at barrier 1; warpgroup 0
  //   waits there, adds the partial at its own fragment's positions (the same elements), writes
  //   the sum; fence; __syncthreads; thread 0 issues.
  //   v8 (d = 64): each warpgroup writes its own partial to its own slab (four slabs: parity x
  //   warpgroup), fences, meets at its named barrier 1 + wg, and its thread 0 issues.
  // A slab is written again two Q blocks later, after its issuing thread's wait_group.read 1 and
  // the loop's first barrier.
  auto write_dq_bulk = [&](float (&dq)[32], int k, int row0) {
    float* slab = sdq + (C::WG_APART ? (k & 1) * 2 + wg : k & 1) * BR * D;
    const float tau = p.fwd.scale;
    auto at = [&](int n, int hr) {  // dq[4n + 2hr], + 1: row 16 warp + g + 8 hr, columns 8n + 2 t4, + 1
      const int r = warp * 16 + g + 8 * hr, c = (C::DQ_KSPLIT ? 0 : wg * 64) + 8 * n + 2 * t4;
      return reinterpret_cast<float2*>(slab + r * D + (c ^ ((r & 7) << 3)));
    };
    // ptxas (nvcc 13.0) serialises every wgmma of the kernel (C7520) if any path returns early
    // here, and at d = 64 if both of v7's barriers are split into arrive / sync, or if v8's is:
    // the forms below are the ones that compile without it.
    if constexpr (C::WG_APART) {
      // v8: each warpgroup its own partial, its own slab, its own bulk add (twice v7's reduce
      // traffic into L2 at d = 64); the warpgroup meets at named barrier 1 + wg and its thread 0
      // (tid 0 or 128) issues.
      bwd_store_dq_slab_swizzled<D>(slab, dq, 0, warp, g, uint32_t(g), t4, tau);
      fence_proxy_async();
      bar_sync_wg(1 + wg);
    } else if constexpr (C::DQ_KSPLIT) {
      // v7, d = 64: warpgroup 1 writes its partial and arrives at named barrier 1; warpgroup 0
      // waits there, adds the partial at its own fragment's positions (the same elements), writes
      // the sum; fence; a __syncthreads (warpgroup 1 would wait at the loop's first one anyway).
      if (wg == 1) {
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
          for (int hr = 0; hr < 2; ++hr) *at(n, hr) = make_float2(dq[4 * n + 2 * hr], dq[4 * n + 2 * hr + 1]);
        bar_arrive<1, 256>();
      } else {
        bar_sync<1, 256>();  // warpgroup 1's partial is in the slab
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
          for (int hr = 0; hr < 2; ++hr) {
            const float2 o = *at(n, hr);
            *at(n, hr) = make_float2(tau * (dq[4 * n + 2 * hr] + o.x), tau * (dq[4 * n + 2 * hr + 1] + o.y));
          }
        fence_proxy_async();
      }
      __syncthreads();
    } else {
      // v7, d = 128: each warpgroup writes its 64 columns; fence; warps 1-7 arrive at named
      // barrier 1, warp 0 waits there.
      bwd_store_dq_slab_swizzled<D>(slab, dq, wg * 64, warp, g, uint32_t(g), t4, tau);
      fence_proxy_async();
      if (tid >= 32)
        bar_arrive<1, 256>();
      else
        bar_sync<1, 256>();
    }
    if (tid == 0 || (C::WG_APART && tid == 128)) {  // after its warp's wait above
      const int rows = min(BR, p.fwd.nq - row0);  // the ragged last Q block: rows past Nq are not added
      bulk_reduce_add_f32(hd.dQ + int64_t(row0) * D, smem_addr(slab), uint32_t(rows * D * 4));
      bulk_commit();
    }
  };

  // FA2b L8: for i (only the Q blocks some row of which keeps a key of block j).
  for (int t = 0; t < n_i; ++t) {
    const int i = q_block(t), buf = t & 1, row0 = i * BR;
    const uint32_t sQ = buf_addr(buf), sdO = sQ + uint32_t(C::SMEM_QI);
    const uint64_t dQi = desc_add(dsc.buf0, uint32_t(buf * C::SMEM_BUF_PAD));  // v12: Q_i's and dO_i's descriptors
    const uint64_t ddOi = desc_add(dQi, uint32_t(C::SMEM_QI));
    const float* sL2 = reinterpret_cast<const float*>(smem + (sQ - sK) + 2 * C::SMEM_QI);
    const float* sD = sL2 + BR;
    // FA2b L9: Q_i, dO_i, L_i, D_i have landed; every warp is done with block i - 1.
    // v7: block i - 2's bulk add has read its slab, the one block i writes (with the barrier).
    if constexpr (C::DQ_BULK)
      if (tid == 0 || (C::WG_APART && tid == 128)) bulk_wait_read<1>();  // the issuing thread(s)
    cp_async_wait<0>();
    fence_proxy_async();
    __syncthreads();
    if (t + 1 < n_i) load_i(q_block(t + 1), buf ^ 1);
    cp_async_commit();

    const int last_row = min(row0 + BR, p.fwd.nq) - 1, hi_last = lim.hi(last_row);
    const bool wg_live = wkey0 <= hi_last;                // some row of Q_i keeps a key of this warpgroup
    const bool partial = key0 + 15 > lim.hi(row0);        // some row of Q_i masks a key of this warp
    if (wg_live) {
      uint32_t dsa[BR / 16][4];
      bwd_block_products<T, C>(dk, dv, dsa, BwdBlockOperands{sK, sV, sQ, sdO, dsc.k_wg, dsc.v_wg, dQi, ddOi}, wg, sL2, sD,
                               scale_log2, partial, key0, row0, lim, g, t4);
      bwd_store_ds_t(sDS, dsa, wg * 64 + warp * 16 + g, t4);  // for L15
    } else {
      // No row of Q_i keeps these 64 keys: their dS is 0 (dQ's product below may still read them).
      for (int e = tid % 128; e < 64 * 8; e += 128)
        asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};\n" ::"r"(sDS + uint32_t((wg * 64 + e / 8) * 128 + (e % 8) * 16)),
                     "r"(0u));
    }
    fence_proxy_async();  // dS^T, written by st.shared, is read next by the tensor cores
    if constexpr (C::WG_APART)
      bar_sync_wg(3 + wg);  // this warpgroup's 64 rows of dS_ij^T complete (all it reads)
    else
      __syncthreads();  // dS_ij^T complete in shared memory

    // FA2b L15: dQ_i += tau dS_ij K_j (tau on the way out), into the slab(s) of shared memory.
    // k step kk: 16 keys of dS^T's rows and of K_j's rows; steps over keys no row of Q_i keeps
    // are not issued.
    if constexpr (C::DQ_MMA) {
      // v6: mma.sync m16n8k16, as v2: warp w8 takes rows 16 (w8 % 4) .. of Q_i and the d columns
      // (w8 / 4) D / 2 ..; A = dS from dS^T by ldmatrix.trans, B = K_j by ldmatrix.trans.
      constexpr int DQN = D / 2;
      const int w8 = tid / 32, rg = w8 % 4, cg = w8 / 4;
      wgmma_wait_all();  // dK's product (its dS^T fragments then leave the registers)
#pragma unroll
      for (int pn = 0; pn < PANELS; ++pn) fence_regs(dk[pn]);
      float dq[DQN / 8][4] = {};
      for (int kk = 0; kk < BC / 16; ++kk) {
        if (col0 + kk * 16 > hi_last) break;  // keys no row of Q_i keeps: dS = 0
        // dS's matrices (q 0-7, k 0-7), (q 8-15, k 0-7), (q 0-7, k 8-15), (q 8-15, k 8-15)
        const int kr = kk * 16 + lane % 8 + (lane / 16) * 8, qc = rg * 2 + (lane / 8) % 2;
        uint32_t a[4];
        ldmatrix_x4_trans(a, sDS + uint32_t(kr * 128 + ((qc ^ (kr & 7)) << 4)));
#pragma unroll
        for (int dp = 0; dp < DQN / 16; ++dp) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, sK + panel_chunk<BC>(kk * 16 + lane % 16, (cg * DQN / 16 + dp) * 2 + lane / 16));
          mma16816<T>(dq[2 * dp], a, b[0], b[1]);
          mma16816<T>(dq[2 * dp + 1], a, b[2], b[3]);
        }
      }
      // Rows rg * 16 + g + 8 hr, columns cg * DQN + 8 n + 2 t4 (+ 1) of dQ_i.
#pragma unroll
      for (int n = 0; n < DQN / 8; ++n)
#pragma unroll
        for (int hr = 0; hr < 2; ++hr)
          *reinterpret_cast<float2*>(sdq + (rg * 16 + g + 8 * hr) * C::DQ_LD + cg * DQN + 8 * n + 2 * t4) =
              make_float2(dq[n][2 * hr], dq[n][2 * hr + 1]);
    } else {
      // v5: wgmma. The first step overwrites the accumulators (scale_d = 0) and is always issued
      // (a Q block in the loop keeps key col0; a warpgroup no row keeps has zeroed its dS^T rows).
      float dq[32];
      fence_regs(dq);
      wgmma_fence();
      if constexpr (C::DESC_ONCE) {
        // v12: the same k steps as below, from the base descriptors (d = 64: this warpgroup's 64
        // keys, warpgroup 0's test; d = 128: all 128 keys).
        bwd_dq_product_desc<T, C::DQ_KSPLIT ? 4 : BC / 16>(dq, dsc.dq_ds, dsc.dq_k, col0, hi_last);
      } else if constexpr (C::DQ_KSPLIT) {
        // d = 64: this warpgroup's 64 keys, all 64 columns. The test is warpgroup 0's (a test on
        // wkey0 made ptxas serialise every wgmma, C7520: it cannot see that wg is uniform); the
        // extra steps it lets warpgroup 1 issue read masked keys, whose dS^T rows are 0.
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
          if (kk == 0 || col0 + 16 * kk <= hi_last)
            wgmma_ss_mn<T>(dq, desc_sw128(sDS + uint32_t((wg * 64 + 16 * kk) * 128)),
                           desc_sw128(sK + uint32_t((wg * 64 + 16 * kk) * 128)), kk > 0);
      } else {
        // d = 128: all 128 keys, this warpgroup's 64-column panel of K_j.
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk)
          if (kk == 0 || col0 + 16 * kk <= hi_last)
            wgmma_ss_mn<T>(dq, desc_sw128(sDS + uint32_t(kk * 2048)),
                           desc_sw128(sK + uint32_t(wg * BC * 128 + kk * 2048)), kk > 0);
      }
      bwd_retire_dq_dk<PANELS>(dq, dk);
      if constexpr (C::DQ_BULK) {
        write_dq_bulk(dq, t, row0);
        continue;  // no third __syncthreads: the writer's barriers are named ones
      }
      // To this warpgroup's slab (d = 64) or its 64 columns of the slab (d = 128).
      bwd_store_dq_slab<C::DQ_LD>(sdq + (C::DQ_KSPLIT ? wg * BR * C::DQ_LD : 0), dq, C::DQ_KSPLIT ? 0 : wg * 64, warp, g,
                                  t4);
    }
    __syncthreads();  // dQ_i's partials complete
    // tau dQ_i into the float32 accumulator in HBM: four consecutive floats of one row per thread
    // and step (rows past Nq are not written).
    bwd_add_dq_slab<D, BR, C::DQ_LD, C::DQ_KSPLIT, C::THREADS>(hd.dQ, sdq, row0, p.fwd.nq, p.fwd.scale, tid);
  }
  cp_async_wait<0>();
  // v7, v8: every bulk add complete before the block (and its shared memory) is gone.
  if constexpr (C::DQ_BULK)
    if (tid == 0 || (C::WG_APART && tid == 128)) bulk_wait_all();

  // FA2b L18 (zeros for a block no row keeps).
  bwd_write_dk_dv<T, D, PANELS>(p, h, key0, g, t4, dk, dv);
}

template <class C>
void launch_bwd_wgmma(const TcBwdParams& p) {
  static int64_t opted[2] = {0, 0};
  const unsigned Tc = unsigned((p.fwd.nk + C::BC - 1) / C::BC);
  const dim3 grid = C::ORDER == 0 ? dim3(unsigned(p.fwd.heads), Tc) : dim3(Tc, unsigned(p.fwd.heads));
  launch_bwd_kernel(fa2_bwd_wgmma_kernel<__nv_bfloat16, C>, fa2_bwd_wgmma_kernel<__half, C>, p, grid, C::THREADS,
                    C::SMEM, opted);
}

template <class C>
TcBwdVariantInfo info_of() {
  const char* what = C::DESC_ONCE ? "v9 with each buffer's matrix descriptor built once, every wgmma's formed from it "
                                    "by one add (base + offset >> 4) in place of desc_sw128 per wgmma"
                     : C::ORDER == 1 ? "v5 with the grid's K/V blocks fastest: the blocks at work share one head's Q_i, dO_i, dQ_i in L2"
                     : C::ORDER == 2 ? "v9 with each block's Q-block loop rotated by j: one head's blocks add to different rows of dQ"
                     : C::DQ_MMA     ? "v5 with dQ_i += dS K_j on mma.sync (ldmatrix.trans from dS^T and K_j, as v2)"
                     : C::WG_APART ? "d = 64: v7 with the warpgroups apart within a Q block: a named barrier per "
                                     "warpgroup for dS^T, one bulk add of dQ_i per warpgroup"
                     : C::DQ_BULK  ? "v5 with dQ_i added to HBM by the bulk copy engine (cp.reduce.async.bulk .add.f32) "
                                     "from two alternating swizzled slabs"
                                  : "wgmma (sm_90a): 2 warpgroups x 64 keys (Bc 128), Br 64, all five products from "
                                    "shared-memory descriptors, dQ via shared memory + red.v4";
  return TcBwdVariantInfo{C::VARIANT, what, C::BR, C::BC, C::THREADS / 32, C::SMEM, true, true, C::DQ_BULK};
}

}  // namespace
}  // namespace flashstep::gpu::tc
