// The bulk-copy read stream (version 6's stream of gpu/decode.cu without the attention): the
// kernel the read roof times (gpu/read_streams.cu) and the ladder's other bulk shapes
// (gpu/ladder/read_streams.cu) are instances of. Each reads every 16-byte word of its part of
// the buffer once and folds the words into one register, written only if it has an unlikely
// value (so that the reads cannot be optimised away). One thread per block issues
// cp.async.bulk copies of CHUNK bytes into a ring of STAGES buffers (STAGES - 1 in flight while
// one is read from shared memory); optionally under an L2 evict_first policy (createpolicy +
// .L2::cache_hint: lines read once are the first replaced). Order of the chunks: interleaved
// (block b takes chunks b, b + grid, b + 2 grid, ...: at any moment the grid reads one window of
// the buffer) or contiguous (block b takes one range: as many DRAM streams as blocks).
#pragma once
#include "gpu/common.cuh"
#include "gpu/decode_kernels.h"
#include "gpu/mbarrier_ptx.cuh"
#include "gpu/tc_ptx.cuh"

#include <algorithm>

namespace flashstep::gpu {

// One way of streaming the buffer: its name, threads, blocks per SM and bytes in flight per block
// while one stage is read, and its launcher.
struct StreamShape {
  const char* name;
  int threads, blocks_per_sm, in_flight_kib_per_block;  // bytes in flight per block while one stage is read
  ReadStreamRun (*launch)(const void*, int64_t, uint32_t*, int, int);
};

namespace {

constexpr int kBulkThreads = 128;

// The block reads `per` chunks of CHUNK bytes: chunk b per + k (contiguous) or k grid + b
// (interleaved) of the buffer, through a ring of STAGES buffers (the read roof's loop).
template <int CHUNK, int STAGES, bool kContig, bool kEvictFirst>
__global__ void __launch_bounds__(kBulkThreads) bulk_stream_kernel(const uint8_t* src, int64_t per, uint32_t* sink) {
  extern __shared__ float4 smem4[];
  uint8_t* ring = reinterpret_cast<uint8_t*>(smem4);
  uint64_t* full = reinterpret_cast<uint64_t*>(ring + int64_t(STAGES) * CHUNK);
  uint64_t policy = 0;
  if constexpr (kEvictFirst) policy = tc::evict_first_policy();
  auto issue = [&](int64_t k) {
    const uint32_t bar = tc::smem_addr(full + k % STAGES);
    const int64_t chunk = kContig ? int64_t(blockIdx.x) * per + k : k * gridDim.x + blockIdx.x;
    const uint32_t dst = tc::smem_addr(ring + (k % STAGES) * CHUNK);
    tc::mbar_expect_tx(bar, CHUNK);
    if constexpr (kEvictFirst) tc::bulk_copy_g2s_hint(dst, src + chunk * CHUNK, CHUNK, bar, policy);
    else tc::bulk_copy_g2s(dst, src + chunk * CHUNK, CHUNK, bar);
  };
  if (threadIdx.x == 0) {
    for (int st = 0; st < STAGES; ++st) tc::mbar_init(tc::smem_addr(full + st), 1);
    tc::mbar_init_fence();
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (int64_t k = 0; k < STAGES - 1 && k < per; ++k) issue(k);
  uint32_t acc = 0;
  for (int64_t k = 0; k < per; ++k) {
    if (threadIdx.x == 0 && k + STAGES - 1 < per) issue(k + STAGES - 1);
    tc::mbar_wait(tc::smem_addr(full + k % STAGES), uint32_t((k / STAGES) & 1));
    const uint4* words = reinterpret_cast<const uint4*>(ring + (k % STAGES) * CHUNK);
#pragma unroll 4
    for (int w = threadIdx.x; w < CHUNK / 16; w += kBulkThreads) {
      const uint4 x = words[w];
      acc ^= x.x ^ x.y ^ x.z ^ x.w;
    }
    __syncthreads();  // every thread is done with the buffer before it is refilled
  }
  if (acc == 0x9E3779B9u) sink[0] = acc;
}

// Blocks per SM: the wanted number, at most what fits (registers, shared memory).
template <typename Kernel>
int fitting_blocks(Kernel kernel, int threads, int64_t smem, int wanted) {
  int fit = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, threads, size_t(smem)));
  return std::max(1, std::min(wanted, fit));
}

template <int CHUNK, int STAGES, bool kContig, bool kEvictFirst>
ReadStreamRun launch_bulk(const void* src, int64_t bytes, uint32_t* sink, int sms, int wanted) {
  auto kernel = bulk_stream_kernel<CHUNK, STAGES, kContig, kEvictFirst>;
  const int64_t smem = int64_t(STAGES) * CHUNK + 8 * STAGES;
  static int64_t opted = 48 * 1024;  // one per kernel
  opt_in_shared(kernel, smem, opted);
  ReadStreamRun r;
  r.blocks_per_sm = fitting_blocks(kernel, kBulkThreads, smem, wanted);
  const int64_t grid = int64_t(r.blocks_per_sm) * sms, per = bytes / (int64_t(CHUNK) * grid);
  kernel<<<unsigned(grid), kBulkThreads, size_t(smem)>>>(static_cast<const uint8_t*>(src), per, sink);
  CUDA_CHECK_LAUNCH();
  r.bytes = per * CHUNK * grid;
  return r;
}


}  // namespace

}  // namespace flashstep::gpu
