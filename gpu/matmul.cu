// Batched matrix products for the standard-attention baseline (Algorithm 0 L1 and L3):
// C = alpha * A op(B) for each head, float32, written to global memory (HBM).
//
// Variants:
//   1  matmul_v1_kernel<BM, BN, B_T>: shared-memory tiles of BM x 16 (A, stored transposed) and
//      16 x BN (B), 256 threads as 16 x 16, each accumulating a (BM/16) x (BN/16) piece of C in
//      registers with 128-bit shared loads: the same register-tiling scheme as fa1 variant 2, so
//      the fa1-vs-standard comparison isolates the HBM traffic of S and P rather than
//      comparing two levels of kernel tuning. BM = BN = 128 for S = tau Q K^T; BN = 64 for
//      O = P V when d <= 64. Edges (Nq, Nk, d not multiples of the tile) are zero-padded.
//      A_T: A is stored K x M and read transposed (the backward's dV = P^T dO, dK = dS^T Q).
// No tensor cores and no TF32: plain float32 FMAs, like every other kernel here.
#include "gpu/common.cuh"
#include "gpu/backward_kernels.h"
#include "gpu/kernels.h"

namespace flashstep::gpu {

namespace {

constexpr int kBK = 16;

template <int N>
__device__ __forceinline__ int owned_col_mm(int tx, int n) {
  if constexpr (N % 4 == 0) return (n / 4) * 64 + tx * 4 + (n % 4);
  else return tx * N + n;
}

template <int BM, int BN, bool A_T, bool B_T>
__global__ void __launch_bounds__(256) matmul_v1_kernel(const float* __restrict__ A,
                                                        const float* __restrict__ B,
                                                        float* __restrict__ C, int M, int N,
                                                        int K, float alpha) {
  constexpr int TM = BM / 16, TN = BN / 16;
  constexpr int ALD = BM + 4, BLD = BN + 4;
  static_assert(TM % 4 == 0 && TN % 4 == 0, "float4 register tiles");
  __shared__ __align__(16) float As[kBK * ALD];  // A tile transposed: As[k][m]
  __shared__ __align__(16) float Bs[kBK * BLD];  // B tile: Bs[k][n]

  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int64_t b = blockIdx.z;
  A += b * int64_t(M) * K;  // M x K, or K x M when A_T
  B += b * int64_t(N) * K;
  C += b * int64_t(M) * N;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r)
#pragma unroll
    for (int c = 0; c < TN; ++c) acc[r][c] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += kBK) {
    for (int e = tid; e < BM * kBK; e += 256) {
      if constexpr (A_T) {  // A is K x M: consecutive threads read consecutive m
        const int k = e / BM, m = e % BM;
        As[k * ALD + m] = (m0 + m < M && k0 + k < K) ? A[int64_t(k0 + k) * M + m0 + m] : 0.0f;
      } else {
        const int m = e / kBK, k = e % kBK;
        As[k * ALD + m] = (m0 + m < M && k0 + k < K) ? A[int64_t(m0 + m) * K + k0 + k] : 0.0f;
      }
    }
    for (int e = tid; e < BN * kBK; e += 256) {
      if constexpr (B_T) {  // B is N x K
        const int n = e / kBK, k = e % kBK;
        Bs[k * BLD + n] = (n0 + n < N && k0 + k < K) ? B[int64_t(n0 + n) * K + k0 + k] : 0.0f;
      } else {  // B is K x N
        const int k = e / BN, n = e % BN;
        Bs[k * BLD + n] = (n0 + n < N && k0 + k < K) ? B[int64_t(k0 + k) * N + n0 + n] : 0.0f;
      }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      float a[TM], bb[TN];
#pragma unroll
      for (int q = 0; q < TM / 4; ++q) {
        const float4 v = *reinterpret_cast<const float4*>(As + k * ALD + ty * TM + 4 * q);
        a[4 * q] = v.x; a[4 * q + 1] = v.y; a[4 * q + 2] = v.z; a[4 * q + 3] = v.w;
      }
#pragma unroll
      for (int q = 0; q < TN / 4; ++q) {
        const float4 v = *reinterpret_cast<const float4*>(Bs + k * BLD + q * 64 + tx * 4);
        bb[4 * q] = v.x; bb[4 * q + 1] = v.y; bb[4 * q + 2] = v.z; bb[4 * q + 3] = v.w;
      }
#pragma unroll
      for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int c = 0; c < TN; ++c) acc[r][c] = fmaf(a[r], bb[c], acc[r][c]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const int m = m0 + ty * TM + r;
    if (m >= M) continue;
#pragma unroll
    for (int c = 0; c < TN; ++c) {
      const int n = n0 + owned_col_mm<TN>(tx, c);
      if (n < N) C[int64_t(m) * N + n] = alpha * acc[r][c];
    }
  }
}

template <int BM, int BN, bool B_T, bool A_T = false>
void launch(const float* A, const float* B, float* C, int64_t batch, int M, int N, int K,
            float alpha) {
  const dim3 grid(unsigned((N + BN - 1) / BN), unsigned((M + BM - 1) / BM), unsigned(batch));
  matmul_v1_kernel<BM, BN, A_T, B_T><<<grid, 256>>>(A, B, C, M, N, K, alpha);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void matmul_batched(const float* A, const float* B, float* C, int64_t batch, int M, int N, int K,
                    float alpha, bool b_transposed) {
  if (N <= 64) {
    if (b_transposed) launch<128, 64, true>(A, B, C, batch, M, N, K, alpha);
    else launch<128, 64, false>(A, B, C, batch, M, N, K, alpha);
  } else {
    if (b_transposed) launch<128, 128, true>(A, B, C, batch, M, N, K, alpha);
    else launch<128, 128, false>(A, B, C, batch, M, N, K, alpha);
  }
}

void matmul_batched_at(const float* A, const float* B, float* C, int64_t batch, int M, int N, int K,
                       float alpha) {
  if (N <= 64) launch<128, 64, false, true>(A, B, C, batch, M, N, K, alpha);
  else launch<128, 128, false, true>(A, B, C, batch, M, N, K, alpha);
}

}  // namespace flashstep::gpu
