// Steps of the warp-specialised backward (gpu/bwd_ws_kernel.cuh) beside its kernel: dS^T stored by
// stmatrix (22 on, the defaults among them), the device helpers of single ladder rungs (20, 21,
// 30-35, 37, 43), and those of 46, the d = 128 default (K_j's fragments of S^T, dS from P~).
// Include only from files compiled for sm_90a.
#pragma once
#include "gpu/fa2_bwd_wgmma_kernel.cuh"

namespace flashstep::gpu::tc {
namespace {

// 22, 23: dS^T's fragments to shared memory by stmatrix, one instruction per k step where
// bwd_store_ds_t (gpu/fa2_bwd_wgmma_kernel.cuh) issues four 4-byte stores: the fragment registers
// dsa[kk][q] are the four 8 x 8 matrices of an mma A fragment (matrix q: keys krow0 + 8 (q & 1) ..,
// queries 16 kk + 8 (q / 2) ..; each lane's register holds two queries of one key), which is what
// stmatrix stores, lanes 8 q .. 8 q + 7 giving the addresses of matrix q's 8 rows. The same bytes
// at the same addresses (keys x queries, 128-byte swizzled rows, 64-query panels 16 KiB apart).
// krow0: the warp's first key row.
template <int KK>
__device__ __forceinline__ void bwd_stmatrix_ds_t(uint32_t sDS, const uint32_t (&dsa)[KK][4], int krow0, int lane) {
  const int q = lane / 8, r = krow0 + 8 * (q & 1) + lane % 8;
#pragma unroll
  for (int kk = 0; kk < KK; ++kk) {
    const int c = 2 * (kk % 4) + q / 2;
    const uint32_t addr = sDS + uint32_t(r * 128 + ((c ^ (r & 7)) << 4) + (kk / 4) * 128 * 128);
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(dsa[kk][0]),
                 "r"(dsa[kk][1]), "r"(dsa[kk][2]), "r"(dsa[kk][3])
                 : "memory");
  }
}

// 32, 33: bwd_dq_product_desc's product with all STEPS steps issued as one straight run of wgmma where every
// step is kept (all of K_j's keys kept by Q_i's last row: every non-causal block, and every causal
// one off the diagonal), the steps above otherwise. Issued step by step, each wgmma is a block of
// its own behind a branch, with its own warpgroup.arrive and descriptor moves.
template <typename T, int STEPS>
__device__ __forceinline__ void bwd_dq_product_run(float (&dq)[32], uint64_t dDS, uint64_t dK, int col0, int hi_last) {
  if (col0 + 16 * (STEPS - 1) <= hi_last) {
#pragma unroll
    for (int kk = 0; kk < STEPS; ++kk)
      wgmma_ss_mn<T>(dq, desc_add(dDS, uint32_t(kk * 2048)), desc_add(dK, uint32_t(kk * 2048)), kk > 0);
  } else {
    bwd_dq_product_desc<T, STEPS>(dq, dDS, dK, col0, hi_last);
  }
}
// 37: dQ_i = dS_ij K_j for all d = 128 columns by one warpgroup, STEPS k steps of 16 keys from key
// 0 (dDS: dS^T's first row; dK: K_j's first row, its panels LBO bytes apart), every step issued:
// dS is exactly 0 on keys no row of Q_i keeps (stored as such) and K_j finite, so those steps add
// zeros. Skipping them, as bwd_dq_product_desc does, puts a warpgroup.arrive behind each test, and
// inside the warpgroup's branch ptxas then serialises every wgmma of the kernel (C7520).
template <typename T, int STEPS>
__device__ __forceinline__ void bwd_dq_product_wide(float (&d0)[32], float (&d1)[32], uint64_t dDS, uint64_t dK) {
#pragma unroll
  for (int kk = 0; kk < STEPS; ++kk)
    wgmma_ss_mn<T>(d0, d1, desc_add(dDS, uint32_t(kk * 2048)), desc_add(dK, uint32_t(kk * 2048)), kk > 0);
}
// 34, 35: tau times this warp's m64n64 partial of dQ_i (rows 16 warp + g + 8 hr, columns cbase +
// 8 n + 2 t4, + 1) into a slab of D-float rows in the "quads" layout: within each group of 16
// columns q, column 16 q + 8 h + 2 t + e sits at 4 t + 2 h + e, and the groups of odd rows are
// swapped in pairs (q at q xor 1), so that a lane's four values of a row and group (its
// accumulator's n = 2m and 2m + 1) are one 16-byte store and a quarter-warp's eight stores (rows g,
// g + 1) fall on all 32 banks once. Rows stay whole, so the bulk add of the rows below Nq is
// unchanged. fa2_bwd_tc_dq_quads_to_type undoes the layout.
template <int D>
__device__ __forceinline__ void bwd_store_dq_slab_quads(float* slab, const float (&dq)[32], int cbase, int warp, int g,
                                                        int t4, float tau) {
#pragma unroll
  for (int hr = 0; hr < 2; ++hr)
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const int r = warp * 16 + g + 8 * hr, q = cbase / 16 + m;
      *reinterpret_cast<float4*>(slab + r * D + 16 * (q ^ (g & 1)) + 4 * t4) =
          make_float4(tau * dq[8 * m + 2 * hr], tau * dq[8 * m + 2 * hr + 1], tau * dq[8 * m + 4 + 2 * hr],
                      tau * dq[8 * m + 4 + 2 * hr + 1]);
    }
}

// 30, 31: a consumer warp's 16 rows of the accumulator acc (K_j's or V_j's rows krow0 ..,
// PANELS x 64 columns), times `scale` and rounded to the type, into a Bc x d tile laid out as the
// tensor map loads K_j (64-column panels of Bc 128-byte swizzled rows): the accumulator's 8-column
// groups pair up as the A fragments bwd_fragments makes of P^T, and a panel's four k steps are
// what bwd_stmatrix_ds_t stores into dS^T's panel of the same shape.
template <typename T, int PANELS>
__device__ __forceinline__ void bwd_stage_acc(uint32_t tile, float (&acc)[PANELS][32], float scale, int krow0, int lane) {
#pragma unroll
  for (int pn = 0; pn < PANELS; ++pn) {
#pragma unroll
    for (int e = 0; e < 32; ++e) acc[pn][e] *= scale;
    uint32_t a[4][4];
    bwd_fragments<T>(acc[pn], a);
    bwd_stmatrix_ds_t(tile + uint32_t(pn * 128 * 128), a, krow0, lane);
  }
}

// 43: tau times this warp's m64n64 partial of dQ_i (rows row0 + 16 warp + g + 8 hr, columns cbase +
// 8 n + 2 t4, + 1: dq[4 n + 2 hr + e]) added to the float32 accumulator dQ (row-major, D floats a
// row) four floats at a time: lane pairs (t4, t4 xor 1) swap half their values, so that an even t4
// holds row g's columns 8 n + 2 t4 .. + 3 (its own pair, then its partner's) and an odd t4 row
// g + 8's columns 8 n + 2 t4 - 2 .. + 1 (its partner's pair, then its own). Rows past nq are not
// written.
template <int D>
__device__ __forceinline__ void bwd_red_dq_v4(float* dQ, const float (&dq)[32], int row0, int nq, int cbase, int warp,
                                              int g, int t4, float tau) {
  const bool odd = t4 & 1;
  const int r = row0 + warp * 16 + g + (odd ? 8 : 0);
  float* dst = dQ + int64_t(r) * D + cbase + 2 * (t4 & ~1);
#pragma unroll
  for (int n = 0; n < 8; ++n) {
    const float x = __shfl_xor_sync(0xffffffffu, odd ? dq[4 * n] : dq[4 * n + 2], 1);
    const float y = __shfl_xor_sync(0xffffffffu, odd ? dq[4 * n + 1] : dq[4 * n + 3], 1);
    const float4 v = odd ? make_float4(x, y, dq[4 * n + 2], dq[4 * n + 3]) : make_float4(dq[4 * n], dq[4 * n + 1], x, y);
    if (r < nq) red_add4(dst + 8 * n, make_float4(tau * v.x, tau * v.y, tau * v.z, tau * v.w));
  }
}

// FA2b L10-L14 and L16 as bwd_block_products (gpu/fa2_bwd_wgmma_kernel.cuh) does them, the same
// products in the same order on the same operands (so dK and dV are the same bits), with the
// element-wise steps under the products (20, 21): S^T and dP^T are issued as two groups; the wait
// for S^T's leaves dP^T in flight while P^T is computed; dV~ += P^T dO_i is issued, and the wait
// for dP^T's leaves it in flight while dS^T is computed; dK~ += dS^T Q_i is issued after it. dV's
// and dK's groups are retired by the caller's wait for dQ's product. The registers at the peak are
// bwd_block_products' (P, P^T's fragments, dP^T, dV~, dK~): only their order in time changes.
template <typename T, class C>
__device__ __forceinline__ void bwd_block_products_overlap(float (&dk)[C::PANELS][32], float (&dv)[C::PANELS][32],
                                                           uint32_t (&dsa)[C::BR / 16][4], const BwdBlockOperands& op,
                                                           const float* sL2, const float* sD, float scale_log2,
                                                           bool partial, int key0, int row0, const RowLimit& lim, int g,
                                                           int t4) {
  constexpr int D = C::D, BR = C::BR, BC = C::BC, PANELS = C::PANELS;
  static_assert(C::DESC_ONCE, "the products from v12's base descriptors");
  float s[BR / 2], dp[BR / 2];
  fence_regs(s);
  fence_regs(dp);
  wgmma_fence();
  bwd_keys_by_queries_desc<T, D, BC, BR>(s, op.k_wg, op.q);  // FA2b L10: S_ij^T = K_j Q_i^T
  wgmma_commit();
  bwd_keys_by_queries_desc<T, D, BC, BR>(dp, op.v_wg, op.dO);  // FA2b L13: dP_ij^T = V_j dO_i^T
  wgmma_commit();
  wgmma_wait<1>();  // S^T's group retired; dP^T's in flight
  fence_regs(s);
  // FA2b L11: P_ij = exp2(S tau log2 e - L2_i); P^T rounded to the type into A fragments.
  bwd_probabilities<BR / 2, C::STATS_PERM>(s, sL2, scale_log2, partial, key0, row0, lim, g, t4);
  uint32_t pa[BR / 16][4];
  bwd_fragments<T>(s, pa);
#pragma unroll
  for (int pn = 0; pn < PANELS; ++pn) fence_regs(dv[pn]);
  wgmma_fence();
  bwd_keys_by_cols_desc<T, PANELS, BR, C::WIDE_KV>(dv, pa, op.dO);  // FA2b L12: dV~_j += P_ij^T dO_i
  wgmma_commit();
  wgmma_wait<1>();  // dP^T's group retired; dV's in flight
  fence_regs(dp);
  // FA2b L14: dS_ij^T = P^T o (dP^T - D_i) in float32, rounded once to the type.
  bwd_ds<BR / 2, C::STATS_PERM_D>(dp, s, sD, t4);
  bwd_fragments<T>(dp, dsa);
  // FA2b L16: dK~_j += dS_ij^T Q_i (tau at the end); left in flight while dS^T is stored.
#pragma unroll
  for (int pn = 0; pn < PANELS; ++pn) fence_regs(dk[pn]);
  wgmma_fence();
  bwd_keys_by_cols_desc<T, PANELS, BR, C::WIDE_KV>(dk, dsa, op.q);
  wgmma_commit();
}

// 46 (29 without S^T ahead, d = 128): K_j's A fragments of S_ij^T = K_j Q_i^T for this warp's 16
// keys, loaded once per K/V block by ldmatrix from K_j's 128-byte-swizzled panels (k step kd: 16
// columns, chunks 2 (kd mod 4) and + 1 of panel kd / 4): matrices (keys 0-7, 8-15) x (columns
// 0-7, 8-15) of the step, the wgmma A fragment's registers 0-3. krow0: the warp's first key row.
template <int D, int BC>
__device__ __forceinline__ void bwd_load_k_frags(uint32_t (&kf)[D / 16][4], uint32_t sK, int krow0, int lane) {
  const int r = krow0 + lane % 16;
#pragma unroll
  for (int kd = 0; kd < D / 16; ++kd) {
    const int c = 2 * (kd % 4) + lane / 16;
    const uint32_t addr = sK + uint32_t((kd / 4) * BC * 128 + r * 128 + ((c ^ (r & 7)) << 4));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(kf[kd][0]), "=r"(kf[kd][1]), "=r"(kf[kd][2]), "=r"(kf[kd][3])
                 : "r"(addr));
  }
}
// Two values of the type packed in one register (pack2's order: the first in the low half), as float.
template <typename T>
__device__ __forceinline__ float2 unpack2(uint32_t w);
template <>
__device__ __forceinline__ float2 unpack2<__nv_bfloat16>(uint32_t w) {
  return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xFFFF0000u));
}
template <>
__device__ __forceinline__ float2 unpack2<__half>(uint32_t w) {
  float2 v;
  asm("{\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %2;\ncvt.f32.f16 %0, lo;\ncvt.f32.f16 %1, hi;\n}\n" : "=f"(v.x), "=f"(v.y) : "r"(w));
  return v;
}
// 46: FA2b L14 with P as the dV product takes it, rounded to the type (P^T's A fragments pa: k step
// n / 2, registers 2 (n mod 2) and + 1 hold elements 4n .. 4n + 3): dS^T = P~^T o (dP^T - D_i), in
// place of dP^T. One more rounding of P than bwd_ds; the error bound's `p_rounded_in_ds`
// (core/backward_bound.h) covers it. Called by bwd_block_after_s where C::K_FRAG.
template <typename T, int N, int PERM>
__device__ __forceinline__ void bwd_ds_rounded_p(float (&dp)[N], const uint32_t (&pa)[N / 8][4], const float* sD, int t4) {
#pragma unroll
  for (int n = 0; n < N / 4; ++n) {
    const float2 dd = bwd_stat_pair<N, PERM>(sD, n, t4);
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // keys g (h = 0) and g + 8
      const float2 pv = unpack2<T>(pa[n / 2][2 * (n % 2) + h]);
      dp[4 * n + 2 * h] = pv.x * (dp[4 * n + 2 * h] - dd.x);
      dp[4 * n + 2 * h + 1] = pv.y * (dp[4 * n + 2 * h + 1] - dd.y);
    }
  }
}
// 46: FA2b L10, S_ij^T = K_j Q_i^T, with K_j's A fragments from the registers (kf,
// bwd_load_k_frags: 32 KiB of shared-memory reads fewer per Q block, of the about 366 KiB 29
// moves); bwd_block_after_s does the rest, with dS from P's fragments, which frees the 32
// registers kf takes.
template <typename T, class C>
__device__ __forceinline__ void bwd_s_from_k_frags(float (&s)[C::BR / 2], const uint32_t (&kf)[C::D / 16][4], uint64_t q) {
  constexpr int D = C::D, BR = C::BR;
  static_assert(BR == 64, "S^T on m64n64k16 with A from the registers");
  fence_regs(s);
  wgmma_fence();
#pragma unroll
  for (int kd = 0; kd < D / 16; ++kd)
    wgmma_rs_kb<T>(s, kf[kd], desc_add(q, uint32_t((kd / 4) * BR * 128 + (kd % 4) * 32)), kd > 0);
  wgmma_commit();
  wgmma_wait_all();
  fence_regs(s);
}

}  // namespace
}  // namespace flashstep::gpu::tc
