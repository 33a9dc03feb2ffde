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
// Variants (0 picks 2 when compiled for (Br, Bc, d), else 1):
//   1  bwd_v1_kernel<FA1>: the lines written plainly for any Br, Bc, d that fit in shared
//      memory: one thread per element of S_ij (and P_ij, dP_ij, dS_ij), of dK~_j / dV~_j, of
//      dQ_i's update. The reference for variant 2.
//   2  bwd_v2_kernel<Br, Bc, d, FA1>: register-tiled as fa2_forward.cu's variant 2 (256
//      threads as 16 x 16, gpu/register_tile.cuh). S_ij and dP_ij are computed into registers
//      from transposed tiles (Q_i^T K_j^T and dO_i^T V_j^T); P^dropped_ij and dS_ij go to shared
//      memory row-major for dV~_j += P^T dO_i and dK~_j += dS^T Q_i (thread rows = key rows),
//      dS_ij^T for dQ_i += dS K_j (thread rows = query rows). dK~_j, dV~_j stay in registers
//      for the whole loop over i.
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

// dQ_i += v for the thread's rows (< br) and owned columns: float32 atomic adds in HBM
// (128-bit red.global.add.v4.f32 on sm_90 where the columns come in float4 chunks).
template <int RM, int DM>
__device__ __forceinline__ void atomic_add_rows(float* dQ, const float (&v)[RM][DM], int D, int br, int ty,
                                                int tx) {
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

  // Alg4 L7 / FA2b L6: load K_j (transposed and as is) and V_j (transposed); rows past Nk 0.
  load_tile_transposed<BC, D, T::KLD, float>(Kt, Ks, p.K + (h * p.nk + col0) * D, p.K + (h * p.nk + col0) * D, bc,
                                      tid);
  load_tile_transposed<BC, D, T::KLD, float>(Vt, nullptr, p.V + (h * p.nk + col0) * D, nullptr, bc, tid);
  // Alg4 L8 / FA2b L7: dK~_j = dV~_j = 0 on chip (registers; thread rows = key rows ty*CM..)
  float dk[CM][DM], dv[CM][DM];
#pragma unroll
  for (int r = 0; r < CM; ++r)
#pragma unroll
    for (int c = 0; c < DM; ++c) dk[r][c] = dv[r][c] = 0.0f;

  for (int i = 0; i < p.Tr; ++i) {
    const int row0 = i * BR, br = min(BR, p.nq - row0);
    __syncthreads();  // the previous i is done with the i tiles (and L7 is done)
    const int kind = classify_block(mask, row0, br, col0, bc, p.nk);
    if (kind == KeyMask::empty) continue;  // P_ij = 0: no loads, no FLOPs
    // Alg4 L10 / FA2b L9: load Q_i, dO_i (transposed and as is; rows past Nq 0), statistics
    const int64_t qoff = (h * p.nq + row0) * D;
    load_tile_transposed<BR, D, T::QLD>(Qt, Qs, p.Q + qoff, p.Q + qoff, br, tid);
    load_tile_transposed<BR, D, T::QLD>(dOt, dOs, p.dO + qoff, p.dO + qoff, br, tid);
    for (int r = tid; r < BR; r += T::kThreads) {
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
    __syncthreads();

    // Alg4 L11-12 / FA2b L10: S_ij = tau Q_i K_j^T in registers, masked entries -inf
    float s[RM][CM], dp[RM][CM];
    tile_product<RM, CM, D, T::QLD, T::KLD>(s, Qt, Kt, ty, tx);
    mask_scores<RM, CM>(s, mask, kind, row0 + ty * RM, col0, bc, tx, p.nk, p.scale);
    // Alg4 L17 / FA2b L13: dP_ij^dropped = dO_i V_j^T in registers
    tile_product<RM, CM, D, T::QLD, T::KLD>(dp, dOt, Vt, ty, tx);
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
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int c = 0; c < DM; ++c) dq[r][c] *= p.scale;
    atomic_add_rows<RM, DM>(p.dQ + qoff, dq, D, br, ty, tx);
  }

  // Alg4 L24 / FA2b L18: write dK_j = tau dK~_j, dV_j = dV~_j to HBM (rows < bc)
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

// The (Br, Bc, d) variant 2 is compiled for (shared memory 167.8 KiB, 109.8 KiB, 133.9 KiB).
#define FS_BWD_V2_CONFIGS(X) X(64, 64, 64) X(64, 64, 32) X(32, 32, 128)

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
  FS_BWD_V2_CONFIGS(FS_BWD_LAUNCH_CASE)
#undef FS_BWD_LAUNCH_CASE
  throw std::runtime_error("backward variant 2 has no instantiation for these block sizes");  // checked earlier
}

}  // namespace flashstep::gpu
