// FlashAttention-2 forward (Dao 2023, Algorithm 1) on the GPU: the loop order of
// core/schedules/fa2/forward.cpp. One launch; one thread block per (Q block i, head), so the grid
// parallelises over Q blocks and batch x heads. Each block loads Q_i once, keeps O_i, l_i and
// m_i on chip for its whole inner loop over j, divides O_i by l_i once at the end and writes
// only O_i and L_i = m_i + log l_i. The online-softmax update is core/online_softmax.h.
//
// Algorithm 2's additions, in every variant: a block (i, j) the mask removes entirely is
// skipped (no loads of K_j, V_j, no FLOPs; classify_block is core/mask.h's rule); a partly
// masked one sets its masked scores to -inf; dropout drops and rescales the weights of P~_ij by
// Philox (core/philox.h, keyed by seed and (batch, head, row, column)) just before P~_ij V_j,
// while l_i sums the undropped weights, as the CPU's FA2fwd L10. A row that keeps no key ends with
// l = 0: O = 0 and L = -inf (normalised_output, row_logsumexp).
// Q, K, V, O are stored as T (float, __half, __nv_bfloat16: --dtype); tiles are converted to
// float32 on load, arithmetic is float32, O is rounded to nearest even on store.
//
// Variants (choose with --variant; 0 picks 2 when it is compiled for (Br, Bc, d), else 1):
//   1  fa2_v1_kernel<T>: the schedule written plainly, any Br, Bc, d that fit in shared memory.
//      Q_i, K_j, V_j, S_ij (then P~_ij) and O_i in shared memory; one thread per element of
//      S_ij, one per row for L9, one per element of O_i. Reference for variant 2.
//   2  fa2_v2_kernel<Br, Bc, d, T>: fa1 variant 2's register tiling (gpu/register_tile.cuh)
//      with the loop over j inside the kernel: O_i, l_i, m_i live in registers for the whole
//      loop (no HBM round trip per j, which is FA2's whole point), Q_i^T stays in shared
//      memory, P~_ij^T takes the place of K_j^T once S_ij is in registers. Compiled for the
//      (Br, Bc, d) in FS_FA2_V2_CONFIGS below, for each storage type.
//   1s fa2_v1_kernel<T, true>: variant 1 that also dumps O_i^(j), l_i^(j), m_i^(j) (float32, O
//      not yet divided by l_i) to global memory after every inner step j, a skipped one
//      included, for `gpu --snapshots`. The normal instantiation (false) compiles
//      without the dump, so the kernels that are timed are unchanged.
//   gpu/ladder/notes/fp32-kernels.md records each variant's time, prediction and outcome.
#include "core/online_softmax.h"
#include "gpu/common.cuh"
#include "gpu/flash_block.cuh"
#include "gpu/kernels.h"
#include "gpu/register_tile.cuh"

#include <cmath>

namespace flashstep::gpu {

// ---------------------------------------------------------------------------------------------
// Variant 1: plain.
static int64_t fa2_v1_smem_floats(int Br, int Bc, int d) {
  return PlainTiles::floats(Br, Bc, d) + int64_t(Br) * d + 3 * int64_t(Br);  // + O_i; m_i, l_i, alpha
}

// The snapshot of inner step j: this block's rows of O_i, l_i, m_i at (j, head, row) of the
// (Tc, heads, Nq[, d]) buffers. Each thread writes the O_i elements it updates in FA2fwd L10
// and the rows it updates in L9, so no extra barrier is needed.
__device__ inline void fa2_dump_state(const Fa2Params& p, int j, int64_t h, int row0, int br, const float* Oi,
                                      const float* mi, const float* li) {
  const int64_t base = (int64_t(j) * p.heads + h) * p.nq + row0;
  for (int e = threadIdx.x; e < br * p.d; e += blockDim.x) p.snap_O[base * p.d + e] = Oi[e];
  for (int r = threadIdx.x; r < br; r += blockDim.x) {
    p.snap_l[base + r] = li[r];
    p.snap_m[base + r] = mi[r];
  }
}

template <typename T, bool kSnapshots = false>
__global__ void fa2_v1_kernel(Fa2Params p) {
  extern __shared__ float smem[];
  const int d = p.d, Br = p.Br, Bc = p.Bc;
  const PlainTiles tiles(smem, Br, Bc, d);
  float *Qi = tiles.Qi, *Kj = tiles.Kj, *Vj = tiles.Vj, *S = tiles.S;
  const int kld = tiles.kld;
  float* Oi = tiles.rest;      // Br x d, unnormalised until FA2fwd L12
  float* mi = Oi + Br * d;     // Br each
  float* li = mi + Br;
  float* alpha = li + Br;

  const QBlock<T> q(p, Br);  // Q block i = blockIdx.x of head h = blockIdx.y

  // FA2fwd L4: load Q_i from HBM to SRAM. FA2fwd L5: on chip, O_i = 0, l_i = 0, m_i = -inf.
  for (int e = threadIdx.x; e < q.br * d; e += blockDim.x) {
    Qi[e] = to_float(q.Q[e]);
    Oi[e] = 0.0f;
  }
  for (int r = threadIdx.x; r < q.br; r += blockDim.x) {
    mi[r] = -INFINITY;
    li[r] = 0.0f;
  }

  for (int j = 0; j < p.Tc; ++j) {
    const int col0 = j * Bc, bc = min(Bc, p.nk - col0);
    __syncthreads();  // the previous j is done with K_j, V_j and P~_ij (and L4/L5 are done)
    const int kind = classify_block(q.mask, q.row0, q.br, col0, bc, p.nk);
    if (kind == KeyMask::empty) {  // Algorithm 2: entirely masked, no loads, no FLOPs
      if constexpr (kSnapshots) fa2_dump_state(p, j, q.h, q.row0, q.br, Oi, mi, li);  // unchanged
      continue;
    }
    // FA2fwd L7: load K_j, V_j from HBM to SRAM
    plain_load_kv<T>(Kj, Vj, q.K + int64_t(col0) * d, q.V + int64_t(col0) * d, bc, d, kld);
    __syncthreads();

    // FA2fwd L8: S_ij = tau Q_i K_j^T, masked entries -inf
    plain_scores(S, Bc, Qi, Kj, kld, q.br, bc, d, q.mask, kind, q.row0, col0, p.nk, p.scale);
    __syncthreads();

    // FA2fwd L9: m_new = max(m, rowmax S), P~ = exp(S - m_new), l = e^(m - m_new) l + rowsum P~
    for (int r = threadIdx.x; r < q.br; r += blockDim.x) {
      float* Sr = S + r * Bc;
      float mt = -INFINITY;
      for (int c = 0; c < bc; ++c) mt = fmaxf(mt, Sr[c]);
      const float mnew = merged_max(mi[r], mt);
      alpha[r] = rescale_factor(mi[r], mnew);
      float lt = 0.0f;
      for (int c = 0; c < bc; ++c) {
        Sr[c] = softmax_weight(Sr[c], mnew);  // 0 while nothing is kept (m_new = -inf)
        lt += Sr[c];
        // Algorithm 2: dropout just before P~_ij V_j (FA2fwd L10); l_i sums the undropped weights.
        if (p.x.dropout > 0.0f) Sr[c] = dropout_weight(Sr[c], p.x, q.h, q.row0 + r, col0 + c);
      }
      li[r] = merged_sum(alpha[r], li[r], 1.0f, lt);
      mi[r] = mnew;
    }
    __syncthreads();

    // FA2fwd L10: O_i = diag(e^(m_old - m_new)) O_i + P~_ij V_j (not normalised)
    for (int e = threadIdx.x; e < q.br * d; e += blockDim.x) {
      const int r = e / d, c = e % d;
      float pv = 0.0f;
      for (int k = 0; k < bc; ++k) pv = fmaf(S[r * Bc + k], Vj[k * d + c], pv);
      Oi[e] = accumulated_output(alpha[r], Oi[e], pv);
    }
    if constexpr (kSnapshots) fa2_dump_state(p, j, q.h, q.row0, q.br, Oi, mi, li);
  }
  __syncthreads();

  // FA2fwd L12: O_i = diag(l_i)^-1 O_i, once; FA2fwd L14: write O_i to HBM (rounded to T)
  for (int e = threadIdx.x; e < q.br * d; e += blockDim.x)
    q.O[e] = from_float<T>(normalised_output(Oi[e], li[e / d]));
  // FA2fwd L13, L15: L_i = m_i + log(l_i), written to HBM
  for (int r = threadIdx.x; r < q.br; r += blockDim.x)
    p.lse[q.h * p.nq + q.row0 + r] = row_logsumexp(mi[r], li[r]);
}

// ---------------------------------------------------------------------------------------------
// Variant 2: register-tiled.
template <int BR, int BC, int D>
struct Fa2V2Traits : RegisterTiling<BR, BC, D> {
  using G = RegisterTiling<BR, BC, D>;
  static constexpr int kRegion1 = G::kKt > G::kPt ? G::kKt : G::kPt;  // K_j^T, then P~_ij^T
  static constexpr int kFloats = G::kQt + kRegion1 + BC * D;      // + V_j
  static constexpr int64_t kSmemBytes = int64_t(kFloats) * 4;
};

template <int BR, int BC, int D, typename T>
__global__ void __launch_bounds__(256) fa2_v2_kernel(Fa2Params p) {
  using Tr = Fa2V2Traits<BR, BC, D>;
  constexpr int RM = Tr::RM, CM = Tr::CM, DM = Tr::DM;
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  float* Qt = smem;                        // D x QLD: Q_i transposed, for the whole loop
  float* Kt = smem + Tr::kQt;              // D x KLD: K_j transposed
  float* Pt = Kt;                          // BC x PLD: P~_ij transposed (after FA2fwd L8)
  float* Vs = smem + Tr::kQt + Tr::kRegion1;  // BC x D

  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const QBlock<T> q(p, BR);  // Q block i = blockIdx.x of head h = blockIdx.y

  // FA2fwd L4: load Q_i (transposed) from HBM to SRAM; rows past Nq become zeros, never written.
  load_tile_transposed<BR, D, Tr::QLD, T>(Qt, nullptr, q.Q, nullptr, q.br, tid);
  // FA2fwd L5: on chip (registers), O_i = 0, l_i = 0, m_i = -inf
  float o[RM][DM], l[RM], m[RM];
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    l[r] = 0.0f;
    m[r] = -INFINITY;
#pragma unroll
    for (int c = 0; c < DM; ++c) o[r][c] = 0.0f;
  }

  for (int j = 0; j < p.Tc; ++j) {
    const int col0 = j * BC, bc = min(BC, p.nk - col0);
    __syncthreads();  // the previous j is done with P~_ij^T and V_j
    const int kind = classify_block(q.mask, q.row0, q.br, col0, bc, p.nk);
    if (kind == KeyMask::empty) continue;  // Algorithm 2: entirely masked, no loads, no FLOPs
    // FA2fwd L7: load K_j (transposed) and V_j from HBM to SRAM; rows past Nk become zeros.
    load_tile_transposed<BC, D, Tr::KLD, T>(Kt, Vs, q.K + int64_t(col0) * D, q.V + int64_t(col0) * D,
                                            bc, tid);
    __syncthreads();

    // FA2fwd L8: S_ij = tau Q_i K_j^T in registers; masked entries and columns past Nk -inf
    float s[RM][CM];
    tile_product<RM, CM, D, Tr::QLD, Tr::KLD>(s, Qt, Kt, ty, tx);
    mask_scores<RM, CM>(s, q.mask, kind, q.row0 + ty * RM, col0, bc, tx, p.nk, p.scale);

    // FA2fwd L9: m_new = max(m, rowmax S), P~ = exp(S - m_new), l = e^(m - m_new) l + rowsum P~
    float alpha[RM];
#pragma unroll
    for (int r = 0; r < RM; ++r) {
      const float mt = tile_row_max<CM>(s[r]);
      const float mnew = merged_max(m[r], mt);
      alpha[r] = rescale_factor(m[r], mnew);
      float lt = 0.0f;
#pragma unroll
      for (int c = 0; c < CM; ++c) {
        s[r][c] = softmax_weight(s[r][c], mnew);  // 0 while nothing is kept (m_new = -inf)
        lt += s[r][c];
      }
      l[r] = merged_sum(alpha[r], l[r], 1.0f, group16_sum(lt));
      m[r] = mnew;
    }
    // Algorithm 2: dropout just before P~_ij V_j (FA2fwd L10); l_i keeps the undropped sum.
    if (p.x.dropout > 0.0f) drop_weights<RM, CM>(s, p.x, q.h, q.row0 + ty * RM, col0, tx);
    __syncthreads();  // every thread is done with K_j^T: P~_ij^T takes its place
    store_transposed<RM, CM, Tr::PLD>(Pt, s, ty, tx);
    __syncthreads();

    // FA2fwd L10: O_i = diag(e^(m_old - m_new)) O_i + P~_ij V_j (not normalised)
    float pv[RM][DM];
    tile_product<RM, DM, BC, Tr::PLD, D>(pv, Pt, Vs, ty, tx);
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int c = 0; c < DM; ++c) o[r][c] = accumulated_output(alpha[r], o[r][c], pv[r][c]);
  }

  // FA2fwd L12: O_i = diag(l_i)^-1 O_i, once; FA2fwd L14: write O_i to HBM (rounded to T).
  // FA2fwd L13, L15: L_i = m_i + log(l_i) to HBM (one thread per row).
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    const int row = ty * RM + r;
    if (row >= q.br) continue;
    T* Orow = q.O + int64_t(row) * D;
#pragma unroll
    for (int c = 0; c < DM; ++c) Orow[owned_col<DM>(tx, c)] = from_float<T>(normalised_output(o[r][c], l[r]));
    if (tx == 0) p.lse[q.h * p.nq + q.row0 + row] = row_logsumexp(m[r], l[r]);
  }
}

// The (Br, Bc, d) variant 2 is compiled for: the paper's blocks at M = 128 KiB (d = 64:
// Br = 64, Bc = 128; d = 128: Br = Bc = 64) and two alternatives at d = 64 for the block sweep
// (float32 storage only: v2_takes_16bit, gpu/common.cuh).
#define FS_FA2_V2_CONFIGS(X) X(64, 128, 64) X(64, 64, 64) X(128, 64, 64) X(64, 64, 128)

template <int BR, int BC, int D>
static void launch_fa2_v2(const Fa2Params& p) {
  using Tr = Fa2V2Traits<BR, BC, D>;
  if constexpr (v2_takes_16bit(BR, BC, D)) {
    with_storage(p.dtype, [&](auto st) {
      static int64_t opted = 48 * 1024;  // one per kernel: per (BR, BC, D) and storage type
      launch_per_q_block(fa2_v2_kernel<BR, BC, D, decltype(st)>, p, Tr::kThreads, Tr::kSmemBytes, opted);
    });
  } else {
    if (p.dtype != Storage::fp32)  // check_flash (backend.cpp) refuses this before any work
      throw std::runtime_error("fa2 variant 2 at these sizes is compiled for float32 storage only");
    static int64_t opted = 48 * 1024;
    launch_per_q_block(fa2_v2_kernel<BR, BC, D, float>, p, Tr::kThreads, Tr::kSmemBytes, opted);
  }
}

static void launch_fa2_v1(const Fa2Params& p) {
  with_storage(p.dtype, [&](auto st) {
    static int64_t opted = 48 * 1024;  // one per kernel: per storage type
    launch_per_q_block(fa2_v1_kernel<decltype(st)>, p, 256, fa2_v1_smem_floats(p.Br, p.Bc, p.d) * 4, opted);
  });
}

static int64_t v1_smem_bytes(int Br, int Bc, int d) { return fa2_v1_smem_floats(Br, Bc, d) * 4; }

void fa2_snapshot_launch(const Fa2Params& p) {
  with_storage(p.dtype, [&](auto st) {
    static int64_t opted = 48 * 1024;  // one per kernel: per storage type
    launch_per_q_block(fa2_v1_kernel<decltype(st), true>, p, 256, v1_smem_bytes(p.Br, p.Bc, p.d), opted);
  });
}

static Variants<Fa2Params>::V2 v2_instance(int Br, int Bc, int d) {
#define FS_V2_CASE(br, bc, dd) \
  if (Br == br && Bc == bc && d == dd) return {Fa2V2Traits<br, bc, dd>::kSmemBytes, launch_fa2_v2<br, bc, dd>};
  FS_FA2_V2_CONFIGS(FS_V2_CASE)
#undef FS_V2_CASE
  return {};
}

static const Variants<Fa2Params> kFa2 = {v1_smem_bytes, launch_fa2_v1, v2_instance, "fa2"};

const char* fa2_v2_config_list() { return FS_FA2_V2_CONFIGS(FS_CONFIG_NAME); }
int64_t fa2_smem_bytes(int variant, int Br, int Bc, int d) { return kFa2.smem_bytes(variant, Br, Bc, d); }
void fa2_launch(int variant, const Fa2Params& p) { kFa2.launch(variant, p); }

}  // namespace flashstep::gpu
