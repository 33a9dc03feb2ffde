// Rungs 13 and 14 of the tensor-core ladder (gpu/ladder/NOTES.md): the first Hopper rungs. FlashAttention-2
// forward on warpgroup MMA (wgmma.mma_async, sm_90a only; this file is compiled for 90a alone
// and built only with -DFLASHSTEP_LADDER=ON: see gpu/ladder/CMakeLists.txt).
//
// What changes against v11 (gpu/fa2_tc.cu): the operands no longer pass through ldmatrix.
// A warpgroup (4 warps, 128 threads) issues one m64n64k16 instruction for 64 rows of Q_i:
//   S_ij = Q_i K_j^T     both operands read by the tensor cores straight from shared memory
//                        through 64-bit matrix descriptors (K-major, 128-byte swizzle)
//   O_i += P~_ij V_j     A = P~_ij from registers (the S accumulator layout is the A fragment
//                        layout, as with mma.sync), B = V_j from shared memory read transposed
//                        (MN-major: V_j stays (key x d) row-major as it arrives)
// The online softmax, the masks, the block skipping and the epilogue are v11's, per warp.
// Shared memory tiles are 64-column panels of 128-byte rows, 16-byte chunk c of row r at chunk
// c ^ (r mod 8): wgmma's 128B swizzle, which needs every panel 1024-byte aligned; groups of 8
// rows are 1024 bytes apart (the descriptor's stride byte offset).
// Loads: cp.async, two K/V buffers, one barrier per j (v7); writes by cp.async are made visible
// to the tensor cores' async proxy by fence.proxy.async before the barrier.
// Two warpgroups per block (Br = 128): each owns 64 rows of Q_i, K_j and V_j are shared.
//   13  Bc = 64: S_ij is one m64n64 tile per warpgroup (32 registers a thread).
//   14  Bc = 128: S_ij is m64n128 (64 registers), twice the MMA work per wait and per barrier.
#include "gpu/common.cuh"
#include "gpu/tc_forward.cuh"
#include "gpu/tc_launch.h"
#include "gpu/tc_ptx.cuh"
#include "gpu/wgmma_ptx.cuh"

namespace flashstep::gpu::tc {

namespace {

// Byte offset of 16-byte chunk c (of D / 8) of row r in a ROWS-row tile of 64-column panels.
template <int ROWS>
__device__ __forceinline__ uint32_t panel_off(int r, int c) {
  return uint32_t((c / 8) * ROWS * 128 + r * 128 + (((c % 8) ^ (r & 7)) * 16));
}

// ROWS x D tile of a (n x D) row-major tensor starting at row `row0`; rows >= n are zeros.
template <int ROWS, int D, int THREADS, typename T>
__device__ __forceinline__ void load_panels(uint32_t dst, const T* base, int row0, int n, int tid) {
  constexpr int CH = D / 8;
  static_assert((ROWS * CH) % THREADS == 0, "whole tiles per thread");
#pragma unroll
  for (int k = 0; k < ROWS * CH / THREADS; ++k) {
    const int e = tid + k * THREADS, r = e / CH, c = e % CH;
    const bool ok = row0 + r < n;
    cp_async16(dst + panel_off<ROWS>(r, c), base + (ok ? int64_t(row0 + r) * D + c * 8 : 0), ok ? 16 : 0);
  }
}

template <int V_, int D_, int BC_, int WG_, int STAGES_>
struct WgConfig {
  static constexpr int VARIANT = V_, D = D_, WG = WG_, STAGES = STAGES_, BC = BC_;
  static constexpr int THREADS = 128 * WG, BR = 64 * WG, PANELS = D / 64;
  static constexpr int64_t SMEM_Q = int64_t(BR) * D * 2, SMEM_KV = int64_t(BC) * D * 2;
  // + 1024: the dynamic shared memory is aligned up to the swizzle atom by hand.
  static constexpr int64_t SMEM = SMEM_Q + STAGES * 2 * SMEM_KV + 1024;
};

template <typename T, class C>
__global__ void __launch_bounds__(C::THREADS, 1) fa2_wgmma_kernel(const TcParams p) {
  constexpr int D = C::D, BC = C::BC, BR = C::BR, PANELS = C::PANELS;
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t sQ = (smem_addr(smem) + 1023u) & ~1023u, sKV = sQ + uint32_t(C::SMEM_Q);
  const int tid = threadIdx.x, wg = tid / 128, warp = (tid / 32) % 4, lane = tid % 32, g = lane / 4,
            t4 = lane % 4;

  const ForwardBlock<T, D, BR, BC> fb(p, p.mask.causal);  // v11's grid
  const int64_t h = fb.h;
  const int row0 = fb.row0, n_blocks = fb.n_blocks;
  const RowLimit& lim = fb.lim;
  // wgmma is issued by the whole warpgroup: the skip test is per warpgroup, the mask per warp.
  const int wg_row0 = row0 + wg * 64, wrow0 = wg_row0 + warp * 16;
  const bool wg_live = wg_row0 < p.nq;
  const int wg_hi_max = lim.hi(min(wg_row0 + 63, p.nq - 1));
  const int warp_hi_min = lim.hi(min(wrow0, p.nq - 1));
  const int row_hi[2] = {lim.hi(wrow0 + g), lim.hi(wrow0 + g + 8)};

  auto load_kv = [&](int j) {
    const uint32_t buf = sKV + uint32_t((j % C::STAGES) * 2 * C::SMEM_KV);
    load_panels<BC, D, C::THREADS>(buf, fb.Kh, j * BC, p.nk, tid);
    load_panels<BC, D, C::THREADS>(buf + uint32_t(C::SMEM_KV), fb.Vh, j * BC, p.nk, tid);
  };

  // FA2fwd L4: load Q_i from HBM to SRAM, then the first STAGES - 1 K_j, V_j.
  issue_first_loads<C::STAGES>([&] { load_panels<BR, D, C::THREADS>(sQ, fb.Qh, row0, p.nq, tid); }, load_kv, n_blocks);

  // FA2fwd L5: on chip, O_i = 0, l_i = 0, m_i = -inf (m in units of tau log2(e) S).
  float o[PANELS][32];
#pragma unroll
  for (int pn = 0; pn < PANELS; ++pn)
#pragma unroll
    for (int k = 0; k < 32; ++k) o[pn][k] = 0.0f;
  float m_i[2] = {-INFINITY, -INFINITY}, l_i[2] = {0.0f, 0.0f};
  const float scale_log2 = p.scale * kLog2e;

  // FA2fwd L6: for 1 <= j <= Tc (only the blocks some row keeps).
  for (int j = 0; j < n_blocks; ++j) {
    // FA2fwd L7: wait for K_j, V_j (and Q_i), then refill the buffer block j - 1 used.
    cp_async_wait<C::STAGES - 2>();
    fence_proxy_async();
    __syncthreads();
    if (j + C::STAGES - 1 < n_blocks) load_kv(j + C::STAGES - 1);
    cp_async_commit();

    const int col0 = j * BC;
    if (!wg_live || col0 > wg_hi_max) continue;  // every row of this warpgroup masks block j
    const uint32_t sK = sKV + uint32_t((j % C::STAGES) * 2 * C::SMEM_KV), sV = sK + uint32_t(C::SMEM_KV);

    // FA2fwd L8: on chip, S_ij = Q_i K_j^T: D / 16 k-steps of 32 bytes along each 128-byte row.
    float s[BC / 2];
    fence_regs(s);
    wgmma_fence();
#pragma unroll
    for (int kd = 0; kd < D / 16; ++kd) {
      const uint32_t koff = uint32_t((kd % 4) * 32);  // 32 bytes into the panel's 128-byte rows
      const uint64_t a = desc_sw128(sQ + uint32_t((kd / 4) * BR * 128 + wg * 64 * 128) + koff);
      const uint64_t b = desc_sw128(sK + uint32_t((kd / 4) * BC * 128) + koff);
      wgmma_ss<T>(s, a, b, kd > 0);
    }
    wgmma_commit();
    wgmma_wait_all();
    fence_regs(s);

    // The mask, FA2fwd L9 and the first half of L10; P~_ij into A fragments.
    uint32_t pa[BC / 16][4];
    softmax_to_fragments<T, BC, PANELS>(s, o, pa, m_i, l_i, scale_log2, col0, warp_hi_min, row_hi, t4);

    // FA2fwd L10, second half: O_i += P~_ij V_j, one m64n64k16 per (16 keys, 64-column panel of
    // d); 16 keys are 16 rows of 128 bytes (2048 bytes) of V_j's panel.
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn) fence_regs(o[pn]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk)
#pragma unroll
      for (int pn = 0; pn < PANELS; ++pn)
        wgmma_rs<T>(o[pn], pa[kk], desc_sw128(sV + uint32_t(pn * BC * 128 + kk * 2048)), 1);
    wgmma_commit();
    wgmma_wait_all();
#pragma unroll
    for (int pn = 0; pn < PANELS; ++pn) fence_regs(o[pn]);
  }
  cp_async_wait<0>();

  write_o_lse<T, D, PANELS>(p, h, wrow0, g, t4, o, m_i, l_i);  // FA2fwd L12-L15
}

template <class C>
void launch_wgmma(const TcParams& p) {
  static int64_t opted[2] = {0, 0};
  launch_tc_kernel(fa2_wgmma_kernel<__nv_bfloat16, C>, fa2_wgmma_kernel<__half, C>, p, C::BR, C::THREADS,
                   C::SMEM, p.mask.causal, opted);
}

//                 variant, D, Bc, warpgroups, K/V buffers
using V13d64 = WgConfig<13, 64, 64, 2, 2>;
using V13d128 = WgConfig<13, 128, 64, 2, 2>;
using V14d64 = WgConfig<14, 64, 128, 2, 2>;
using V14d128 = WgConfig<14, 128, 128, 2, 2>;

template <class C>
TcVariantInfo info_of(const char* what) {
  return TcVariantInfo{C::VARIANT, what, C::BR, C::BC, C::THREADS / 32, C::STAGES, C::SMEM, true, true};
}

}  // namespace

TcVariantInfo fa2_wgmma_variant(int variant, int d) {
  const char* v13 = "wgmma (sm_90a): 2 warpgroups x 64 rows, Bc 64, Q/K/V 128B-swizzled, P from registers";
  const char* v14 = "v13 with Bc 128";
  if (variant == 13 && d == 64) return info_of<V13d64>(v13);
  if (variant == 13 && d == 128) return info_of<V13d128>(v13);
  if (variant == 14 && d == 64) return info_of<V14d64>(v14);
  if (variant == 14 && d == 128) return info_of<V14d128>(v14);
  return TcVariantInfo{};
}

void fa2_wgmma_launch(int variant, const TcParams& p) {
  if (variant == 13 && p.d == 64) return launch_wgmma<V13d64>(p);
  if (variant == 13 && p.d == 128) return launch_wgmma<V13d128>(p);
  if (variant == 14 && p.d == 64) return launch_wgmma<V14d64>(p);
  if (variant == 14 && p.d == 128) return launch_wgmma<V14d128>(p);
  throw std::runtime_error("fa2_wgmma_launch: no kernel for variant " + std::to_string(variant) +
                           ", d = " + std::to_string(p.d));
}

}  // namespace flashstep::gpu::tc
