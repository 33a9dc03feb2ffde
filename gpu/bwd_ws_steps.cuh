// Steps of the warp-specialised backward (gpu/bwd_ws_kernel.cuh) beside its kernel: dS^T stored by
// stmatrix (22 on, the defaults among them), and the device helpers of single ladder rungs (30-35,
// 37, 43). Include only from files compiled for sm_90a.
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

}  // namespace
}  // namespace flashstep::gpu::tc
