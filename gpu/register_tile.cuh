// Building blocks of the register-tiled kernels (fa1 variant 2, fa2 variant 2) and of
// Algorithm 2's additions in every kernel: 256 threads as 16 x 16, each owning a piece of a
// tile in registers; block classification against the mask; dropout of one weight.
#pragma once
#include "core/philox.h"
#include "gpu/device_mask.h"
#include "gpu/kernels.h"
#include "gpu/storage.cuh"

#include <cmath>

namespace flashstep::gpu {

// The geometry of variant 2 (fa1, fa2): 256 threads as 16 x 16 over a BR x BC tile of S_ij and
// a BR x D tile of O_i, each thread holding RM x CM and RM x DM of them in registers; Q_i^T,
// K_j^T and P~_ij^T in shared memory with row strides QLD, KLD, PLD (+4 keeps float4
// alignment) and sizes kQt, kKt, kPt floats.
template <int BR, int BC, int D>
struct RegisterTiling {
  static_assert(BR % 16 == 0 && BC % 16 == 0 && D % 16 == 0, "16 x 16 threads tile the blocks");
  static constexpr int kThreads = 256;
  static constexpr int RM = BR / 16, CM = BC / 16, DM = D / 16;
  static constexpr int QLD = BR + 4, KLD = BC + 4, PLD = BR + 4;
  static constexpr int kQt = D * QLD, kKt = D * KLD, kPt = BC * PLD;
};

// The n-th of the N columns thread tx (of 16) owns. With N a multiple of 4 they come in float4
// chunks interleaved across the 16 threads (chunk q starts at 64q + 4tx), so one 128-bit load
// by 16 threads reads 256 contiguous bytes; otherwise thread tx owns tx*N .. tx*N + N-1.
template <int N>
__device__ __forceinline__ int owned_col(int tx, int n) {
  if constexpr (N % 4 == 0) return (n / 4) * 64 + tx * 4 + (n % 4);
  else return tx * N + n;
}

template <int N>
__device__ __forceinline__ void load_owned(float (&dst)[N], const float* row, int tx) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int q = 0; q < N / 4; ++q) {
      const float4 v = *reinterpret_cast<const float4*>(row + q * 64 + tx * 4);
      dst[4 * q] = v.x; dst[4 * q + 1] = v.y; dst[4 * q + 2] = v.z; dst[4 * q + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int n = 0; n < N; ++n) dst[n] = row[tx * N + n];
  }
}

// N contiguous floats (the rows a thread owns; threads with the same ty read the same address).
template <int N>
__device__ __forceinline__ void load_contig(float (&dst)[N], const float* p) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int q = 0; q < N / 4; ++q) {
      const float4 v = *reinterpret_cast<const float4*>(p + 4 * q);
      dst[4 * q] = v.x; dst[4 * q + 1] = v.y; dst[4 * q + 2] = v.z; dst[4 * q + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int n = 0; n < N; ++n) dst[n] = p[n];
  }
}

// Reductions over the 16 threads that share a row group (lanes 0-15 or 16-31 of a warp).
__device__ __forceinline__ float group16_max(float v) {
#pragma unroll
  for (int off = 8; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
__device__ __forceinline__ float group16_sum(float v) {
#pragma unroll
  for (int off = 8; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// rowmax of one row of a register tile: the thread's CM columns, then its row group's 16.
template <int CM>
__device__ __forceinline__ float tile_row_max(const float (&row)[CM]) {
  float m = -INFINITY;
#pragma unroll
  for (int c = 0; c < CM; ++c) m = fmaxf(m, row[c]);
  return group16_max(m);
}

// Copies a ROWS x D tile from global memory into dst transposed (D x LD), and, if given, a
// second tile (V_j) untransposed into dst2 (ROWS x D). A warp takes 8 rows x 4 float4 chunks:
// each row's 64 contiguous bytes keep the global loads whole sectors, and with LD = 4 mod 32
// the transposed stores spread over 16 banks (2-way) instead of piling onto 2.
// Elements are converted from the storage type T to float32 on the way (gpu/storage.cuh).
template <int ROWS, int D, int LD, typename T = float>
__device__ __forceinline__ void load_tile_transposed(float* dst, float* dst2, const T* src,
                                                     const T* src2, int valid_rows, int tid) {
  static_assert(D % 16 == 0 && LD % 4 == 0, "float4 chunks, 4 per warp row");
  for (int e = tid; e < ROWS * D / 4; e += 256) {
    const int lo = e & 3, rest = e >> 2;
    const int r = rest % ROWS, k = ((rest / ROWS) * 4 + lo) * 4;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f), v2 = v;
    if (r < valid_rows) {
      v = load4<T>(src + r * D + k);
      if (dst2) v2 = load4<T>(src2 + r * D + k);
    }
    dst[(k + 0) * LD + r] = v.x;
    dst[(k + 1) * LD + r] = v.y;
    dst[(k + 2) * LD + r] = v.z;
    dst[(k + 3) * LD + r] = v.w;
    if (dst2) *reinterpret_cast<float4*>(dst2 + r * D + k) = v2;
  }
}

// acc = A^T B for the thread's rows ty*RM.. and owned columns: A is K x LDA (a transposed
// tile in shared memory), B is K x LDB; K steps of one contiguous RM-load, one owned CM-load
// and RM x CM FMAs (Alg1 L9 / FA2fwd L8 with A = Q_i^T, B = K_j^T; Alg1 L12 / FA2fwd L10 with
// A = P~_ij^T, B = V_j).
template <int RM, int CM, int K, int LDA, int LDB>
__device__ __forceinline__ void tile_product(float (&acc)[RM][CM], const float* A, const float* B, int ty,
                                             int tx) {
#pragma unroll
  for (int r = 0; r < RM; ++r)
#pragma unroll
    for (int c = 0; c < CM; ++c) acc[r][c] = 0.0f;
#pragma unroll 4
  for (int k = 0; k < K; ++k) {
    float a[RM], b[CM];
    load_contig<RM>(a, A + k * LDA + ty * RM);
    load_owned<CM>(b, B + k * LDB, tx);
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int c = 0; c < CM; ++c) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
  }
}

// Writes the thread's RM x CM values transposed into a (columns x LD) tile (P~_ij^T).
template <int RM, int CM, int LD>
__device__ __forceinline__ void store_transposed(float* dst, const float (&v)[RM][CM], int ty, int tx) {
#pragma unroll
  for (int c = 0; c < CM; ++c)
#pragma unroll
    for (int r = 0; r < RM; ++r) dst[owned_col<CM>(tx, c) * LD + ty * RM + r] = v[r][c];
}

// Algorithm 2's MASK for block (i, j) of one head: entirely kept, partly kept or entirely
// masked, exactly as KeyMask::classify (= core/mask.h's Mask::classify), computed with one row
// per thread and a block-wide OR / AND. Every thread of the block must call it.
__device__ __forceinline__ int classify_block(const KeyMask& m, int row0, int br, int col0, int bc,
                                              int nk) {
  if (!m.any()) return KeyMask::full;  // the same for every thread: no barrier needed
  bool some = false, all = true;
  for (int r = threadIdx.x; r < br; r += blockDim.x) {
    bool s, a;
    m.classify_row(row0 + r, col0, col0 + bc, nk, s, a);
    some = some || s;
    all = all && a;
  }
  const int any_some = __syncthreads_or(some ? 1 : 0);
  const int all_all = __syncthreads_and(all ? 1 : 0);
  return !any_some ? KeyMask::empty : all_all ? KeyMask::full : KeyMask::partial;
}

// Algorithm 2's dropout of one weight P~[row, col] of head h: 0 if dropped, else scaled by
// 1/(1-p), with the CPU's counter (seed; batch, head, row, column) and the CPU's arithmetic
// (core/philox.h's apply_dropout).
__device__ __forceinline__ float dropout_weight(float pt, const Extras& x, int64_t h, int row, int col) {
  const float scale = 1.0f / (1.0f - x.dropout);
  const bool keep = dropout_keep(x.seed, uint32_t(h / x.heads_per_batch), uint32_t(h % x.heads_per_batch),
                                 uint32_t(row), uint32_t(col), x.dropout);
  return keep ? pt * scale : 0.0f;
}

// Plain variants (fa1 v1, fa2 v1): K_j into rows of stride kld (d + 1: threads of one S row hit
// different banks) and V_j, converted from the storage type; bc valid rows of d elements.
template <typename T>
__device__ __forceinline__ void plain_load_kv(float* Kj, float* Vj, const T* Kg, const T* Vg, int bc, int d,
                                             int kld) {
  for (int e = threadIdx.x; e < bc * d; e += blockDim.x) {
    Kj[(e / d) * kld + e % d] = to_float(Kg[e]);
    Vj[e] = to_float(Vg[e]);
  }
}

// Plain variants: S_ij = tau Q_i K_j^T, one thread per element (row stride ldS), entries the
// mask removes -inf (kind: classify_block's answer for the block at (row0, col0)).
__device__ __forceinline__ void plain_scores(float* S, int ldS, const float* Qi, const float* Kj, int kld, int br,
                                             int bc, int d, const KeyMask& mask, int kind, int row0, int col0,
                                             int nk, float scale) {
  for (int e = threadIdx.x; e < br * bc; e += blockDim.x) {
    const int r = e / bc, c = e % bc;
    float acc = 0.0f;
    for (int k = 0; k < d; ++k) acc = fmaf(Qi[r * d + k], Kj[c * kld + k], acc);
    const bool kept = kind == KeyMask::full ||
                      (col0 + c >= mask.lo(row0 + r) && col0 + c <= mask.hi(row0 + r, nk));
    S[r * ldS + c] = kept ? acc * scale : -INFINITY;
  }
}

// Scales the thread's RM x CM scores (rows row0.., its owned columns of the block at col0) by
// tau; columns past the block's bc valid ones and, in a partly masked block, the masked
// entries become -inf.
template <int RM, int CM>
__device__ __forceinline__ void mask_scores(float (&s)[RM][CM], const KeyMask& mask, int kind, int row0,
                                            int col0, int bc, int tx, int nk, float scale) {
  if (kind == KeyMask::full) {
#pragma unroll
    for (int c = 0; c < CM; ++c) {
      const bool valid = owned_col<CM>(tx, c) < bc;
#pragma unroll
      for (int r = 0; r < RM; ++r) s[r][c] = valid ? s[r][c] * scale : -INFINITY;
    }
    return;
  }
#pragma unroll
  for (int r = 0; r < RM; ++r) {
    const int64_t lo = mask.lo(row0 + r) - col0, hi = mask.hi(row0 + r, nk) - col0;
#pragma unroll
    for (int c = 0; c < CM; ++c) {
      const int col = owned_col<CM>(tx, c);
      s[r][c] = (col < bc && col >= lo && col <= hi) ? s[r][c] * scale : -INFINITY;
    }
  }
}

// Dropout of the thread's RM x CM weights of P~ (rows row0.., owned columns of the block at col0).
template <int RM, int CM>
__device__ __forceinline__ void drop_weights(float (&s)[RM][CM], const Extras& x, int64_t h, int row0,
                                             int col0, int tx) {
#pragma unroll
  for (int r = 0; r < RM; ++r)
#pragma unroll
    for (int c = 0; c < CM; ++c) s[r][c] = dropout_weight(s[r][c], x, h, row0 + r, col0 + owned_col<CM>(tx, c));
}

}  // namespace flashstep::gpu
