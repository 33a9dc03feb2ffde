// Host-side launchers of the kernels in gpu/*.cu. Plain types only, so host code compiled by
// the C++ compiler (backend.cpp) can call them without seeing device code or Eigen seeing nvcc.
//
// Tensors are float32, row-major, laid out (BH, N, d) with BH = B * H heads; l, m, lse are
// (BH, N). Every launcher checks its launch (CUDA_CHECK_LAUNCH) and returns without waiting.
#pragma once
#include <cstdint>

namespace flashstep::gpu {

// Sizes of one launch of Algorithm 1 at a fixed j (see fa1_forward.cu).
struct Fa1Params {
  const float *Q = nullptr, *K = nullptr, *V = nullptr;
  float *O = nullptr, *l = nullptr, *m = nullptr;
  int64_t heads = 1;
  int nq = 0, nk = 0, d = 0;
  int Br = 0, Bc = 0, Tr = 0, Tc = 0;
  float scale = 1.0f;
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

// row_softmax.cu: P = softmax(S) row by row; lse[row] = rowmax + log(rowsum).
void row_softmax(const float* S, float* P, float* lse, int64_t rows, int cols);

// fill.cu: deterministic pseudo-random N(0,1)-like values (never zeros) for benchmarks.
void fill_random(float* x, int64_t count, uint64_t seed);

}  // namespace flashstep::gpu

namespace flashstep::gpu {
// fa1_forward.cu: the (Br, Bc, d) variant 2 is compiled for, as text.
const char* fa1_v2_config_list();
}  // namespace flashstep::gpu
