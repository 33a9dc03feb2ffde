// FlashAttention-2's backward pass (Dao 2023, Algorithm 2) on the GPU: FA2b L4 first, one warp
// per row computing D_i = rowsum(dO_i o O_i) into HBM; then one launch of gpu/backward_tile.cuh's
// kernels over every (K/V block j, head), with P_ij = exp(S_ij - L_i) from the forward's
// logsumexp and D_i loaded, and dQ accumulated by float32 atomic adds (FA2b L15).
#include "gpu/backward_tile.cuh"

namespace flashstep::gpu {

namespace {

// FA2b L4: D = rowsum(dO o O), one warp per row (heads x Nq rows of d elements).
__global__ void __launch_bounds__(256) rowsum_kernel(const float* __restrict__ dO,
                                                     const float* __restrict__ O, float* __restrict__ D,
                                                     int64_t rows, int d) {
  const int64_t row = int64_t(blockIdx.x) * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float acc = 0.0f;
  for (int k = lane; k < d; k += 32) acc = fmaf(dO[row * d + k], O[row * d + k], acc);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (lane == 0) D[row] = acc;
}

}  // namespace

void fa2_backward_rowsum(const BwdParams& p, float* D) {
  const int64_t rows = p.heads * p.nq;
  rowsum_kernel<<<unsigned((rows + 7) / 8), 256>>>(p.dO, p.O, D, rows, p.d);
  CUDA_CHECK_LAUNCH();
}

void fa2_backward_launch(int variant, const BwdParams& p, int j0, int count) {
  bwd_launch<false>(variant, p, j0, count);
}

}  // namespace flashstep::gpu
