// Benchmark inputs generated on the device: a counter-based hash (splitmix64) turned into
// approximately standard-normal values by Box-Muller. Deterministic per seed, never zeros, and
// no multi-gigabyte host-to-device copy before each benchmark.
#include "gpu/common.cuh"
#include "gpu/kernels.h"

#include <cmath>

namespace flashstep::gpu {

namespace {

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__global__ void fill_random_kernel(float* x, int64_t count, uint64_t seed) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < count; e += stride) {
    const uint64_t h = splitmix64(seed * 0x100000001B3ull + uint64_t(e));
    const float u1 = (float((h >> 40) & 0xFFFFFF) + 0.5f) * (1.0f / 16777216.0f);  // (0, 1)
    const float u2 = float(h & 0xFFFFFF) * (1.0f / 16777216.0f);
    x[e] = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
  }
}

}  // namespace

void fill_random(float* x, int64_t count, uint64_t seed) {
  const int blocks = int(std::min<int64_t>((count + 255) / 256, 65536));
  fill_random_kernel<<<blocks, 256>>>(x, count, seed);
  CUDA_CHECK_LAUNCH();
}

}  // namespace flashstep::gpu
