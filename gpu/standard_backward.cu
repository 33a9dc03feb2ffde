// Algorithm 3 of Dao et al. 2022 (standard attention backward) on the GPU, the row kernels;
// the matrix products are gpu/matmul.cu's (matmul_batched, matmul_batched_at), and the host
// sequence is gpu/backward.cpp's run_standard_backward. P, dP and dS are (heads x Nq) x Nk
// matrices in device memory (HBM).
//   standard_drop_kernel: P^dropped = P o Z (Alg3 L1's operand, and the forward's O = P^dropped V).
//   grad_scores_kernel:   Alg3 L3, one 256-thread block per row: D_r = sum_c P_rc dP_rc over the
//                         row (with dP = dP^dropped o Z under dropout), then dS = P o (dP - D).
// Masked entries have P = 0 (row_softmax.cu), so they get dS = 0; a row that keeps no key
// has P = 0 throughout and gets zero gradient.
#include "gpu/backward_kernels.h"
#include "gpu/common.cuh"
#include "gpu/register_tile.cuh"

namespace flashstep::gpu {

namespace {

// Z for element (row of the flat heads x Nq rows, col): 1/(1-p) kept, 0 dropped.
__device__ __forceinline__ float z_of(const Extras& x, int64_t row, int col, int nq) {
  return dropout_weight(1.0f, x, row / nq, int(row % nq), col);
}

__global__ void __launch_bounds__(256) standard_drop_kernel(const float* __restrict__ P, float* __restrict__ Pd,
                                                            int cols, int nq, Extras x) {
  const int64_t row = blockIdx.x;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    Pd[row * cols + c] = P[row * cols + c] * z_of(x, row, c, nq);
}

__global__ void __launch_bounds__(256) grad_scores_kernel(const float* __restrict__ P, const float* dP,
                                                          float* dS, int cols, int nq, Extras x) {
  const int64_t row = blockIdx.x;
  const float* p = P + row * cols;
  const float* dp = dP + row * cols;
  float* ds = dS + row * cols;
  const bool drop = x.dropout > 0.0f;
  // Alg3 L3: D_r = sum_c P_rc dP_rc (= rowsum(dO_r o O_r)), dP taken back through Z
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    acc = fmaf(p[c], drop ? dp[c] * z_of(x, row, c, nq) : dp[c], acc);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  __shared__ float warp_sum[8];
  if (threadIdx.x % 32 == 0) warp_sum[threadIdx.x / 32] = acc;
  __syncthreads();
  float D = 0.0f;
  for (int w = 0; w < int(blockDim.x / 32); ++w) D += warp_sum[w];
  // Alg3 L3: dS = P o (dP - D). Each element is read and then written by the same thread, so
  // dS may overwrite dP in place.
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float g = drop ? dp[c] * z_of(x, row, c, nq) : dp[c];
    ds[c] = p[c] * (g - D);
  }
}

}  // namespace

void standard_drop(const float* P, float* Pd, int64_t rows, int cols, int nq, const Extras& x) {
  standard_drop_kernel<<<unsigned(rows), 256>>>(P, Pd, cols, nq, x);
  CUDA_CHECK_LAUNCH();
}

void standard_grad_scores(const float* P, const float* dP, float* dS, int64_t rows, int cols, int nq,
                          const Extras& x) {
  grad_scores_kernel<<<unsigned(rows), 256>>>(P, dP, dS, cols, nq, x);
  CUDA_CHECK_LAUNCH();
}

}  // namespace flashstep::gpu
