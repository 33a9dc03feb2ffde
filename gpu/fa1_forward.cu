// Algorithm 1 of Dao et al. 2022 (FlashAttention forward) on the GPU, in the paper's loop
// order: the host loops over j (K/V blocks, Alg1 L5); one launch per j updates every Q block i
// of every head in parallel (Alg1 L7, one thread block per (i, head)). O, l and m live in global
// memory (HBM) and make a round trip at every (i, j), exactly as the CPU trace counts them.
// Launch boundaries order the j iterations, so no block ever reads an O_i another block of the
// same launch writes. The online-softmax update is core/online_softmax.h, shared with the CPU.
//
// Variants (choose with --variant; 0 picks 2 when it is compiled for (Br, Bc, d), else 1):
//   1  fa1_v1_kernel: the schedule written plainly. Any Br, Bc, d that fit in shared memory.
//      Q_i, K_j, V_j and S_ij (then P~_ij) in shared memory; one thread per element of S_ij,
//      one thread per row for L10-L11, one thread per element of O_i. Reference for variant 2.
//   2  fa1_v2_kernel<Br, Bc, d>: the same lines, register-tiled. 256 threads as 16 x 16; each
//      holds a (Br/16 x Bc/16) piece of S_ij and a (Br/16 x d/16) piece of O_i in registers.
//      Q_i and K_j are stored transposed so each k step is a few 128-bit shared loads and
//      (Br/16)(Bc/16) FMAs; row max and sum of L10 are 16-lane shuffles; P~_ij reuses the
//      shared memory of Q_i and K_j (dead after L9). Compiled for the (Br, Bc, d) in
//      FS_FA1_V2_CONFIGS below; ragged Nq, Nk are handled by masking (zero rows, -inf columns).
//   Both take Algorithm 2's additions (mask, dropout): a block (i, j) that the mask removes entirely
//   returns before loading anything (no loads, no FLOPs; classify_block is core/mask.h's rule),
//   a partly masked block sets its masked scores to -inf, and with dropout p > 0 the weights
//   of P~_ij are dropped and rescaled by Philox (core/philox.h) inside the update of O_i, while
//   l_i sums the undropped weights, as the CPU's Alg1 L12.
//   Both are compiled for each storage type ST of Q, K, V, O (float, __half, __nv_bfloat16:
//   --dtype): tiles are converted to float32 on load, O_i is read, updated in float32 and
//   rounded to nearest even as it is written back at every (i, j), as the CPU's Hbm does.
//   gpu/ladder/notes/fp32-kernels.md records each variant's time, prediction and outcome.
#include "core/online_softmax.h"
#include "gpu/common.cuh"
#include "gpu/flash_block.cuh"
#include "gpu/kernels.h"
#include "gpu/register_tile.cuh"

#include <cmath>
#include <type_traits>

namespace flashstep::gpu {

// ---------------------------------------------------------------------------------------------
// Alg1 L2: O = 0, l = 0, m = -inf in HBM.
// O = 0 and l = 0 are zero bytes in every storage type (a memset); m = -inf takes a kernel.
__global__ void fa1_init_m_kernel(float* m, int64_t rows) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < rows; e += stride) m[e] = -INFINITY;
}

void fa1_init(const Fa1Params& p) {
  const int64_t o_count = p.heads * p.nq * p.d, rows = p.heads * p.nq;
  CUDA_CHECK(cudaMemsetAsync(p.O, 0, size_t(o_count) * size_t(storage_bytes(p.dtype))));
  CUDA_CHECK(cudaMemsetAsync(p.l, 0, size_t(rows) * 4));
  fa1_init_m_kernel<<<int(std::min<int64_t>((rows + 255) / 256, 65536)), 256>>>(p.m, rows);
  CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// Thread block (i, h) of launch j: its Q block (QBlock), K/V block j with the block's class
// under the mask (Algorithm 2; every thread computes it, classify_block synchronises), and the
// head's l_i, m_i in HBM.
template <typename ST>
struct Fa1Block : QBlock<ST> {
  int col0, bc, kind;
  const ST *Kj, *Vj;
  float *l, *m;
  __device__ Fa1Block(const Fa1Params& p, int Br, int Bc, int j)
      : QBlock<ST>(p, Br),
        col0(j * Bc),
        bc(min(Bc, p.nk - col0)),
        kind(classify_block(this->mask, this->row0, this->br, col0, bc, p.nk)),
        Kj(this->K + int64_t(col0) * p.d),
        Vj(this->V + int64_t(col0) * p.d),
        l(p.l + this->h * p.nq + this->row0),
        m(p.m + this->h * p.nq + this->row0) {}
};

// ---------------------------------------------------------------------------------------------
// Variant 1: plain.
static int64_t v1_smem_floats(int Br, int Bc, int d) {
  return PlainTiles::floats(Br, Bc, d) + 5 * int64_t(Br);  // + m_i, l_i, l_i^new, alpha, beta
}

template <typename ST>
__global__ void fa1_v1_kernel(Fa1Params p, int j) {
  extern __shared__ float smem[];
  const int d = p.d, Br = p.Br, Bc = p.Bc;
  const PlainTiles tiles(smem, Br, Bc, d);
  float *Qi = tiles.Qi, *Kj = tiles.Kj, *Vj = tiles.Vj, *S = tiles.S;
  const int kld = tiles.kld;
  float* m_old = tiles.rest;  // Br each: m_i, l_i as loaded, l_i^new, alpha, beta
  float* l_old = m_old + Br;
  float* l_new = l_old + Br;
  float* alpha = l_new + Br;
  float* beta = alpha + Br;

  const Fa1Block<ST> b(p, Br, Bc, j);
  if (b.kind == KeyMask::empty) return;  // Algorithm 2: entirely masked, no loads, no FLOPs

  // Alg1 L6: load K_j, V_j from HBM to SRAM
  plain_load_kv<ST>(Kj, Vj, b.Kj, b.Vj, b.bc, d, kld);
  // Alg1 L8: load Q_i, l_i, m_i from HBM to SRAM (O_i is read element by element in L12)
  for (int e = threadIdx.x; e < b.br * d; e += blockDim.x) Qi[e] = to_float(b.Q[e]);
  for (int r = threadIdx.x; r < b.br; r += blockDim.x) {
    m_old[r] = b.m[r];
    l_old[r] = b.l[r];
  }
  __syncthreads();

  // Alg1 L9: S_ij = tau Q_i K_j^T
  plain_scores(S, Bc, Qi, Kj, kld, b.br, b.bc, d, b.mask, b.kind, b.row0, b.col0, p.nk, p.scale);
  __syncthreads();

  // Alg1 L10: m~_ij = rowmax(S_ij), P~_ij = exp(S_ij - m~_ij), l~_ij = rowsum(P~_ij)
  // Alg1 L11: m_i^new, l_i^new; Alg1 L13: write them to HBM (L12 uses the on-chip copies).
  for (int r = threadIdx.x; r < b.br; r += blockDim.x) {
    float* Sr = S + r * Bc;
    float mt = -INFINITY;
    for (int c = 0; c < b.bc; ++c) mt = fmaxf(mt, Sr[c]);
    float lt = 0.0f;
    for (int c = 0; c < b.bc; ++c) {
      Sr[c] = softmax_weight(Sr[c], mt);  // 0 in a fully masked row (mt = -inf)
      lt += Sr[c];
      // Algorithm 2: dropout inside the update of O_i (L12); l~_ij keeps the undropped sum.
      if (p.x.dropout > 0.0f) Sr[c] = dropout_weight(Sr[c], p.x, b.h, b.row0 + r, b.col0 + c);
    }
    const float mnew = merged_max(m_old[r], mt);
    alpha[r] = rescale_factor(m_old[r], mnew);
    beta[r] = rescale_factor(mt, mnew);
    l_new[r] = merged_sum(alpha[r], l_old[r], beta[r], lt);
    b.l[r] = l_new[r];
    b.m[r] = mnew;
  }
  __syncthreads();

  // Alg1 L12: O_i <- diag(l_new)^-1 (diag(l_i) alpha O_i + beta P~_ij V_j), write to HBM
  for (int e = threadIdx.x; e < b.br * d; e += blockDim.x) {
    const int r = e / d, c = e % d;
    float pv = 0.0f;
    for (int k = 0; k < b.bc; ++k) pv = fmaf(S[r * Bc + k], Vj[k * d + c], pv);
    b.O[e] = from_float<ST>(merged_output(l_old[r], alpha[r], to_float(b.O[e]), beta[r], pv, l_new[r]));
  }
}

// ---------------------------------------------------------------------------------------------
// Variant 2: register-tiled.
template <int BR, int BC, int D>
struct V2Traits : RegisterTiling<BR, BC, D> {
  using G = RegisterTiling<BR, BC, D>;
  // P~_ij overwrites Q_i^T and K_j^T once L9 is done with them.
  static constexpr int kRegion0 = (G::kQt + G::kKt > G::kPt) ? G::kQt + G::kKt : G::kPt;
  static constexpr int kFloats = kRegion0 + BC * D;  // + V_j
  static constexpr int64_t kSmemBytes = int64_t(kFloats) * 4;
};

template <int BR, int BC, int D, typename ST>
__global__ void __launch_bounds__(256) fa1_v2_kernel(Fa1Params p, int j) {
  using T = V2Traits<BR, BC, D>;
  constexpr int RM = T::RM, CM = T::CM, DM = T::DM;
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  float* Qt = smem;             // D x QLD: Q_i transposed
  float* Kt = smem + T::kQt;    // D x KLD: K_j transposed
  float* Pt = smem;             // BC x PLD: P~_ij transposed (after L9)
  float* Vs = smem + T::kRegion0;  // BC x D

  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const Fa1Block<ST> b(p, BR, BC, j);
  if (b.kind == KeyMask::empty) return;  // Algorithm 2: entirely masked, no loads, no FLOPs

  // Alg1 L6: load K_j (transposed) and V_j from HBM to SRAM; rows past Nk become zeros.
  load_tile_transposed<BC, D, T::KLD, ST>(Kt, Vs, b.Kj, b.Vj, b.bc, tid);
  // Alg1 L8: load Q_i (transposed); rows past Nq become zeros and are never written back.
  load_tile_transposed<BR, D, T::QLD, ST>(Qt, nullptr, b.Q, nullptr, b.br, tid);
  __syncthreads();

  // Alg1 L9: S_ij = tau Q_i K_j^T, in registers
  float s[RM][CM];
  tile_product<RM, CM, D, T::QLD, T::KLD>(s, Qt, Kt, ty, tx);
  // Columns past Nk, and the masked scores of a partly masked block, become -inf: zero
  // weight in L10.
  mask_scores<RM, CM>(s, b.mask, b.kind, b.row0 + ty * RM, b.col0, b.bc, tx, p.nk, p.scale);

  // Alg1 L10: m~_ij = rowmax(S_ij), P~_ij = exp(S_ij - m~_ij), l~_ij = rowsum(P~_ij)
  // Alg1 L8 (rest) and L11: load l_i, m_i; m_i^new, l_i^new and the two rescale factors.
  float l_old[RM], m_new[RM], l_new[RM], alpha[RM], beta[RM];
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    const float mt = tile_row_max<CM>(s[r]);
    float lt = 0.0f;
#pragma unroll
    for (int c = 0; c < CM; ++c) {
      s[r][c] = softmax_weight(s[r][c], mt);  // 0 in a fully masked row (mt = -inf)
      lt += s[r][c];
    }
    lt = group16_sum(lt);
    const int row = ty * RM + r;
    const float mo = row < b.br ? b.m[row] : -INFINITY;
    l_old[r] = row < b.br ? b.l[row] : 0.0f;
    m_new[r] = merged_max(mo, mt);
    alpha[r] = rescale_factor(mo, m_new[r]);
    beta[r] = rescale_factor(mt, m_new[r]);
    l_new[r] = merged_sum(alpha[r], l_old[r], beta[r], lt);
  }
  __syncthreads();  // every thread is done with Q_i^T and K_j^T: P~_ij takes their place
  // Algorithm 2: dropout inside the update of O_i (L12); l~_ij keeps the undropped sum.
  if (p.x.dropout > 0.0f) drop_weights<RM, CM>(s, p.x, b.h, b.row0 + ty * RM, b.col0, tx);
  store_transposed<RM, CM, T::PLD>(Pt, s, ty, tx);
  __syncthreads();

  // Alg1 L12: O_i <- diag(l_new)^-1 (diag(l_i) alpha O_i + beta P~_ij V_j), write to HBM
  float acc[RM][DM];
  tile_product<RM, DM, BC, T::PLD, D>(acc, Pt, Vs, ty, tx);
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    const int row = ty * RM + r;
    if (row >= b.br) continue;
    ST* Orow = b.O + int64_t(row) * D;
    if constexpr (DM % 4 == 0 && std::is_same_v<ST, float>) {
#pragma unroll
      for (int q = 0; q < DM / 4; ++q) {
        float4* o4 = reinterpret_cast<float4*>(Orow + q * 64 + tx * 4);
        float4 o = *o4;  // O_i from HBM (Alg1 L8), updated and written back at once
        o.x = merged_output(l_old[r], alpha[r], o.x, beta[r], acc[r][4 * q + 0], l_new[r]);
        o.y = merged_output(l_old[r], alpha[r], o.y, beta[r], acc[r][4 * q + 1], l_new[r]);
        o.z = merged_output(l_old[r], alpha[r], o.z, beta[r], acc[r][4 * q + 2], l_new[r]);
        o.w = merged_output(l_old[r], alpha[r], o.w, beta[r], acc[r][4 * q + 3], l_new[r]);
        *o4 = o;
      }
    } else {
#pragma unroll
      for (int c = 0; c < DM; ++c) {
        ST& o = Orow[owned_col<DM>(tx, c)];  // read, update in float32, round on the store
        o = from_float<ST>(merged_output(l_old[r], alpha[r], to_float(o), beta[r], acc[r][c], l_new[r]));
      }
    }
  }
  // Alg1 L13: write l_i <- l_i^new, m_i <- m_i^new to HBM (one thread per row)
  if (tx == 0) {
#pragma unroll
    for (int r = 0; r < RM; ++r) {
      const int row = ty * RM + r;
      if (row < b.br) {
        b.l[row] = l_new[r];
        b.m[row] = m_new[r];
      }
    }
  }
}

// The (Br, Bc, d) variant 2 is compiled for: the paper's blocks at M = 128 KiB for d = 64 and
// d = 128 (Br = 64, Bc = 128 and 64), and the Bc sweep of bench-gpu (float32 storage only:
// v2_takes_16bit, gpu/common.cuh).
#define FS_FA1_V2_CONFIGS(X) \
  X(64, 16, 64) X(64, 32, 64) X(64, 64, 64) X(64, 128, 64) X(64, 256, 64) \
  X(64, 16, 128) X(64, 32, 128) X(64, 64, 128) X(64, 128, 128)

template <int BR, int BC, int D>
static void launch_v2(const Fa1Params& p, int j) {
  using T = V2Traits<BR, BC, D>;
  if constexpr (v2_takes_16bit(BR, BC, D)) {
    with_storage(p.dtype, [&](auto st) {
      static int64_t opted = 48 * 1024;  // one per kernel: per (BR, BC, D) and storage type
      launch_per_q_block(fa1_v2_kernel<BR, BC, D, decltype(st)>, p, T::kThreads, T::kSmemBytes, opted, j);
    });
  } else {
    if (p.dtype != Storage::fp32)  // check_flash (backend.cpp) refuses this before any work
      throw std::runtime_error("fa1 variant 2 at these sizes is compiled for float32 storage only");
    static int64_t opted = 48 * 1024;
    launch_per_q_block(fa1_v2_kernel<BR, BC, D, float>, p, T::kThreads, T::kSmemBytes, opted, j);
  }
}

static void launch_v1(const Fa1Params& p, int j) {
  with_storage(p.dtype, [&](auto st) {
    static int64_t opted = 48 * 1024;  // one per kernel: per storage type
    launch_per_q_block(fa1_v1_kernel<decltype(st)>, p, 256, v1_smem_floats(p.Br, p.Bc, p.d) * 4, opted, j);
  });
}

static int64_t v1_smem_bytes(int Br, int Bc, int d) { return v1_smem_floats(Br, Bc, d) * 4; }

static Variants<Fa1Params, int>::V2 v2_instance(int Br, int Bc, int d) {
#define FS_V2_CASE(br, bc, dd) \
  if (Br == br && Bc == bc && d == dd) return {V2Traits<br, bc, dd>::kSmemBytes, launch_v2<br, bc, dd>};
  FS_FA1_V2_CONFIGS(FS_V2_CASE)
#undef FS_V2_CASE
  return {};
}

static const Variants<Fa1Params, int> kFa1 = {v1_smem_bytes, launch_v1, v2_instance, "fa1"};

const char* fa1_v2_config_list() { return FS_FA1_V2_CONFIGS(FS_CONFIG_NAME); }
int64_t fa1_smem_bytes(int variant, int Br, int Bc, int d) { return kFa1.smem_bytes(variant, Br, Bc, d); }
void fa1_launch_j(int variant, const Fa1Params& p, int j) { kFa1.launch(variant, p, j); }

}  // namespace flashstep::gpu
