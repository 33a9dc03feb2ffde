// FlashAttention-2's backward on warpgroup MMA with the products pipelined (backward configuration
// 11, a ladder rung: gpu/ladder/bwd_wgmma_rungs.cu). The same work, tiles and grid as the default
// (configuration 9, gpu/fa2_bwd_wgmma_kernel.cuh: one block per K/V block j of Bc = 128 keys, two
// warpgroups of 64 keys each, Br = 64, all five products on wgmma, the grid's K/V blocks fastest),
// in another order, so that the tensor cores have work while the threads do the elementwise parts:
//
//   top of step t:  S_t^T = K_j Q_t^T issued; the previous step's dK and dQ products retire under
//                   it, and the previous dQ partial goes from the accumulator registers straight to
//                   HBM (red.global.add.v2.f32, no shared-memory slab, no barrier)
//                   dP_t^T = V_j dO_t^T issued; P_t = exp2(S tau log2 e - L2) computed under it
//                   dV~ += P_t^T dO_t issued; dS_t^T = P o (dP - D) computed under it
//                   dK~ += dS_t^T Q_t issued; dS^T stored to shared memory under it
//   barrier:        dS_t^T complete (both warpgroups' keys)
//                   dQ_t = dS_t K_j issued; Q_t+2, dO_t+2 requested; the loop goes on under it
//
// Against configuration 9: two block-wide barriers per Q block instead of three, no dQ slab (the
// shared memory goes to a third Q_i / dO_i buffer and a second dS^T buffer), and the exponentials
// and dS under the products. The buffers make the order safe: a Q_i / dO_i buffer is refilled
// (after step t's barrier) only when every warpgroup has retired the products that read it (at
// the top of step t), and the dS^T buffer of step t is written again at step t + 2.
//
// Registers: the A fragments of an in-flight rs product (P^T for dV, dS^T for dK) stay allocated
// until its wgmma.wait_group (ptxas tracks the asynchronous operands; it reports C7520 and
// serialises the products when it cannot).
#pragma once
#include "gpu/fa2_bwd_wgmma_kernel.cuh"

namespace flashstep::gpu::tc {

namespace {

template <int V_, int D_>
struct PipeBwdConfig {
  static constexpr int VARIANT = V_, D = D_, BR = 64, BC = 128, THREADS = 256, PANELS = D / 64;
  static constexpr int BUFS = 3;                                    // Q_i / dO_i / L2_i / D_i ring
  static constexpr bool DQ_KSPLIT = D == 64;                        // as configuration 9
  static constexpr int64_t SMEM_KV = int64_t(BC) * D * 2;           // K_j or V_j
  static constexpr int64_t SMEM_QI = int64_t(BR) * D * 2;           // Q_i or dO_i
  static constexpr int64_t SMEM_BUF = 2 * SMEM_QI + 2 * BR * 4;     // + L2_i, D_i
  static constexpr int64_t SMEM_BUF_PAD = (SMEM_BUF + 1023) / 1024 * 1024;
  static constexpr int64_t SMEM_DS = int64_t(BC) * BR * 2;          // dS_ij^T (keys x queries)
  static constexpr int64_t SMEM = 2 * SMEM_KV + BUFS * SMEM_BUF_PAD + 2 * SMEM_DS + 1024;
  static_assert(SMEM <= 227 * 1024, "fits in an H100/H200 block's shared memory");
};

// dst[0] += x, dst[1] += y in global memory where `on` (a predicate, not a branch: the caller's
// warps stay converged, which ptxas needs to keep the products in flight).
__device__ __forceinline__ void red_add2_if(bool on, float* dst, float x, float y) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %3, 0;\n@p red.global.add.v2.f32 [%0], {%1, %2};\n}\n" ::"l"(dst),
               "f"(x), "f"(y), "r"(int(on))
               : "memory");
}

template <typename T, class C>
__global__ void __launch_bounds__(C::THREADS, 1) fa2_bwd_pipe_kernel(const TcBwdParams p) {
  constexpr int D = C::D, BR = C::BR, BC = C::BC, PANELS = C::PANELS;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
  const uint32_t sK = smem_addr(smem), sV = sK + uint32_t(C::SMEM_KV), sBuf0 = sV + uint32_t(C::SMEM_KV);
  const uint32_t sDS0 = sBuf0 + uint32_t(C::BUFS * C::SMEM_BUF_PAD);
  const int tid = threadIdx.x, wg = tid / 128, warp = (tid / 32) % 4, lane = tid % 32, g = lane / 4, t4 = lane % 4;

  // The grid is (Tc, heads): the blocks at work at once share one head's Q_i, dO_i, dQ_i in L2.
  const int64_t h = blockIdx.y;
  const int j = int(blockIdx.x), col0 = j * BC;
  const int wkey0 = col0 + wg * 64, key0 = wkey0 + warp * 16;  // this warpgroup's and this warp's first key
  const BwdHead<T> hd = bwd_head<T, D, BR>(p, h, col0);
  const RowLimit lim = hd.lim;
  const int Tr = hd.Tr, i_first = hd.i_first, n_i = Tr - i_first;

  auto buf_addr = [&](int t) { return sBuf0 + uint32_t((t % C::BUFS) * C::SMEM_BUF_PAD); };
  auto load_i = [&](int t) {  // step t's Q block into its buffer
    const uint32_t b = buf_addr(t);
    const int i = i_first + t;
    cp_panels<BR, D, C::THREADS>(b, hd.Q, i * BR, p.fwd.nq, tid);
    cp_panels<BR, D, C::THREADS>(b + uint32_t(C::SMEM_QI), hd.dO, i * BR, p.fwd.nq, tid);
    load_stats<BR, C::THREADS>(b + uint32_t(2 * C::SMEM_QI), hd, i, tid);
  };

  // FA2b L6: K_j, V_j with the first Q block (one cp.async group); each step requests the next.
  if (n_i > 0) {
    cp_panels<BC, D, C::THREADS>(sK, hd.K, col0, p.fwd.nk, tid);
    cp_panels<BC, D, C::THREADS>(sV, hd.V, col0, p.fwd.nk, tid);
    load_i(0);
  }
  cp_async_commit();
  float dk[PANELS][32] = {}, dv[PANELS][32] = {};
  float dq[32] = {};
  uint32_t dsa[BR / 16][4];  // dS_ij^T of the previous step, the A fragments of dK's product
  const float scale_log2 = p.fwd.scale * kLog2e, tau = p.fwd.scale;

  // FA2b L16 and L15 of step t (issued at the start of step t + 1, after the barrier that
  // completes dS^T): dK~_j += dS_ij^T Q_i (A = dS^T in registers), dQ_i = dS_ij K_j (both from
  // shared memory, tau on the way out), one wgmma group. Every k step is issued: the dS^T rows
  // of keys no row keeps are 0 (the mask zeroed their P), so the products are exact.
  auto issue_dk_dq = [&](int t) {
    const uint32_t sQ = buf_addr(t), sDS = sDS0 + uint32_t((t & 1) * C::SMEM_DS);
    wgmma_fence();
    bwd_keys_by_cols<T, PANELS, BR>(dk, dsa, sQ);
    if constexpr (C::DQ_KSPLIT) {  // d = 64: this warpgroup's 64 keys, all 64 columns
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        wgmma_ss_mn<T>(dq, desc_sw128(sDS + uint32_t((wg * 64 + 16 * kk) * 128)),
                       desc_sw128(sK + uint32_t((wg * 64 + 16 * kk) * 128)), kk > 0);
    } else {  // d = 128: all 128 keys, this warpgroup's 64-column panel of K_j
#pragma unroll
      for (int kk = 0; kk < BC / 16; ++kk)
        wgmma_ss_mn<T>(dq, desc_sw128(sDS + uint32_t(kk * 2048)), desc_sw128(sK + uint32_t(wg * BC * 128 + kk * 2048)),
                       kk > 0);
    }
    wgmma_commit();
  };
  // tau dQ partial of step t's Q block from the accumulator to HBM (`any`: whether there is one):
  // rows 16 warp + g + 8 hr, columns cbase + 8 n + 2 t4, + 1 (d = 64: both warpgroups add their
  // K-split partials).
  auto add_dq = [&](int t, bool any) {
    const int cbase = C::DQ_KSPLIT ? 0 : wg * 64;
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const int row = (i_first + t) * BR + warp * 16 + g + 8 * hr;
      const bool in = any && row < p.fwd.nq;
      float* dst = hd.dQ + int64_t(in ? row : 0) * D + cbase + 2 * t4;
#pragma unroll
      for (int n = 0; n < 8; ++n) red_add2_if(in, dst + 8 * n, tau * dq[4 * n + 2 * hr], tau * dq[4 * n + 2 * hr + 1]);
    }
  };

  // FA2b L8, step t (Q block i_first + t). No wgmma group is in flight across the loop's back
  // edge or a branch (ptxas serialises every product, C7514/C7515, when one is): step t issues
  // step t - 1's dK and dQ products and retires them under its own S; step 0 (kFirst) has none.
  auto step = [&](auto first, int t) {
    constexpr bool kFirst = decltype(first)::value;
    const int row0 = (i_first + t) * BR;
    const uint32_t sQ = buf_addr(t), sdO = sQ + uint32_t(C::SMEM_QI), sDS = sDS0 + uint32_t((t & 1) * C::SMEM_DS);
    const float* sL2 = reinterpret_cast<const float*>(smem + (sQ - sK) + 2 * C::SMEM_QI);
    const float* sD = sL2 + BR;
    // Step t + 1's tiles into the buffer step t - 2 used (its products all retired in step t - 1).
    if (t + 1 < n_i) load_i(t + 1);
    cp_async_commit();
    if constexpr (!kFirst) issue_dk_dq(t - 1);
    // FA2b L9: Q_i, dO_i, L_i, D_i have landed (the next block's may still be in flight).
    cp_async_wait<1>();
    fence_proxy_async();
    __syncthreads();

    // FA2b L10: S_ij^T = K_j Q_i^T; under it, step t - 1's dQ partial goes to HBM.
    float s[32];
    wgmma_fence();
    bwd_keys_by_queries<T, D, BC, BR>(s, sK, sQ, wg);
    wgmma_commit();
    if constexpr (!kFirst) {
      wgmma_wait<1>();  // dK and dQ of step t - 1
      fence_regs(dq);
#pragma unroll
      for (int pn = 0; pn < PANELS; ++pn) fence_regs(dk[pn]);
      add_dq(t - 1, true);
    }
    // FA2b L13: dP_ij^T = V_j dO_i^T, issued before P is computed.
    float dp[32];
    wgmma_fence();
    bwd_keys_by_queries<T, D, BC, BR>(dp, sV, sdO, wg);
    wgmma_commit();
    wgmma_wait<1>();  // S
    fence_regs(s);
    // FA2b L11: P_ij = exp2(S tau log2 e - L2_i), P^T rounded to the type into A fragments.
    bwd_probabilities(s, sL2, scale_log2, key0 + 15 > lim.hi(row0), key0, row0, lim, g, t4);
    uint32_t pa[BR / 16][4];
    bwd_fragments<T>(s, pa);
    // FA2b L12: dV~_j += P_ij^T dO_i, issued before dS is computed.
    wgmma_fence();
    bwd_keys_by_cols<T, PANELS, BR>(dv, pa, sdO);
    wgmma_commit();
    wgmma_wait<1>();  // dP
    fence_regs(dp);
    // FA2b L14: dS_ij^T = P^T o (dP^T - D_i) in float32, rounded once to the type, and to
    // shared memory for L15.
    bwd_ds(dp, s, sD, t4);
    bwd_fragments<T>(dp, dsa);
    bwd_store_ds_t(sDS, dsa, wg * 64 + warp * 16 + g, t4);
    wgmma_wait<0>();  // dV
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn) fence_regs(dv[pn]);
    fence_proxy_async();  // dS^T, written by st.shared, is read next by the tensor cores
    __syncthreads();      // dS_ij^T complete
  };

  if (n_i > 0) step(std::true_type{}, 0);
  for (int t = 1; t < n_i; ++t) step(std::false_type{}, t);
  if (n_i > 0) {
    issue_dk_dq(n_i - 1);
    wgmma_wait<0>();
    fence_regs(dq);
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn) fence_regs(dk[pn]);
    add_dq(n_i - 1, true);
  }
  cp_async_wait<0>();

  // FA2b L18 (zeros for a block no row keeps).
  bwd_write_dk_dv<T, D, PANELS>(p, h, key0, g, t4, dk, dv);
}

template <class C>
void launch_bwd_pipe(const TcBwdParams& p) {
  static int64_t opted[2] = {0, 0};
  const unsigned Tc = unsigned((p.fwd.nk + C::BC - 1) / C::BC);
  launch_bwd_kernel(fa2_bwd_pipe_kernel<__nv_bfloat16, C>, fa2_bwd_pipe_kernel<__half, C>, p,
                    dim3(Tc, unsigned(p.fwd.heads)), C::THREADS, C::SMEM, opted);
}

template <class C>
TcBwdVariantInfo info_of_pipe() {
  return TcBwdVariantInfo{C::VARIANT,
                          "v9 pipelined: S and dP issued together, P and dS computed under the products, dQ added "
                          "from the accumulators (red.v2), two barriers per Q block, three Q_i buffers",
                          C::BR, C::BC, C::THREADS / 32, C::SMEM, true, true, false};
}

}  // namespace
}  // namespace flashstep::gpu::tc
