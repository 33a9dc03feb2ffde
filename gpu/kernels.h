// Host-side launchers of the kernels in gpu/*.cu. Plain types only, so host code compiled by
// the C++ compiler (backend.cpp) can call them without seeing device code or Eigen seeing nvcc.
//
// Tensors are row-major, laid out (BH, N, d) with BH = B * H heads. Q, K, V, O of the flash
// kernels are of the storage type (Storage: float32, fp16 or bf16; void pointers below); S, P of
// the standard baseline, l, m and lse ((BH, N)) are float32. Every launcher checks its launch
// (CUDA_CHECK_LAUNCH) and returns without waiting.
#pragma once
#include "gpu/device_mask.h"

#include <cstdint>

namespace flashstep::gpu {

// Storage type of Q, K, V, O in global memory; the order of flashstep::Dtype (core/types.h).
enum class Storage : int { fp32 = 0, fp16 = 1, bf16 = 2 };
inline int storage_bytes(Storage t) { return t == Storage::fp32 ? 4 : 2; }

// Algorithm 2's additions, the same for every kernel: the mask, dropout with probability p
// from Philox keyed by `seed` and (batch, head, row, column) (core/philox.h), and the number
// of heads per batch entry (head h of the flat B x H belongs to batch h / H, head h % H).
struct Extras {
  KeyMask mask;
  float dropout = 0.0f;
  uint64_t seed = 0;
  int64_t heads_per_batch = 1;
};

// Sizes of one launch of Algorithm 1 at a fixed j (see fa1_forward.cu).
struct Fa1Params {
  const void *Q = nullptr, *K = nullptr, *V = nullptr;  // of the storage type
  void* O = nullptr;                                    // of the storage type
  float *l = nullptr, *m = nullptr;
  Storage dtype = Storage::fp32;
  int64_t heads = 1;
  int nq = 0, nk = 0, d = 0;
  int Br = 0, Bc = 0, Tr = 0, Tc = 0;
  float scale = 1.0f;
  Extras x;
};

// fa1_forward.cu
// Shared memory (bytes) a variant needs for these block sizes; -1 if the variant has no
// instantiation for them (variant 2 is compiled for a fixed list of (Br, Bc, d)).
int64_t fa1_smem_bytes(int variant, int Br, int Bc, int d);
// Alg1 L2: O = 0, l = 0, m = -inf.
void fa1_init(const Fa1Params& p);
// Alg1 L5-L15 for one j: every Q block i of every head updated in parallel.
void fa1_launch_j(int variant, const Fa1Params& p, int j);

// matmul.cu: batched C = alpha * A op(B) for each of `batch` heads.
//   A (M x K), B (K x N) when !b_transposed, (N x K) when b_transposed; C (M x N).
void matmul_batched(const float* A, const float* B, float* C, int64_t batch, int M, int N, int K,
                    float alpha, bool b_transposed);

// row_softmax.cu: P = softmax(S) row by row; lse[row] = rowmax + log(rowsum). Masked scores
// get zero weight; with dropout, P holds the dropped and rescaled weights (lse does not).
// Rows are (heads x nq), so row -> (head, query row) for the mask and the dropout counter.
void row_softmax(const float* S, float* P, float* lse, int64_t rows, int cols, int nq,
                 const Extras& x);

// FlashAttention-2 forward (fa2_forward.cu): one launch, one thread block per (i, head).
struct Fa2Params {
  const void *Q = nullptr, *K = nullptr, *V = nullptr;  // of the storage type
  void* O = nullptr;                                    // of the storage type
  float* lse = nullptr;                                 // float32
  int64_t heads = 1;
  int nq = 0, nk = 0, d = 0;
  int Br = 0, Bc = 0, Tr = 0, Tc = 0;
  float scale = 1.0f;
  Storage dtype = Storage::fp32;
  Extras x;
  // fa2_snapshot_launch only: O_i^(j) (Tc, heads, Nq, d), l_i^(j) and m_i^(j) (Tc, heads, Nq).
  float *snap_O = nullptr, *snap_l = nullptr, *snap_m = nullptr;
};
// Shared memory (bytes) of a variant for these sizes; -1 if it has no kernel for them.
int64_t fa2_smem_bytes(int variant, int Br, int Bc, int d);
void fa2_launch(int variant, const Fa2Params& p);
// Variant 1 with the on-chip state dumped after every inner step j into p.snap_*.
void fa2_snapshot_launch(const Fa2Params& p);
const char* fa2_v2_config_list();

// convert.cu: float32 <-> storage type (round to nearest even), and the dropout keep mask of
// a (rows x cols) tile at (row0, col0) of head `head` of batch entry `batch`, 1 kept, 0 dropped.
void to_storage(const float* src, void* dst, int64_t n, Storage t);
void from_storage(const void* src, float* dst, int64_t n, Storage t);
void dropout_mask(uint8_t* out, int rows, int cols, int row0, int col0, int batch, int head,
                  uint64_t seed, float p);

// fill.cu: deterministic pseudo-random N(0,1)-like values (never zeros) for benchmarks.
void fill_random(float* x, int64_t count, uint64_t seed);

}  // namespace flashstep::gpu

namespace flashstep::gpu {
// fa1_forward.cu: the (Br, Bc, d) variant 2 is compiled for, as text.
const char* fa1_v2_config_list();
}  // namespace flashstep::gpu
