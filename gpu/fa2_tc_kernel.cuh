// FlashAttention-2 forward on tensor cores: bf16 / fp16 inputs, float32 accumulators
// and statistics, O rounded once at the end, lse float32 (natural log). d = 64 and 128.
//
// One thread block per (Q block i, head); each warp owns 16 x MT rows of Q_i for the whole
// loop over j (FA2's split of Q_i across warps: no warp needs another's statistics, so there
// is no shared-memory exchange in the inner loop). Per j:
//   S_ij = Q_i K_j^T          mma.sync m16n8k16 (A = Q_i fragments, B = K_j through ldmatrix)
//   online softmax (L9)       in the S registers: each thread holds 2 rows x 2 columns of
//                             each 8-column tile, row max and row sum are quad shuffles;
//                             exp2 with tau log2(e) folded into one FFMA per score
//   O_i += P~_ij V_j (L10)    the S accumulator layout of two 8-column tiles *is* the A
//                             fragment layout of one k16 step: P~ is rounded to the input type
//                             in registers (no shared-memory round trip); V_j through
//                             ldmatrix.trans
// K_j and V_j arrive by cp.async (16 bytes per thread, bypassing L1 and registers) into a
// swizzled layout: 16-byte chunk c of row r lives at chunk c ^ (r mod 8), so the 8 rows an
// ldmatrix phase reads (one chunk column) fall in 8 different groups of 4 banks: no conflicts,
// without padding.
//
// Masks: causal (bottom-right: row r keeps keys <= r + Nk - Nq) and key padding (keys >=
// kv_len, per batch entry). The loop over j stops after the last block any row of Q_i keeps
// (block skipping); blocks every row keeps fully take no per-element mask; a row that keeps
// no key ends with l = 0: O = 0, lse = -inf. Causal grids run the longest Q blocks first.
// Out-of-range rows of Q, K, V are zero-filled by cp.async (src-size 0), so masked columns
// multiply zeros, never garbage.
//
//
// The kernel template of gpu/fa2_tc.cu (the default on GPUs other than compute capability 9.0)
// and gpu/ladder/fa2_tc_rungs.cu (the mma.sync ladder). A configuration (Config) is a set of
// traits: d, warps, rows per warp, Bc, K/V stages and the tweaks below. Everything is in an
// anonymous namespace: each including file gets its own copies of what it instantiates.
#pragma once
#include "gpu/common.cuh"
#include "gpu/tc_launch.h"
#include "gpu/tc_forward.cuh"
#include "gpu/tc_mma.cuh"
#include "gpu/tc_ptx.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace flashstep::gpu::tc {

namespace {

// ---- the kernel -------------------------------------------------------------------------------

// A variant's switches, combined with |: what the ladder's rungs turn on one by one.
enum Tweak : unsigned {
  kNoTweaks = 0,
  kQInRegisters = 1u << 0,  // Q_i fragments held in registers for the whole loop (else re-read from shared memory)
  // One barrier per j instead of two: the refill of the buffer block j - 1 used is issued
  // after the barrier that starts block j, which every warp passes only once done with j - 1.
  kOneBarrier = 1u << 1,
  kLazyRescale = 1u << 2,   // rescale O_i only when some row max of the warp moved
  // Causal grids as (head, Q block): the block scheduler hands out every head's longest Q block
  // before any head's second longest (longest processing time first over the whole grid).
  kLongestFirst = 1u << 3,
};
constexpr Tweak operator|(Tweak a, Tweak b) { return Tweak(unsigned(a) | unsigned(b)); }

template <int D_, int WARPS_, int MT_, int BC_, int STAGES_, Tweak TWEAKS_ = kNoTweaks, int MINB_ = 1>
struct Config {
  static constexpr int D = D_, WARPS = WARPS_, MT = MT_, BC = BC_, STAGES = STAGES_;
  static constexpr bool QREG = (TWEAKS_ & kQInRegisters) != 0;
  static constexpr int MINB = MINB_;   // blocks per SM the register allocation must allow
  static constexpr bool ONEBAR = (TWEAKS_ & kOneBarrier) != 0 && STAGES_ >= 2;
  static constexpr bool LAZY = (TWEAKS_ & kLazyRescale) != 0;
  static constexpr bool LPT = (TWEAKS_ & kLongestFirst) != 0;
  static constexpr int THREADS = 32 * WARPS, BR = 16 * MT * WARPS, CH = D / 8;
  static constexpr int64_t SMEM_Q = int64_t(BR) * D * 2, SMEM_KV = int64_t(BC) * D * 2;
  static constexpr int64_t SMEM = SMEM_Q + STAGES * 2 * SMEM_KV;
};


template <typename T, class C>
__global__ void __launch_bounds__(C::THREADS, C::MINB) fa2_tc_kernel(const TcParams p) {
  constexpr int D = C::D, MT = C::MT, BC = C::BC, BR = C::BR, CH = C::CH, NT = BC / 8, DT = D / 8;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t sQ = smem_addr(smem), sKV = sQ + uint32_t(C::SMEM_Q);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t4 = lane % 4;

  // grid (heads, Tr) with kLongestFirst: see Tweak
  const ForwardBlock<T, D, BR, BC> fb(p, C::LPT && p.mask.causal);
  const int64_t h = fb.h;
  const int row0 = fb.row0, n_blocks = fb.n_blocks;
  const RowLimit& lim = fb.lim;
  // This warp's rows: the first keeps the fewest keys (hi grows with r); rows >= nq are padding.
  const int wrow0 = row0 + warp * 16 * MT;
  const bool warp_live = wrow0 < p.nq;
  const int warp_hi_min = lim.hi(min(wrow0, p.nq - 1));
  const int warp_hi_max = lim.hi(min(wrow0 + 16 * MT - 1, p.nq - 1));
  int row_hi[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) row_hi[mt][hr] = lim.hi(wrow0 + mt * 16 + g + 8 * hr);

  auto load_kv = [&](int j) {
    const uint32_t buf = sKV + uint32_t((j % C::STAGES) * 2 * C::SMEM_KV);
    load_tile<BC, D, C::THREADS>(buf, fb.Kh, j * BC, p.nk, tid);
    load_tile<BC, D, C::THREADS>(buf + uint32_t(C::SMEM_KV), fb.Vh, j * BC, p.nk, tid);
  };

  // FA2fwd L4: load Q_i from HBM to SRAM, then the first STAGES - 1 K_j, V_j.
  issue_first_loads<C::STAGES>([&] { load_tile<BR, D, C::THREADS>(sQ, fb.Qh, row0, p.nq, tid); }, load_kv, n_blocks);
  cp_async_wait<C::STAGES - 1>();  // Q_i has landed
  __syncthreads();

  // The A fragments of this warp's rows of Q_i (ldmatrix.x4: lanes 0-15 address rows 0-15 at
  // column 0 of the k16 step, lanes 16-31 the same rows at column 8).
  auto q_frag = [&](uint32_t (&a)[4], int mt, int kd) {
    ldmatrix_x4(a, sQ + swz<CH>(warp * 16 * MT + mt * 16 + lane % 16, kd * 2 + lane / 16));
  };
  uint32_t qf[C::QREG ? MT : 1][C::QREG ? D / 16 : 1][4];
  if constexpr (C::QREG) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int kd = 0; kd < D / 16; ++kd) q_frag(qf[mt][kd], mt, kd);
  }

  // FA2fwd L5: on chip, O_i = 0, l_i = 0, m_i = -inf (m in units of tau log2(e) S).
  float o[MT][DT][4];
  float m_i[MT][2], l_i[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int n = 0; n < DT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mt][n][e] = 0.0f;
    m_i[mt][0] = m_i[mt][1] = -INFINITY;
    l_i[mt][0] = l_i[mt][1] = 0.0f;
  }
  const float scale_log2 = p.scale * kLog2e;

  // FA2fwd L6: for 1 <= j <= Tc (only the blocks some row keeps).
  for (int j = 0; j < n_blocks; ++j) {
    // FA2fwd L7: load K_j, V_j from HBM to SRAM: issue block j + STAGES - 1, wait for block j.
    if constexpr (C::ONEBAR) {
      cp_async_wait<C::STAGES - 2>();
      __syncthreads();
      if (j + C::STAGES - 1 < n_blocks) load_kv(j + C::STAGES - 1);
      cp_async_commit();
    } else {
      if (j + C::STAGES - 1 < n_blocks) load_kv(j + C::STAGES - 1);
      cp_async_commit();
      cp_async_wait<C::STAGES - 1>();
      __syncthreads();
    }
    const int col0 = j * BC;
    if (warp_live && col0 <= warp_hi_max) {  // else every row of this warp masks the whole block
      const uint32_t sK = sKV + uint32_t((j % C::STAGES) * 2 * C::SMEM_KV), sV = sK + uint32_t(C::SMEM_KV);

      // FA2fwd L8: on chip, S_ij = Q_i K_j^T (float32 accumulators).
      float s[MT][NT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][n][e] = 0.0f;
      auto s_step = [&](int kd) {
        uint32_t qa[C::QREG ? 1 : MT][4];
        if constexpr (!C::QREG) {
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) q_frag(qa[mt], mt, kd);
        }
#pragma unroll
        for (int np = 0; np < NT / 2; ++np) {
          // Keys np*16 + 0..15 at d columns kd*16 + 0..15: matrices (keys 0-7, cols 0-7),
          // (0-7, 8-15), (8-15, 0-7), (8-15, 8-15) = B fragments of column tiles 2np, 2np+1.
          uint32_t b[4];
          ldmatrix_x4(b, sK + swz<CH>(np * 16 + (lane / 16) * 8 + lane % 8, kd * 2 + (lane / 8) % 2));
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            if constexpr (C::QREG) {
              mma16816<T>(s[mt][2 * np], qf[mt][kd], b[0], b[1]);
              mma16816<T>(s[mt][2 * np + 1], qf[mt][kd], b[2], b[3]);
            } else {
              mma16816<T>(s[mt][2 * np], qa[mt], b[0], b[1]);
              mma16816<T>(s[mt][2 * np + 1], qa[mt], b[2], b[3]);
            }
          }
        }
      };
      if constexpr (C::QREG) {
#pragma unroll
        for (int kd = 0; kd < D / 16; ++kd) s_step(kd);
      } else {
        // Not unrolled: nothing is indexed by kd, and it keeps ptxas from hoisting every k
        // step's fragments at once (which spilled at 32 rows per warp, d = 128).
#pragma unroll 1
        for (int kd = 0; kd < D / 16; ++kd) s_step(kd);
      }

      // Algorithm 2: scores of masked keys (and of padding columns past Nk) are -inf.
      if (col0 + BC - 1 > warp_hi_min) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int n = 0; n < NT; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              if (col0 + n * 8 + 2 * t4 + (e & 1) > row_hi[mt][e / 2]) s[mt][n][e] = -INFINITY;
      }

      // FA2fwd L9: m_ij = max(m_i, rowmax(S_ij)), P~_ij = exp(S_ij - m_ij),
      // l_ij = e^(m_i - m_ij) l_i + rowsum(P~_ij); each row lives in one quad of lanes.
      uint32_t pa[MT][BC / 16][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        float alphas[2];
#pragma unroll
        for (int hr = 0; hr < 2; ++hr)
          alphas[hr] = online_softmax_row<2 * NT>([&](int k) -> float& { return s[mt][k / 2][2 * hr + k % 2]; },
                                                  m_i[mt][hr], l_i[mt][hr], scale_log2);
        // FA2fwd L10, first half: diag(e^(m_i - m_ij)) O_i. With LAZY, skipped when no row max
        // of the warp moved (alpha = 1 exactly): after the first blocks that is most j.
        if (!C::LAZY || __any_sync(0xffffffffu, alphas[0] != 1.0f || alphas[1] != 1.0f)) {
#pragma unroll
          for (int n = 0; n < DT; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) o[mt][n][e] *= alphas[e / 2];
        }
        // P~_ij rounded to the input type, straight into A fragments: column tiles 2kk, 2kk+1
        // of the accumulator are (k 0-7, k 8-15) of k-step kk, rows g and g + 8.
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk) {
          pa[mt][kk][0] = pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
          pa[mt][kk][1] = pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
          pa[mt][kk][2] = pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
          pa[mt][kk][3] = pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
        }
      }

      // FA2fwd L10, second half: O_i += P~_ij V_j. V_j is (key x d) row-major, the B operand
      // wants (k = key) x (n = d) column-major: ldmatrix.trans of keys kk*16 + 0..15 at
      // columns dp*16 + 0..15 gives the B fragments of d tiles 2dp and 2dp+1.
#pragma unroll
      for (int kk = 0; kk < BC / 16; ++kk)
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, sV + swz<CH>(kk * 16 + lane % 16, dp * 2 + lane / 16));
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma16816<T>(o[mt][2 * dp], pa[mt][kk], b[0], b[1]);
            mma16816<T>(o[mt][2 * dp + 1], pa[mt][kk], b[2], b[3]);
          }
        }
    }
    if constexpr (!C::ONEBAR) __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  cp_async_wait<0>();

  // FA2fwd L12: O_i = diag(l_i)^-1 O_i; L13: L_i = m_i + log(l_i); L14, L15: write O_i and L_i.
  T* Oh = static_cast<T*>(p.O) + h * p.nq * D;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const float l = quad_row_sum(l_i[mt][hr]);
      const int r = wrow0 + mt * 16 + g + 8 * hr;
      if (r >= p.nq) continue;
      const float inv = row_inverse(l);
      uint32_t* out = reinterpret_cast<uint32_t*>(Oh + int64_t(r) * D + 2 * t4);
#pragma unroll
      for (int n = 0; n < DT; ++n)
        out[n * 4] = pack2<T>(o[mt][n][2 * hr] * inv, o[mt][n][2 * hr + 1] * inv);
      write_row_lse(p, h, r, m_i[mt][hr], l, t4);
    }
}

// ---- the ladder -------------------------------------------------------------------------------

struct Entry {
  int variant, d;
  const char* what;
  int Br, Bc, warps, stages;
  int64_t smem;
  void (*launch)(const TcParams&);
};

template <class C>
void launch_config(const TcParams& p) {
  static int64_t opted[2] = {0, 0};
  launch_tc_kernel(fa2_tc_kernel<__nv_bfloat16, C>, fa2_tc_kernel<__half, C>, p, C::BR, C::THREADS, C::SMEM,
                   C::LPT && p.mask.causal, opted);
}

template <int V, class C>
constexpr Entry entry(const char* what) {
  return Entry{V, C::D, what, C::BR, C::BC, C::WARPS, C::STAGES, C::SMEM, &launch_config<C>};
}

//                        D, warps, MT, Bc, stages, tweaks[, blocks per SM]
}  // namespace
}  // namespace flashstep::gpu::tc
