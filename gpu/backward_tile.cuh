// The tiled backward kernels, shared by Algorithm 4 (fa1_backward.cu) and FlashAttention-2's
// Algorithm 2 (fa2_backward.cu). Both use the printed loop order: one thread block per (K/V
// block j, head) keeps K_j, V_j and the accumulators dK~_j, dV~_j on chip and loops over the
// Q blocks i; dK_j and dV_j are written once at the end (Alg4 L24 / FA2b L18). Every j adds
// tau dS_ij K_j to every dQ_i, and the j blocks run in parallel, so dQ_i's read-modify-write
// (Alg4 L10 + L21 / FA2b L15) is a float32 atomic add into dQ in HBM, as FlashAttention's
// implementation does (Dao-AILab/flash-attention#815). The two schedules differ only in how a
// block gets P_ij and D_i (the template flag FA1):
//   FA1  P_ij = diag(l_i)^-1 exp(S_ij - m_i) from the forward's l, m (Alg4 L13);
//        D_i = rowsum(dO_i o O_i) recomputed at every (i, j) (Alg4 L19).
//   FA2  P_ij = exp(S_ij - L_i) from the logsumexp (FA2b L11); D_i loaded (FA2b L9), computed
//        once beforehand by fa2_backward_rowsum (FA2b L4).
// The per-element P uses core/online_softmax.h's recomputed_prob / recomputed_prob_lse, which
// give P = 0 for a row that kept no key (l = 0, L = -inf), so such rows get zero gradient.
// Masks: a block the mask removes entirely is skipped (no loads, no FLOPs), a partly masked
// one sets its masked scores to -inf (P = 0). Dropout: Z_ij is the forward's Philox draw
// (dropout_weight: keyed by seed and (batch, head, row, column)), applied to P_ij for dV
// (Alg4 L14-15) and to dP_ij (Alg4 L18).
//
// Variants (0 picks 3 when compiled for (Br, Bc, d), else 2 when compiled, else 1):
//   1  bwd_v1_kernel<FA1>: the lines written plainly for any Br, Bc, d that fit in shared
//      memory: one thread per element of S_ij (and P_ij, dP_ij, dS_ij), of dK~_j / dV~_j, of
//      dQ_i's update. The reference for variant 2.
//   2  bwd_v2_kernel<Br, Bc, d, FA1>: register-tiled as fa2_forward.cu's variant 2 (256
//      threads as 16 x 16, gpu/register_tile.cuh). S_ij and dP_ij are computed into registers
//      from transposed tiles (Q_i^T K_j^T and dO_i^T V_j^T); P^dropped_ij and dS_ij go to shared
//      memory row-major for dV~_j += P^T dO_i and dK~_j += dS^T Q_i (thread rows = key rows),
//      dS_ij^T for dQ_i += dS K_j (thread rows = query rows). dK~_j, dV~_j stay in registers
//      for the whole loop over i.
//   3  bwd_v3_kernel<Br, Bc, d, FA1>: variant 2 in less shared memory (no transposed copies
//      of Q_i, dO_i, dS_ij; S_ij, dP_ij and dQ_i's update read row-major A operands, four k at
//      a time; no padding): 113 KiB at (64, 64, 64), so two blocks run per SM.
#pragma once
#include "core/online_softmax.h"
#include "gpu/backward_kernels.h"
#include "gpu/common.cuh"
#include "gpu/register_tile.cuh"

#include <cmath>

namespace flashstep::gpu {

// Z_ij for one element: 1/(1-p) if kept, 0 if dropped; 1 without dropout.
__device__ __forceinline__ float dropout_factor(const Extras& x, int64_t h, int row, int col) {
  return x.dropout > 0.0f ? dropout_weight(1.0f, x, h, row, col) : 1.0f;
}

// ---------------------------------------------------------------------------------------------
// Variant 1: plain.
inline int64_t bwd_v1_smem_floats(int Br, int Bc, int d) {
  // K_j, V_j (rows of d + 1), dK~_j, dV~_j, Q_i, dO_i, P^dropped_ij, dS_ij, and 3 per row.
  return 2 * int64_t(Bc) * (d + 1) + 2 * int64_t(Bc) * d + 2 * int64_t(Br) * d + 2 * int64_t(Br) * Bc +
         3 * int64_t(Br);
}

template <bool FA1>
__global__ void bwd_v1_kernel(BwdParams p, int j0) {
  extern __shared__ float smem[];
  const int d = p.d, Br = p.Br, Bc = p.Bc, kld = d + 1;
  float* Kj = smem;               // Bc x (d + 1)
  float* Vj = Kj + Bc * kld;      // Bc x (d + 1)
  float* dKt = Vj + Bc * kld;     // Bc x d: dK~_j
  float* dVt = dKt + Bc * d;      // Bc x d: dV~_j
  float* Qi = dVt + Bc * d;       // Br x d
  float* dOi = Qi + Br * d;       // Br x d
  float* Pd = dOi + Br * d;       // Br x Bc: P^dropped_ij
  float* dS = Pd + Br * Bc;       // Br x Bc
  float* st0 = dS + Br * Bc;      // per row: m_i (FA1) or L_i (FA2)
  float* st1 = st0 + Br;          // per row: l_i (FA1)
  float* Di = st1 + Br;           // per row: D_i

  const int j = j0 + blockIdx.x;
  const int64_t h = blockIdx.y;
  const int col0 = j * Bc, bc = min(Bc, p.nk - col0);
  const KeyMask mask = p.x.mask.for_batch(h / p.x.heads_per_batch);
  const float* Kg = p.K + (h * p.nk + col0) * d;
  const float* Vg = p.V + (h * p.nk + col0) * d;

  // Alg4 L7 / FA2b L6: load K_j, V_j; Alg4 L8 / FA2b L7: dK~_j = dV~_j = 0 on chip
  for (int e = threadIdx.x; e < bc * d; e += blockDim.x) {
    Kj[(e / d) * kld + e % d] = Kg[e];
    Vj[(e / d) * kld + e % d] = Vg[e];
    dKt[e] = 0.0f;
    dVt[e] = 0.0f;
  }

  for (int i = 0; i < p.Tr; ++i) {
    const int row0 = i * Br, br = min(Br, p.nq - row0);
    __syncthreads();  // the previous i is done with Q_i, dO_i, P, dS (and L7-L8 are done)
    const int kind = classify_block(mask, row0, br, col0, bc, p.nk);
    if (kind == KeyMask::empty) continue;  // P_ij = 0: no loads, no FLOPs
    // Alg4 L10 / FA2b L9: load Q_i, dO_i and the row statistics
    const int64_t qoff = (h * p.nq + row0) * d;
    for (int e = threadIdx.x; e < br * d; e += blockDim.x) {
      Qi[e] = p.Q[qoff + e];
      dOi[e] = p.dO[qoff + e];
    }
    for (int r = threadIdx.x; r < br; r += blockDim.x) {
      const int64_t row = h * p.nq + row0 + r;
      if constexpr (FA1) {
        st0[r] = p.m[row];
        st1[r] = p.l[row];
        // Alg4 L19: D_i = rowsum(dO_i o O_i), recomputed at every (i, j) as printed
        float acc = 0.0f;
        for (int k = 0; k < d; ++k) acc = fmaf(p.dO[row * d + k], p.O[row * d + k], acc);
        Di[r] = acc;
      } else {
        st0[r] = p.lse[row];
        Di[r] = p.D[row];
      }
    }
    __syncthreads();

    for (int e = threadIdx.x; e < br * bc; e += blockDim.x) {
      const int r = e / bc, c = e % bc;
      // Alg4 L11-12 / FA2b L10: S_ij = tau Q_i K_j^T, masked entries -inf
      float s = 0.0f, dp = 0.0f;
      for (int k = 0; k < d; ++k) s = fmaf(Qi[r * d + k], Kj[c * kld + k], s);
      const bool kept = kind == KeyMask::full || mask.allowed(row0 + r, col0 + c, p.nk);
      s = kept ? s * p.scale : -INFINITY;
      // Alg4 L13 / FA2b L11: P_ij (0 for a row that kept no key)
      const float P = FA1 ? recomputed_prob(s, st0[r], st1[r]) : recomputed_prob_lse(s, st0[r]);
      // Alg4 L17 / FA2b L13: dP_ij^dropped = dO_i V_j^T
      for (int k = 0; k < d; ++k) dp = fmaf(dOi[r * d + k], Vj[c * kld + k], dp);
      // Alg4 L14-15, L18: P^dropped = P o Z, dP = dP^dropped o Z (Z: the forward's draw)
      const float z = dropout_factor(p.x, h, row0 + r, col0 + c);
      Pd[r * Bc + c] = P * z;
      // Alg4 L20 / FA2b L14: dS_ij = P_ij o (dP_ij - D_i)
      dS[r * Bc + c] = P * (dp * z - Di[r]);
    }
    __syncthreads();

    // Alg4 L16 / FA2b L12: dV~_j += (P^dropped)^T dO_i; Alg4 L22 / FA2b L16: dK~_j += dS^T Q_i
    // (tau is applied once, at L24)
    for (int e = threadIdx.x; e < bc * d; e += blockDim.x) {
      const int c = e / d, k = e % d;
      float dv = dVt[e], dk = dKt[e];
      for (int r = 0; r < br; ++r) {
        dv = fmaf(Pd[r * Bc + c], dOi[r * d + k], dv);
        dk = fmaf(dS[r * Bc + c], Qi[r * d + k], dk);
      }
      dVt[e] = dv;
      dKt[e] = dk;
    }
    // Alg4 L21 / FA2b L15: dQ_i += tau dS_ij K_j, an atomic add into HBM
    for (int e = threadIdx.x; e < br * d; e += blockDim.x) {
      const int r = e / d, k = e % d;
      float acc = 0.0f;
      for (int c = 0; c < bc; ++c) acc = fmaf(dS[r * Bc + c], Kj[c * kld + k], acc);
      atomicAdd(p.dQ + qoff + e, p.scale * acc);
    }
  }
  __syncthreads();
  // Alg4 L24 / FA2b L18: write dK_j = tau dK~_j, dV_j = dV~_j to HBM
  for (int e = threadIdx.x; e < bc * d; e += blockDim.x) {
    p.dK[(h * p.nk + col0) * d + e] = p.scale * dKt[e];
    p.dV[(h * p.nk + col0) * d + e] = dVt[e];
  }
}

// ---------------------------------------------------------------------------------------------
// Variant 2: register-tiled.
template <int BR, int BC, int D>
struct BwdV2Traits {
  static_assert(BR % 16 == 0 && BC % 16 == 0 && D % 16 == 0, "16 x 16 threads tile the blocks");
  static constexpr int kThreads = 256;
  static constexpr int RM = BR / 16, CM = BC / 16, DM = D / 16;  // per-thread rows / columns
  static constexpr int QLD = BR + 4, KLD = BC + 4, PLD = BC + 4, SLD = BR + 4;  // float4 aligned
  static constexpr int kKt = D * KLD, kQt = D * QLD;
  static constexpr int kFloats = 2 * kKt + BC * D     // K_j^T, V_j^T, K_j
                                 + 2 * kQt + 2 * BR * D  // Q_i^T, dO_i^T, Q_i, dO_i
                                 + 2 * BR * PLD + BC * SLD  // P^dropped_ij, dS_ij, dS_ij^T
                                 + 3 * BR;                  // row statistics and D_i
  static constexpr int64_t kSmemBytes = int64_t(kFloats) * 4;
};

// Writes the thread's RM x CM values row-major into a (rows x LD) tile (rows ty*RM..).
template <int RM, int CM, int LD>
__device__ __forceinline__ void store_rows(float* dst, const float (&v)[RM][CM], int ty, int tx) {
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    float* row = dst + (ty * RM + r) * LD;
    if constexpr (CM % 4 == 0) {
#pragma unroll
      for (int q = 0; q < CM / 4; ++q)
        *reinterpret_cast<float4*>(row + q * 64 + tx * 4) =
            make_float4(v[r][4 * q], v[r][4 * q + 1], v[r][4 * q + 2], v[r][4 * q + 3]);
    } else {
#pragma unroll
      for (int c = 0; c < CM; ++c) row[owned_col<CM>(tx, c)] = v[r][c];
    }
  }
}

// acc += A^T B (tile_product's shapes).
template <int RM, int CM, int K, int LDA, int LDB>
__device__ __forceinline__ void tile_product_add(float (&acc)[RM][CM], const float* A, const float* B, int ty,
                                                 int tx) {
  float t[RM][CM];
  tile_product<RM, CM, K, LDA, LDB>(t, A, B, ty, tx);
#pragma unroll
  for (int r = 0; r < RM; ++r)
#pragma unroll
    for (int c = 0; c < CM; ++c) acc[r][c] += t[r][c];
}

// dQ_i += scale v for the thread's rows (< br) and owned columns: float32 atomic adds in HBM
// (128-bit red.global.add.v4.f32 on sm_90 where the columns come in float4 chunks).
template <int RM, int DM>
__device__ __forceinline__ void atomic_add_rows(float* dQ, float (&v)[RM][DM], float scale, int D, int br,
                                                int ty, int tx) {
#pragma unroll
  for (int r = 0; r < RM; ++r)
#pragma unroll
    for (int c = 0; c < DM; ++c) v[r][c] *= scale;
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    const int row = ty * RM + r;
    if (row >= br) continue;
    float* out = dQ + int64_t(row) * D;
#if __CUDA_ARCH__ >= 900
    if constexpr (DM % 4 == 0) {
#pragma unroll
      for (int q = 0; q < DM / 4; ++q)
        atomicAdd(reinterpret_cast<float4*>(out + q * 64 + tx * 4),
                  make_float4(v[r][4 * q], v[r][4 * q + 1], v[r][4 * q + 2], v[r][4 * q + 3]));
    } else
#endif
    {
#pragma unroll
      for (int c = 0; c < DM; ++c) atomicAdd(out + owned_col<DM>(tx, c), v[r][c]);
    }
  }
}

// Alg4 L7 / FA2b L6: load K_j (transposed, with row stride LD, and as is) and V_j
// (transposed); rows past Nk 0. Alg4 L8 / FA2b L7: dK~_j = dV~_j = 0 in registers.
template <int BC, int D, int LD, int CM, int DM>
__device__ __forceinline__ void load_kv_zero_grads(float* Kt, float* Vt, float* Ks, float (&dk)[CM][DM],
                                                   float (&dv)[CM][DM], const BwdParams& p, int64_t h, int col0,
                                                   int bc, int tid) {
  const float* Kg = p.K + (h * p.nk + col0) * D;
  load_tile_transposed<BC, D, LD, float>(Kt, Ks, Kg, Kg, bc, tid);
  load_tile_transposed<BC, D, LD, float>(Vt, nullptr, p.V + (h * p.nk + col0) * D, nullptr, bc, tid);
#pragma unroll
  for (int r = 0; r < CM; ++r)
#pragma unroll
    for (int c = 0; c < DM; ++c) dk[r][c] = dv[r][c] = 0.0f;
}

// Alg4 L10 / FA2b L9: the row statistics of Q_i into shared memory, one row per thread.
template <bool FA1, int BR, int D>
__device__ __forceinline__ void load_row_stats(const BwdParams& p, float* st0, float* st1, float* Di, int64_t h,
                                               int row0, int br, int tid) {
  for (int r = tid; r < BR; r += 256) {
    const int64_t row = h * p.nq + row0 + r;
    if constexpr (FA1) {  // a row past Nq gets l = 0, so P = 0
      st0[r] = r < br ? p.m[row] : -INFINITY;
      st1[r] = r < br ? p.l[row] : 0.0f;
      // Alg4 L19: D_i = rowsum(dO_i o O_i), recomputed at every (i, j) as printed
      float acc = 0.0f;
      for (int k = 0; r < br && k < D; ++k) acc = fmaf(p.dO[row * D + k], p.O[row * D + k], acc);
      Di[r] = acc;
    } else {  // a row past Nq gets L = -inf, so P = 0
      st0[r] = r < br ? p.lse[row] : -INFINITY;
      Di[r] = r < br ? p.D[row] : 0.0f;
    }
  }
}

// From the thread's scores s = S_ij and dp = dP^dropped_ij: s becomes P^dropped_ij, dp dS_ij.
template <bool FA1, int RM, int CM>
__device__ __forceinline__ void grad_scores(float (&s)[RM][CM], float (&dp)[RM][CM], const BwdParams& p,
                                            const float* st0, const float* st1, const float* Di, int64_t h,
                                            int row0, int col0, int ty, int tx) {
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    const int row = ty * RM + r;
#pragma unroll
    for (int c = 0; c < CM; ++c) {
      // Alg4 L13 / FA2b L11: P_ij (0 for a row that kept no key)
      const float P = FA1 ? recomputed_prob(s[r][c], st0[row], st1[row]) : recomputed_prob_lse(s[r][c], st0[row]);
      // Alg4 L14-15, L18: P^dropped = P o Z, dP = dP^dropped o Z (the forward's draw)
      const float z = dropout_factor(p.x, h, row0 + row, col0 + owned_col<CM>(tx, c));
      s[r][c] = P * z;
      // Alg4 L20 / FA2b L14: dS_ij = P_ij o (dP_ij - D_i)
      dp[r][c] = P * (dp[r][c] * z - Di[row]);
    }
  }
}

// Alg4 L24 / FA2b L18: dK_j = tau dK~_j, dV_j = dV~_j from the thread's key rows ty*CM.. (< bc).
template <int CM, int DM>
__device__ __forceinline__ void write_key_rows(const BwdParams& p, const float (&dk)[CM][DM],
                                               const float (&dv)[CM][DM], int64_t h, int col0, int bc, int ty,
                                               int tx) {
  const int D = DM * 16;
#pragma unroll
  for (int r = 0; r < CM; ++r) {
    const int row = ty * CM + r;
    if (row >= bc) continue;
    float* dKg = p.dK + (h * p.nk + col0 + row) * D;
    float* dVg = p.dV + (h * p.nk + col0 + row) * D;
#pragma unroll
    for (int c = 0; c < DM; ++c) {
      dKg[owned_col<DM>(tx, c)] = p.scale * dk[r][c];
      dVg[owned_col<DM>(tx, c)] = dv[r][c];
    }
  }
}

template <int BR, int BC, int D, bool FA1>
__global__ void __launch_bounds__(256) bwd_v2_kernel(BwdParams p, int j0) {
  using T = BwdV2Traits<BR, BC, D>;
  constexpr int RM = T::RM, CM = T::CM, DM = T::DM;
  extern __shared__ float4 smem4[];
  float* Kt = reinterpret_cast<float*>(smem4);  // D x KLD: K_j^T
  float* Vt = Kt + T::kKt;                      // D x KLD: V_j^T
  float* Ks = Vt + T::kKt;                      // BC x D: K_j
  float* Qt = Ks + BC * D;                      // D x QLD: Q_i^T
  float* dOt = Qt + T::kQt;                     // D x QLD: dO_i^T
  float* Qs = dOt + T::kQt;                     // BR x D: Q_i
  float* dOs = Qs + BR * D;                     // BR x D: dO_i
  float* Pd = dOs + BR * D;                     // BR x PLD: P^dropped_ij
  float* dS = Pd + BR * T::PLD;                 // BR x PLD: dS_ij
  float* dSt = dS + BR * T::PLD;                // BC x SLD: dS_ij^T
  float* st0 = dSt + BC * T::SLD;               // per row: m_i (FA1) or L_i (FA2)
  float* st1 = st0 + BR;                        // per row: l_i (FA1)
  float* Di = st1 + BR;                         // per row: D_i

  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int j = j0 + blockIdx.x;
  const int64_t h = blockIdx.y;
  const int col0 = j * BC, bc = min(BC, p.nk - col0);
  const KeyMask mask = p.x.mask.for_batch(h / p.x.heads_per_batch);

  // Alg4 L7-L8 / FA2b L6-L7: K_j, V_j on chip; dK~_j = dV~_j = 0 (thread rows = key rows ty*CM..)
  float dk[CM][DM], dv[CM][DM];
  load_kv_zero_grads<BC, D, T::KLD>(Kt, Vt, Ks, dk, dv, p, h, col0, bc, tid);

  for (int i = 0; i < p.Tr; ++i) {
    const int row0 = i * BR, br = min(BR, p.nq - row0);
    __syncthreads();  // the previous i is done with the i tiles (and L7 is done)
    const int kind = classify_block(mask, row0, br, col0, bc, p.nk);
    if (kind == KeyMask::empty) continue;  // P_ij = 0: no loads, no FLOPs
    // Alg4 L10 / FA2b L9: load Q_i, dO_i (transposed and as is; rows past Nq 0), statistics
    const int64_t qoff = (h * p.nq + row0) * D;
    load_tile_transposed<BR, D, T::QLD>(Qt, Qs, p.Q + qoff, p.Q + qoff, br, tid);
    load_tile_transposed<BR, D, T::QLD>(dOt, dOs, p.dO + qoff, p.dO + qoff, br, tid);
    load_row_stats<FA1, BR, D>(p, st0, st1, Di, h, row0, br, tid);
    __syncthreads();

    // Alg4 L11-12 / FA2b L10: S_ij = tau Q_i K_j^T in registers, masked entries -inf
    float s[RM][CM], dp[RM][CM];
    tile_product<RM, CM, D, T::QLD, T::KLD>(s, Qt, Kt, ty, tx);
    mask_scores<RM, CM>(s, mask, kind, row0 + ty * RM, col0, bc, tx, p.nk, p.scale);
    // Alg4 L17 / FA2b L13: dP_ij^dropped = dO_i V_j^T in registers
    tile_product<RM, CM, D, T::QLD, T::KLD>(dp, dOt, Vt, ty, tx);
    grad_scores<FA1, RM, CM>(s, dp, p, st0, st1, Di, h, row0, col0, ty, tx);
    store_rows<RM, CM, T::PLD>(Pd, s, ty, tx);
    store_rows<RM, CM, T::PLD>(dS, dp, ty, tx);
    store_transposed<RM, CM, T::SLD>(dSt, dp, ty, tx);
    __syncthreads();

    // Alg4 L16 / FA2b L12: dV~_j += (P^dropped_ij)^T dO_i
    tile_product_add<CM, DM, BR, T::PLD, D>(dv, Pd, dOs, ty, tx);
    // Alg4 L22 / FA2b L16: dK~_j += dS_ij^T Q_i (tau applied once, at L24)
    tile_product_add<CM, DM, BR, T::PLD, D>(dk, dS, Qs, ty, tx);
    // Alg4 L21 / FA2b L15: dQ_i += tau dS_ij K_j, an atomic add into HBM
    float dq[RM][DM];
    tile_product<RM, DM, BC, T::SLD, D>(dq, dSt, Ks, ty, tx);
    atomic_add_rows<RM, DM>(p.dQ + qoff, dq, p.scale, D, br, ty, tx);
  }

  // Alg4 L24 / FA2b L18: write dK_j = tau dK~_j, dV_j = dV~_j to HBM (rows < bc)
  write_key_rows<CM, DM>(p, dk, dv, h, col0, bc, ty, tx);
}

// The (Br, Bc, d) variant 2 is compiled for (shared memory 167.8 KiB, 109.8 KiB, 133.9 KiB).
#define FS_BWD_V2_CONFIGS(X) X(64, 64, 64) X(64, 64, 32) X(32, 32, 128)

// ---------------------------------------------------------------------------------------------
// Variant 3: variant 2's threads and register tiles, with shared memory cut from 168 to 113 KiB
// at (64, 64, 64) so that two blocks share an SM (one block's loads and barriers then overlap
// the other's arithmetic). What goes: the transposed copies of Q_i and dO_i and the transposed
// dS_ij. S_ij, dP_ij and dQ_i's update read their A operand row-major instead, four k at a time
// (tile_product_rows: one float4 per row per 4 k), and no tile is padded (the transposed
// stores of K_j^T and V_j^T, once per j, take the bank conflicts).
template <int BR, int BC, int D>
struct BwdV3Traits {
  static_assert(BR % 16 == 0 && BC % 16 == 0 && D % 16 == 0, "16 x 16 threads tile the blocks");
  static constexpr int kThreads = 256;
  static constexpr int RM = BR / 16, CM = BC / 16, DM = D / 16;
  static constexpr int kFloats = 2 * D * BC + BC * D  // K_j^T, V_j^T, K_j
                                 + 2 * BR * D          // Q_i, dO_i
                                 + 2 * BR * BC         // P^dropped_ij, dS_ij
                                 + 3 * BR;             // row statistics and D_i
  static constexpr int64_t kSmemBytes = int64_t(kFloats) * 4;
  // Two blocks per SM when both fit in its 228 KiB (1 KiB reserved per block): then the
  // registers are capped at 128 per thread.
  static constexpr int kMinBlocks = 2 * (kSmemBytes + 1024) <= 228 * 1024 ? 2 : 1;
};

// acc = A B for the thread's rows ty*RM.. and owned columns: A row-major (rows x LDA, read as
// float4 along k), B is K x LDB (row k holds the owned columns).
template <int RM, int CM, int K, int LDA, int LDB>
__device__ __forceinline__ void tile_product_rows(float (&acc)[RM][CM], const float* A, const float* B, int ty,
                                                  int tx) {
  static_assert(K % 4 == 0 && LDA % 4 == 0, "float4 along k");
#pragma unroll
  for (int r = 0; r < RM; ++r)
#pragma unroll
    for (int c = 0; c < CM; ++c) acc[r][c] = 0.0f;
#pragma unroll 2
  for (int k = 0; k < K; k += 4) {
    float a[RM][4];
#pragma unroll
    for (int r = 0; r < RM; ++r) {
      const float4 v = *reinterpret_cast<const float4*>(A + (ty * RM + r) * LDA + k);
      a[r][0] = v.x; a[r][1] = v.y; a[r][2] = v.z; a[r][3] = v.w;
    }
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      float b[CM];
      load_owned<CM>(b, B + (k + kk) * LDB, tx);
#pragma unroll
      for (int r = 0; r < RM; ++r)
#pragma unroll
        for (int c = 0; c < CM; ++c) acc[r][c] = fmaf(a[r][kk], b[c], acc[r][c]);
    }
  }
}

// ROWS x D row-major tile from global memory (float4 copies); rows >= valid_rows are 0.
template <int ROWS, int D>
__device__ __forceinline__ void load_tile_rows(float* dst, const float* src, int valid_rows, int tid) {
  for (int e = tid; e < ROWS * D / 4; e += 256) {
    const int r = e / (D / 4);
    const float4 v = r < valid_rows ? reinterpret_cast<const float4*>(src)[e] : make_float4(0.f, 0.f, 0.f, 0.f);
    reinterpret_cast<float4*>(dst)[e] = v;
  }
}

template <int BR, int BC, int D, bool FA1>
__global__ void __launch_bounds__(256, BwdV3Traits<BR, BC, D>::kMinBlocks) bwd_v3_kernel(BwdParams p, int j0) {
  using T = BwdV3Traits<BR, BC, D>;
  constexpr int RM = T::RM, CM = T::CM, DM = T::DM;
  extern __shared__ float4 smem4[];
  float* Kt = reinterpret_cast<float*>(smem4);  // D x BC: K_j^T
  float* Vt = Kt + D * BC;                      // D x BC: V_j^T
  float* Ks = Vt + D * BC;                      // BC x D: K_j
  float* Qs = Ks + BC * D;                      // BR x D: Q_i
  float* dOs = Qs + BR * D;                     // BR x D: dO_i
  float* Pd = dOs + BR * D;                     // BR x BC: P^dropped_ij
  float* dS = Pd + BR * BC;                     // BR x BC: dS_ij
  float* st0 = dS + BR * BC;                    // per row: m_i (FA1) or L_i (FA2)
  float* st1 = st0 + BR;                        // per row: l_i (FA1)
  float* Di = st1 + BR;                         // per row: D_i

  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int j = j0 + blockIdx.x;
  const int64_t h = blockIdx.y;
  const int col0 = j * BC, bc = min(BC, p.nk - col0);
  const KeyMask mask = p.x.mask.for_batch(h / p.x.heads_per_batch);

  // Alg4 L7-L8 / FA2b L6-L7: K_j, V_j on chip; dK~_j = dV~_j = 0 (thread rows = key rows ty*CM..)
  float dk[CM][DM], dv[CM][DM];
  load_kv_zero_grads<BC, D, BC>(Kt, Vt, Ks, dk, dv, p, h, col0, bc, tid);

  for (int i = 0; i < p.Tr; ++i) {
    const int row0 = i * BR, br = min(BR, p.nq - row0);
    __syncthreads();  // the previous i is done with the i tiles (and L7 is done)
    const int kind = classify_block(mask, row0, br, col0, bc, p.nk);
    if (kind == KeyMask::empty) continue;  // P_ij = 0: no loads, no FLOPs
    // Alg4 L10 / FA2b L9: load Q_i, dO_i (rows past Nq 0) and the row statistics
    const int64_t qoff = (h * p.nq + row0) * D;
    load_tile_rows<BR, D>(Qs, p.Q + qoff, br, tid);
    load_tile_rows<BR, D>(dOs, p.dO + qoff, br, tid);
    load_row_stats<FA1, BR, D>(p, st0, st1, Di, h, row0, br, tid);
    __syncthreads();

    // Alg4 L11-12 / FA2b L10: S_ij = tau Q_i K_j^T in registers, masked entries -inf
    float s[RM][CM], dp[RM][CM];
    tile_product_rows<RM, CM, D, D, BC>(s, Qs, Kt, ty, tx);
    mask_scores<RM, CM>(s, mask, kind, row0 + ty * RM, col0, bc, tx, p.nk, p.scale);
    // Alg4 L17 / FA2b L13: dP_ij^dropped = dO_i V_j^T in registers
    tile_product_rows<RM, CM, D, D, BC>(dp, dOs, Vt, ty, tx);
    grad_scores<FA1, RM, CM>(s, dp, p, st0, st1, Di, h, row0, col0, ty, tx);
    store_rows<RM, CM, BC>(Pd, s, ty, tx);
    store_rows<RM, CM, BC>(dS, dp, ty, tx);
    __syncthreads();

    // Alg4 L16 / FA2b L12: dV~_j += (P^dropped_ij)^T dO_i
    tile_product_add<CM, DM, BR, BC, D>(dv, Pd, dOs, ty, tx);
    // Alg4 L22 / FA2b L16: dK~_j += dS_ij^T Q_i (tau applied once, at L24)
    tile_product_add<CM, DM, BR, BC, D>(dk, dS, Qs, ty, tx);
    // Alg4 L21 / FA2b L15: dQ_i += tau dS_ij K_j, an atomic add into HBM
    float dq[RM][DM];
    tile_product_rows<RM, DM, BC, BC, D>(dq, dS, Ks, ty, tx);
    atomic_add_rows<RM, DM>(p.dQ + qoff, dq, p.scale, D, br, ty, tx);
  }

  // Alg4 L24 / FA2b L18: write dK_j = tau dK~_j, dV_j = dV~_j to HBM (rows < bc)
  write_key_rows<CM, DM>(p, dk, dv, h, col0, bc, ty, tx);
}

// The (Br, Bc, d) variant 3 is compiled for (shared memory 112.8 KiB: two blocks per SM;
// 192.8, 177.5 and 192.8 KiB: one).
#define FS_BWD_V3_CONFIGS(X) X(64, 64, 64) X(64, 128, 64) X(128, 64, 64) X(64, 64, 128)

// One launch of a variant over K/V blocks j0 .. j0 + count - 1 of every head.
template <bool FA1>
void bwd_launch(int variant, const BwdParams& p, int j0, int count) {
  const dim3 grid(unsigned(count), unsigned(p.heads));
  if (variant == 1) {
    const int64_t bytes = bwd_v1_smem_floats(p.Br, p.Bc, p.d) * 4;
    static int64_t opted = 48 * 1024;
    opt_in_shared(bwd_v1_kernel<FA1>, bytes, opted);
    bwd_v1_kernel<FA1><<<grid, 256, size_t(bytes)>>>(p, j0);
    CUDA_CHECK_LAUNCH();
    return;
  }
#define FS_BWD_LAUNCH_CASE(br, bc, dd)                                                   \
  if (p.Br == br && p.Bc == bc && p.d == dd) {                                           \
    using Tr = BwdV2Traits<br, bc, dd>;                                                  \
    static int64_t opted = 48 * 1024;                                                    \
    opt_in_shared(bwd_v2_kernel<br, bc, dd, FA1>, Tr::kSmemBytes, opted);                \
    bwd_v2_kernel<br, bc, dd, FA1><<<grid, Tr::kThreads, size_t(Tr::kSmemBytes)>>>(p, j0); \
    CUDA_CHECK_LAUNCH();                                                                 \
    return;                                                                              \
  }
  if (variant == 2) { FS_BWD_V2_CONFIGS(FS_BWD_LAUNCH_CASE) }
#undef FS_BWD_LAUNCH_CASE
#define FS_BWD_V3_LAUNCH_CASE(br, bc, dd)                                                \
  if (p.Br == br && p.Bc == bc && p.d == dd) {                                           \
    using Tr = BwdV3Traits<br, bc, dd>;                                                  \
    static int64_t opted = 48 * 1024;                                                    \
    opt_in_shared(bwd_v3_kernel<br, bc, dd, FA1>, Tr::kSmemBytes, opted);                \
    bwd_v3_kernel<br, bc, dd, FA1><<<grid, Tr::kThreads, size_t(Tr::kSmemBytes)>>>(p, j0); \
    CUDA_CHECK_LAUNCH();                                                                 \
    return;                                                                              \
  }
  if (variant == 3) { FS_BWD_V3_CONFIGS(FS_BWD_V3_LAUNCH_CASE) }
#undef FS_BWD_V3_LAUNCH_CASE
  throw std::runtime_error("backward variant " + std::to_string(variant) +
                           " has no instantiation for these block sizes");  // checked earlier
}

}  // namespace flashstep::gpu
