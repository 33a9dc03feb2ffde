// Storage precision and dropout helpers for the host side (see kernels.h):
//   to_storage / from_storage   float32 <-> the storage type of Q, K, V, O (--dtype), rounding
//                               to nearest even exactly as core/memory.cpp's round_to
//   dropout_mask                the keep mask Philox gives one tile, written out so tests can
//                               compare it with the CPU trace's mask bit for bit
#include "core/philox.h"
#include "gpu/common.cuh"
#include "gpu/kernels.h"
#include "gpu/storage.cuh"

namespace flashstep::gpu {

namespace {

template <typename T>
__global__ void to_storage_kernel(const float* __restrict__ src, T* __restrict__ dst, int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += stride)
    dst[e] = from_float<T>(src[e]);
}

template <typename T>
__global__ void from_storage_kernel(const T* __restrict__ src, float* __restrict__ dst, int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += stride)
    dst[e] = to_float(src[e]);
}

__global__ void dropout_mask_kernel(uint8_t* out, int rows, int cols, int row0, int col0, int batch,
                                    int head, uint64_t seed, float p) {
  const int64_t n = int64_t(rows) * cols, stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += stride)
    out[e] = dropout_keep(seed, uint32_t(batch), uint32_t(head), uint32_t(row0 + e / cols),
                          uint32_t(col0 + e % cols), p) ? 1 : 0;
}

unsigned grid_for(int64_t n) { return unsigned(std::min<int64_t>((n + 255) / 256, 65536)); }

}  // namespace

void to_storage(const float* src, void* dst, int64_t n, Storage t) {
  if (n <= 0) return;
  switch (t) {
    case Storage::fp32:  // nothing to round: a copy in stream order (the default stream, as the kernels)
      if (dst != src) CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(n) * 4, cudaMemcpyDeviceToDevice));
      return;
    case Storage::fp16: to_storage_kernel<<<grid_for(n), 256>>>(src, static_cast<__half*>(dst), n); break;
    case Storage::bf16: to_storage_kernel<<<grid_for(n), 256>>>(src, static_cast<__nv_bfloat16*>(dst), n); break;
  }
  CUDA_CHECK_LAUNCH();
}

void from_storage(const void* src, float* dst, int64_t n, Storage t) {
  if (n <= 0) return;
  switch (t) {
    case Storage::fp32:
      if (dst != src) CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(n) * 4, cudaMemcpyDeviceToDevice));
      return;
    case Storage::fp16: from_storage_kernel<<<grid_for(n), 256>>>(static_cast<const __half*>(src), dst, n); break;
    case Storage::bf16:
      from_storage_kernel<<<grid_for(n), 256>>>(static_cast<const __nv_bfloat16*>(src), dst, n);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

void dropout_mask(uint8_t* out, int rows, int cols, int row0, int col0, int batch, int head,
                  uint64_t seed, float p) {
  const int64_t n = int64_t(rows) * cols;
  if (n <= 0) return;
  dropout_mask_kernel<<<grid_for(n), 256>>>(out, rows, cols, row0, col0, batch, head, seed, p);
  CUDA_CHECK_LAUNCH();
}

}  // namespace flashstep::gpu
