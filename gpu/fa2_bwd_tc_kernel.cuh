// The kernel template of FlashAttention-2's backward on mma.sync (m16n8k16), shared by
// gpu/fa2_bwd_tc.cu (configuration 2, the default on GPUs other than compute capability 9.0)
// and gpu/ladder/bwd_tc_rungs.cu (rungs 1, 3, 4). Everything is in an anonymous namespace.
//
// FlashAttention-2's backward (Dao 2023, Algorithm 2) on tensor cores: bf16 / fp16 Q, K, V, O,
// dO; float32 accumulators, D, L and dQ; mma.sync m16n8k16 (the forward's building blocks,
// gpu/tc_mma.cuh). d = 64 and 128. The CPU engine steps the same arithmetic with --p-dtype
// (core/schedules/fa2/backward.cpp): P_ij and dS_ij are rounded to the 16-bit type before their
// matmuls, nothing else is.
//
// Pre-kernel (FA2b L4): D = rowsum(dO o O), one warp per row, and L2 = lse log2(e) (+inf for a
// row that keeps no key and for padding rows past Nq, so exp2(S - L2) is exactly 0 there).
//
// Main kernel: one thread block per (head, K/V block j) (FA2b L5: the outer loop over j is the
// grid); each warp owns 16 keys of K_j, V_j and their rows of dK~_j, dV~_j (registers, float32)
// for the whole loop over i. Per Q block i (FA2b L8), Q_i, dO_i, L_i, D_i arrive by cp.async
// into one of two buffers while block i - 1 is computed. Per warp, with keys as the MMA's rows
// (the transposed products, so that the accumulators of one product are the A operand of the
// next, as P~ is in the forward):
//   S_ij^T = K_j Q_i^T                  A = K_j (ldmatrix), B = Q_i rows (ldmatrix)
//   P_ij^T = exp2(S^T tau log2 e - L2)  in the S registers; masked keys 0 (FA2b L11)
//   dV~_j += P_ij^T dO_i                P^T rounded to the type in registers: the accumulator
//                                       layout of two 8-column tiles is one k16 A fragment
//                                       (FA2b L12); B = dO_i by ldmatrix.trans
//   dP_ij^T = V_j dO_i^T                (FA2b L13)
//   dS_ij^T = P^T o (dP^T - D_i)        float32 P, rounded once to the type (FA2b L14)
//   dK~_j += dS_ij^T Q_i                (FA2b L16; tau applied once, at the end)
//   dS_ij^T -> shared memory; barrier; dQ_i += tau dS_ij K_j with warps over rows (and d
//   columns) of Q_i, A = dS by ldmatrix.trans, B = K_j by ldmatrix.trans, added to the float32
//   dQ accumulator in HBM by vector atomics (FA2b L15: other K/V blocks add to the same rows
//   at the same time, Dao-AILab/flash-attention#815).
// FA2b L18: dK_j = tau dK~_j, dV_j = dV~_j rounded once to the type and written.
// After the main kernel, dQ (float32) is converted to the type (gpu/convert.cu's to_storage).
//
// Masks (causal bottom-right, key padding): block j starts at the first Q block with a row that
// keeps one of its keys (block skipping; a K/V block no row keeps writes dK_j = dV_j = 0); a
// warp whose 16 keys no row of Q_i keeps skips its math and writes zeros for its rows of dS;
// only blocks some row partly masks pay the per-element test. Rows past Nq are zero-filled by
// cp.async and have L2 = +inf; keys past Nk are zero-filled and masked.
//
// The ladder (gpu/ladder/notes/tensor-cores.md, "The backward ladder"):
//   1  4 warps x 16 keys (Bc 64), Br 64, two Q_i/dO_i buffers, two barriers per i; d = 64 holds
//      the warp's K_j, V_j fragments in registers, d = 128 re-reads them from shared memory.
//   2  8 warps x 16 keys (Bc 128), Br 64: Q_i, dO_i loaded once for twice the keys (half the
//      shared-memory traffic per FLOP for their fragments); dQ's product split over 4 row
//      groups x 2 column halves.
//   3  d = 64 only: v2 with Br 128 (twice the work per barrier), K_j, V_j fragments re-read.
//   4  v2 with dQ's atomic adds four floats wide (red.global.add.v4.f32 on sm_90): lane pairs
//      swap half their dQ accumulators so each lane holds four consecutive columns of one row.
//   5  wgmma (sm_90a), in gpu/fa2_bwd_wgmma.cu: 2 warpgroups x 64 keys, Br 64, every product
//      from shared-memory descriptors; opt-in (--variant 5) until measured.
//   6  v5 with dQ's product on mma.sync (ldmatrix.trans, as v2): the fallback should v5's
//      MN-major A operand misbehave; opt-in (--variant 6).
//   7  v5 with dQ added to HBM by the bulk copy engine (cp.reduce.async.bulk, FlashAttention-3's
//      dQ accumulation) from two alternating slabs, one thread issuing; opt-in (--variant 7).
//   8  d = 64 only: v7 with the two warpgroups apart within a Q block (a named barrier each for
//      its own rows of dS^T, one bulk add each); opt-in (--variant 8).
#pragma once
#include "gpu/bwd_tc_block.cuh"
#include "gpu/bwd_tc_launch.h"
#include "gpu/common.cuh"
#include "gpu/storage.cuh"
#include "gpu/tc_mma.cuh"
#include "gpu/tc_ptx.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>
#include <string>

namespace flashstep::gpu::tc {

namespace {

constexpr int kRowPad = 128;  // rows_pad: Nq rounded up to this (every Br divides it)

// Two float32 adds to consecutive addresses in one instruction where the GPU has it (sm_90).
__device__ __forceinline__ void atomic_add2(float* dst, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(dst), "f"(a), "f"(b) : "memory");
#else
  atomicAdd(dst, a);
  atomicAdd(dst + 1, b);
#endif
}

__device__ __forceinline__ void atomic_add4(float* dst, float4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float4*>(dst), v);  // red.global.add.v4.f32
#else
  atomic_add2(dst, v.x, v.y);
  atomic_add2(dst + 2, v.z, v.w);
#endif
}

template <typename T>
__device__ __forceinline__ float2 to_float2(uint32_t v);
template <>
__device__ __forceinline__ float2 to_float2<__nv_bfloat16>(uint32_t v) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&v));
}
template <>
__device__ __forceinline__ float2 to_float2<__half>(uint32_t v) {
  return __half22float2(*reinterpret_cast<const __half2*>(&v));
}

// ---- FA2b L3 and L4: dQ's accumulator zeroed; D = rowsum(dO o O), and L2 = lse log2(e) ------

// One pass over the rows (heads x rows_pad): per row, D and L2 for the loop, and the row's d
// floats of dq_acc set to zero (FA2b L3; rows past Nq have none). A row is d / 8 lanes, each
// reading one 16-byte chunk (8 elements) of O and of dO and zeroing two 16-byte chunks of dq_acc;
// each thread takes two rows, ROWS apart, with all four loads issued before either sum. The zeros
// go out beside reads of the same bytes, where a separate memset pass would cost its own time.
template <typename T, int D>
__global__ void __launch_bounds__(256) prepare_kernel(const T* __restrict__ dO, const T* __restrict__ O,
                                                      const float* __restrict__ lse, float* __restrict__ Dvec,
                                                      float* __restrict__ L2, float* __restrict__ dq_acc, int heads,
                                                      int nq, int rows_pad) {
  constexpr int LANES = D / 8, ROWS = 256 / LANES, UNROLL = 2;
  static_assert(D % 8 == 0 && 32 % LANES == 0, "a row is a whole number of lanes within a warp");
  const int sub = int(threadIdx.x) % LANES;
  const int64_t rows = int64_t(heads) * rows_pad;
  const int64_t first = int64_t(blockIdx.x) * (ROWS * UNROLL) + threadIdx.x / LANES;
  uint4 o[UNROLL], g[UNROLL];
  bool real[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const int64_t row = first + u * ROWS;
    const int r = int(row % rows_pad);
    real[u] = row < rows && r < nq;
    o[u] = g[u] = make_uint4(0, 0, 0, 0);
    if (real[u]) {
      const int64_t at = ((row / rows_pad) * nq + r) * D + sub * 8;
      o[u] = *reinterpret_cast<const uint4*>(O + at);
      g[u] = *reinterpret_cast<const uint4*>(dO + at);
    }
  }
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const int64_t row = first + u * ROWS;
    const int r = int(row % rows_pad);
    if (real[u]) {  // FA2b L3: this row of dQ = 0
      float4* z = reinterpret_cast<float4*>(dq_acc + ((row / rows_pad) * nq + r) * D) + sub;
      z[0] = z[LANES] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
    const uint32_t ow[4] = {o[u].x, o[u].y, o[u].z, o[u].w}, gw[4] = {g[u].x, g[u].y, g[u].z, g[u].w};
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 a = to_float2<T>(ow[k]), b = to_float2<T>(gw[k]);
      sum = fmaf(a.x, b.x, fmaf(a.y, b.y, sum));
    }
#pragma unroll
    for (int off = LANES / 2; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (sub == 0 && row < rows) {
      if (r >= nq) {  // padding rows: P = exp2(S - inf) = 0, D = 0
        Dvec[row] = 0.0f;
        L2[row] = INFINITY;
      } else {
        Dvec[row] = sum;
        const float l = lse[(row / rows_pad) * nq + r];
        // A row that keeps no key has lse = -inf and zero gradient: L2 = +inf makes its P exactly 0.
        L2[row] = l == -INFINITY ? INFINITY : l * kLog2e;
      }
    }
  }
}

// ---- the main kernel ----------------------------------------------------------------------------

template <int D_, int WARPS_, int BR_, bool KVREG_, bool DQV4_ = false>
struct BwdConfig {
  static constexpr int D = D_, WARPS = WARPS_, BR = BR_;
  static constexpr bool KVREG = KVREG_;  // the warp's K_j, V_j A fragments held in registers
  // dQ's atomics four floats at a time: lanes 2k and 2k + 1 swap half their accumulators so that
  // each holds four consecutive columns of one row (half the atomic instructions of v2's pairs).
  static constexpr bool DQV4 = DQV4_;
  static constexpr int BC = 16 * WARPS, THREADS = 32 * WARPS, CH = D / 8, CHS = BR / 8;
  // dQ_i += dS K_j: warps over RG groups of 16 rows of Q_i and CG groups of DQN columns of d.
  static constexpr int RG = BR / 16, CG = WARPS / RG, DQN = D / CG;
  static_assert(WARPS % RG == 0 && DQN % 16 == 0, "dQ's warp split");
  static constexpr int64_t SMEM_KV = int64_t(BC) * D * 2;   // K_j or V_j
  static constexpr int64_t SMEM_QI = int64_t(BR) * D * 2;   // Q_i or dO_i
  static constexpr int64_t SMEM_STAT = int64_t(BR) * 4;     // L2_i or D_i
  static constexpr int64_t SMEM_BUF = 2 * SMEM_QI + 2 * SMEM_STAT;
  static constexpr int64_t SMEM_DS = int64_t(BC) * BR * 2;  // dS_ij^T (keys x queries)
  static constexpr int64_t SMEM = 2 * SMEM_KV + 2 * SMEM_BUF + SMEM_DS;
};

template <typename T, class C>
__global__ void __launch_bounds__(C::THREADS, 1) fa2_bwd_tc_kernel(const TcBwdParams p) {
  constexpr int D = C::D, BR = C::BR, BC = C::BC, CH = C::CH, CHS = C::CHS, NQ = BR / 8, DT = D / 8;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t sK = smem_addr(smem), sV = sK + uint32_t(C::SMEM_KV), sBuf0 = sV + uint32_t(C::SMEM_KV);
  const uint32_t sDS = sBuf0 + uint32_t(2 * C::SMEM_BUF);
  const float* stats = reinterpret_cast<const float*>(smem + 2 * C::SMEM_KV);  // generic view of the buffers
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t4 = lane % 4;

  const int64_t h = blockIdx.x;  // grid (heads, Tc): every head's block j = 0 (most work, causal) first
  const int j = int(blockIdx.y), col0 = j * BC, kw0 = warp * 16;
  const T* Qh = static_cast<const T*>(p.fwd.Q) + h * p.fwd.nq * D;
  const T* dOh = static_cast<const T*>(p.dO) + h * p.fwd.nq * D;
  const T* Kh = static_cast<const T*>(p.fwd.K) + h * p.fwd.nk * D;
  const T* Vh = static_cast<const T*>(p.fwd.V) + h * p.fwd.nk * D;
  const float* L2h = p.L2 + h * p.rows_pad;
  const float* Dh = p.D + h * p.rows_pad;
  float* dQh = p.dq_acc + h * p.fwd.nq * D;

  const RowLimit lim = row_limit(p.fwd, h);
  const int Tr = (p.fwd.nq + BR - 1) / BR;
  // The first Q block with a row that keeps a key of block j (rows keep more keys as r grows).
  int i_first = Tr;
  if (col0 <= lim.hi(p.fwd.nq - 1)) i_first = lim.causal ? max(0, col0 - lim.off) / BR : 0;

  auto load_i = [&](int i, int buf) {
    const uint32_t b = sBuf0 + uint32_t(buf * C::SMEM_BUF);
    load_tile<BR, D, C::THREADS>(b, Qh, i * BR, p.fwd.nq, tid);
    load_tile<BR, D, C::THREADS>(b + uint32_t(C::SMEM_QI), dOh, i * BR, p.fwd.nq, tid);
    // L2_i and D_i: BR floats each, from buffers padded to whole Q blocks (16-byte aligned).
    constexpr int CHUNKS = BR / 4;
    for (int e = tid; e < 2 * CHUNKS; e += C::THREADS) {
      const float* src = (e < CHUNKS ? L2h : Dh) + i * BR + (e % CHUNKS) * 4;
      cp_async16(b + uint32_t(2 * C::SMEM_QI + (e / CHUNKS) * C::SMEM_STAT + (e % CHUNKS) * 16), src, 16);
    }
  };

  // FA2b L6: load K_j, V_j (with the first Q block's tiles, one group); L7: dK~_j = dV~_j = 0.
  if (i_first < Tr) {
    load_tile<BC, D, C::THREADS>(sK, Kh, col0, p.fwd.nk, tid);
    load_tile<BC, D, C::THREADS>(sV, Vh, col0, p.fwd.nk, tid);
    load_i(i_first, 0);
  }
  cp_async_commit();
  float dk[DT][4], dv[DT][4];
#pragma unroll
  for (int n = 0; n < DT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[n][e] = dv[n][e] = 0.0f;
  const float scale_log2 = p.fwd.scale * kLog2e;

  // The warp's K_j, V_j rows as A fragments (k16 steps over d).
  auto kv_frag = [&](uint32_t (&a)[4], uint32_t base, int kd) {
    ldmatrix_x4(a, base + swz<CH>(kw0 + lane % 16, kd * 2 + lane / 16));
  };
  uint32_t kf[C::KVREG ? D / 16 : 1][4], vf[C::KVREG ? D / 16 : 1][4];
  bool frags_loaded = false;

  // FA2b L8: for i (only the Q blocks some row of which keeps a key of block j).
  for (int i = i_first; i < Tr; ++i) {
    const int buf = (i - i_first) & 1, row0 = i * BR;
    const uint32_t sQ = sBuf0 + uint32_t(buf * C::SMEM_BUF), sdO = sQ + uint32_t(C::SMEM_QI);
    const float* sL2 = stats + (buf * C::SMEM_BUF + 2 * C::SMEM_QI) / 4;
    const float* sD = sL2 + BR;
    // FA2b L9: Q_i, dO_i, L_i, D_i have landed; every warp is done with block i - 1.
    cp_async_wait<0>();
    __syncthreads();
    if (i + 1 < Tr) load_i(i + 1, buf ^ 1);
    cp_async_commit();
    if constexpr (C::KVREG) {
      if (!frags_loaded) {
#pragma unroll
        for (int kd = 0; kd < D / 16; ++kd) {
          kv_frag(kf[kd], sK, kd);
          kv_frag(vf[kd], sV, kd);
        }
        frags_loaded = true;
      }
    }

    const int last_row = min(row0 + BR, p.fwd.nq) - 1;
    const bool warp_live = col0 + kw0 <= lim.hi(last_row);  // some row of Q_i keeps a key of this warp
    const bool partial = col0 + kw0 + 15 > lim.hi(row0);     // some row of Q_i masks a key of this warp
    if (warp_live) {
      // FA2b L10: S_ij^T = K_j Q_i^T (the warp's 16 keys x BR queries), float32.
      float s[NQ][4];
#pragma unroll
      for (int n = 0; n < NQ; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[n][e] = 0.0f;
      // With K_j, V_j re-read from shared memory the k loop is not unrolled: unrolled, ptxas
      // hoists every step's fragments and spills (the forward's v5 lesson).
#pragma unroll(C::KVREG ? D / 16 : 1)
      for (int kd = 0; kd < D / 16; ++kd) {
        uint32_t a[4];
        if constexpr (C::KVREG) {
#pragma unroll
          for (int e = 0; e < 4; ++e) a[e] = kf[kd][e];
        } else {
          kv_frag(a, sK, kd);
        }
#pragma unroll
        for (int np = 0; np < NQ / 2; ++np) {
          uint32_t b[4];
          ldmatrix_x4(b, sQ + swz<CH>(np * 16 + (lane / 16) * 8 + lane % 8, kd * 2 + (lane / 8) % 2));
          mma16816<T>(s[2 * np], a, b[0], b[1]);
          mma16816<T>(s[2 * np + 1], a, b[2], b[3]);
        }
      }
      // FA2b L11: P_ij = exp(S_ij - L_i) = exp2(S tau log2 e - L2_i); masked keys (Algorithm 2's
      // mask: key c > hi(r), keys past Nk included) get exactly 0. Element (n, e): key
      // kw0 + g + 8 (e / 2), query n * 8 + 2 t4 + (e % 2).
#pragma unroll
      for (int n = 0; n < NQ; ++n) {
        const float2 l2 = *reinterpret_cast<const float2*>(sL2 + n * 8 + 2 * t4);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float x = fast_exp2(fmaf(s[n][e], scale_log2, -(e & 1 ? l2.y : l2.x)));
          s[n][e] = partial && col0 + kw0 + g + 8 * (e / 2) > lim.hi(row0 + n * 8 + 2 * t4 + (e & 1)) ? 0.0f : x;
        }
      }
      // FA2b L12: dV~_j += P_ij^T dO_i, P rounded to the type straight into A fragments.
#pragma unroll
      for (int kk = 0; kk < BR / 16; ++kk) {
        const uint32_t a[4] = {pack2<T>(s[2 * kk][0], s[2 * kk][1]), pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                               pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                               pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, sdO + swz<CH>(kk * 16 + lane % 16, dp * 2 + lane / 16));
          mma16816<T>(dv[2 * dp], a, b[0], b[1]);
          mma16816<T>(dv[2 * dp + 1], a, b[2], b[3]);
        }
      }
      // FA2b L13: dP_ij^T = V_j dO_i^T.
      float dp_[NQ][4];
#pragma unroll
      for (int n = 0; n < NQ; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) dp_[n][e] = 0.0f;
#pragma unroll(C::KVREG ? D / 16 : 1)
      for (int kd = 0; kd < D / 16; ++kd) {
        uint32_t a[4];
        if constexpr (C::KVREG) {
#pragma unroll
          for (int e = 0; e < 4; ++e) a[e] = vf[kd][e];
        } else {
          kv_frag(a, sV, kd);
        }
#pragma unroll
        for (int np = 0; np < NQ / 2; ++np) {
          uint32_t b[4];
          ldmatrix_x4(b, sdO + swz<CH>(np * 16 + (lane / 16) * 8 + lane % 8, kd * 2 + (lane / 8) % 2));
          mma16816<T>(dp_[2 * np], a, b[0], b[1]);
          mma16816<T>(dp_[2 * np + 1], a, b[2], b[3]);
        }
      }
      // FA2b L14: dS_ij^T = P^T o (dP^T - D_i) in float32 (into dp_), then rounded once.
#pragma unroll
      for (int n = 0; n < NQ; ++n) {
        const float2 dd = *reinterpret_cast<const float2*>(sD + n * 8 + 2 * t4);
#pragma unroll
        for (int e = 0; e < 4; ++e) dp_[n][e] = s[n][e] * (dp_[n][e] - (e & 1 ? dd.y : dd.x));
      }
      // FA2b L16: dK~_j += dS_ij^T Q_i (tau at the end); dS^T to shared memory for L15.
#pragma unroll
      for (int kk = 0; kk < BR / 16; ++kk) {
        const uint32_t a[4] = {pack2<T>(dp_[2 * kk][0], dp_[2 * kk][1]), pack2<T>(dp_[2 * kk][2], dp_[2 * kk][3]),
                               pack2<T>(dp_[2 * kk + 1][0], dp_[2 * kk + 1][1]),
                               pack2<T>(dp_[2 * kk + 1][2], dp_[2 * kk + 1][3])};
        // a[0], a[1]: keys g, g + 8 at queries (2kk) * 8 + 2 t4; a[2], a[3]: queries (2kk + 1) * 8 + 2 t4.
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sDS + swz<CHS>(kw0 + g, 2 * kk) + 4 * t4), "r"(a[0]));
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sDS + swz<CHS>(kw0 + g + 8, 2 * kk) + 4 * t4), "r"(a[1]));
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sDS + swz<CHS>(kw0 + g, 2 * kk + 1) + 4 * t4), "r"(a[2]));
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sDS + swz<CHS>(kw0 + g + 8, 2 * kk + 1) + 4 * t4), "r"(a[3]));
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, sQ + swz<CH>(kk * 16 + lane % 16, dp * 2 + lane / 16));
          mma16816<T>(dk[2 * dp], a, b[0], b[1]);
          mma16816<T>(dk[2 * dp + 1], a, b[2], b[3]);
        }
      }
    } else {
      // No row of Q_i keeps these 16 keys: their dS is 0 (dQ's product below still reads it).
#pragma unroll
      for (int c = 0; c < CHS; ++c)
#pragma unroll
        for (int hr = 0; hr < 2; ++hr)
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sDS + swz<CHS>(kw0 + g + 8 * hr, c) + 4 * t4), "r"(0u));
    }
    __syncthreads();  // dS_ij complete in shared memory

    // FA2b L15: dQ_i += tau dS_ij K_j. This warp: rows rg * 16 .. of Q_i, d columns cg * DQN ..
    {
      const int rg = warp % C::RG, cg = warp / C::RG;
      float dq[C::DQN / 8][4];
#pragma unroll
      for (int n = 0; n < C::DQN / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) dq[n][e] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < BC / 16; ++kk) {
        if (col0 + kk * 16 > lim.hi(last_row)) break;  // keys no row of Q_i keeps: dS = 0
        // dS (queries x keys) from dS^T (keys x queries): ldmatrix.trans, matrices (q 0-7, k 0-7),
        // (q 8-15, k 0-7), (q 0-7, k 8-15), (q 8-15, k 8-15).
        uint32_t a[4];
        ldmatrix_x4_trans(a, sDS + swz<CHS>(kk * 16 + lane % 8 + (lane / 16) * 8, rg * 2 + (lane / 8) % 2));
#pragma unroll
        for (int dp = 0; dp < C::DQN / 16; ++dp) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, sK + swz<CH>(kk * 16 + lane % 16, (cg * C::DQN / 16 + dp) * 2 + lane / 16));
          mma16816<T>(dq[2 * dp], a, b[0], b[1]);
          mma16816<T>(dq[2 * dp + 1], a, b[2], b[3]);
        }
      }
      if constexpr (C::DQV4) {
        // Even t4: row g, columns 2 t4 .. 2 t4 + 3 (its own pair, then its partner's row-g pair);
        // odd t4: row g + 8, columns 2 t4 - 2 .. 2 t4 + 1 (the partner's row-(g + 8) pair, then its own).
        const bool odd = t4 & 1;
        const int r = row0 + rg * 16 + g + (odd ? 8 : 0);
        float* dst = dQh + int64_t(r) * D + cg * C::DQN + 2 * (t4 & ~1);
#pragma unroll
        for (int n = 0; n < C::DQN / 8; ++n) {
          const float x = __shfl_xor_sync(0xffffffffu, odd ? dq[n][0] : dq[n][2], 1);
          const float y = __shfl_xor_sync(0xffffffffu, odd ? dq[n][1] : dq[n][3], 1);
          const float4 v = odd ? make_float4(x, y, dq[n][2], dq[n][3]) : make_float4(dq[n][0], dq[n][1], x, y);
          if (r < p.fwd.nq)
            atomic_add4(dst + n * 8, make_float4(p.fwd.scale * v.x, p.fwd.scale * v.y, p.fwd.scale * v.z, p.fwd.scale * v.w));
        }
      } else {
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
          const int r = row0 + rg * 16 + g + 8 * hr;
          if (r >= p.fwd.nq) continue;
          float* dst = dQh + int64_t(r) * D + cg * C::DQN + 2 * t4;
#pragma unroll
          for (int n = 0; n < C::DQN / 8; ++n)
            atomic_add2(dst + n * 8, p.fwd.scale * dq[n][2 * hr], p.fwd.scale * dq[n][2 * hr + 1]);
        }
      }
    }
  }
  cp_async_wait<0>();

  // FA2b L18: write dK_j = tau dK~_j and dV_j = dV~_j (zeros for a block no row keeps).
  T* dKh = static_cast<T*>(p.dK) + h * p.fwd.nk * D;
  T* dVh = static_cast<T*>(p.dV) + h * p.fwd.nk * D;
#pragma unroll
  for (int hr = 0; hr < 2; ++hr) {
    const int key = col0 + kw0 + g + 8 * hr;
    if (key >= p.fwd.nk) continue;
    uint32_t* ok = reinterpret_cast<uint32_t*>(dKh + int64_t(key) * D + 2 * t4);
    uint32_t* ov = reinterpret_cast<uint32_t*>(dVh + int64_t(key) * D + 2 * t4);
#pragma unroll
    for (int n = 0; n < DT; ++n) {
      ok[n * 4] = pack2<T>(p.fwd.scale * dk[n][2 * hr], p.fwd.scale * dk[n][2 * hr + 1]);
      ov[n * 4] = pack2<T>(dv[n][2 * hr], dv[n][2 * hr + 1]);
    }
  }
}

// ---- the ladder -------------------------------------------------------------------------------

struct Entry {
  int variant, d;
  const char* what;
  int Br, Bc, warps;
  int64_t smem;
  void (*launch)(const TcBwdParams&);
};

template <class C>
void launch_config(const TcBwdParams& p) {
  static int64_t opted[2] = {0, 0};
  const dim3 grid(unsigned(p.fwd.heads), unsigned((p.fwd.nk + C::BC - 1) / C::BC));
  launch_bwd_kernel(fa2_bwd_tc_kernel<__nv_bfloat16, C>, fa2_bwd_tc_kernel<__half, C>, p, grid, C::THREADS, C::SMEM,
                    opted);
}

template <int V, class C>
constexpr Entry entry(const char* what) {
  return Entry{V, C::D, what, C::BR, C::BC, C::WARPS, C::SMEM, &launch_config<C>};
}

}  // namespace
}  // namespace flashstep::gpu::tc
