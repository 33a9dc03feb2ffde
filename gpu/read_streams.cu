// The read streams: several ways of reading one buffer from DRAM on every SM, no attention, so
// that one device run can tell which stream shape reads fastest (bench-gpu --decode
// --read-streams; docs/decode.md, "Read streams and versions 8, 9"). Each shape reads every
// 16-byte word of its part of the buffer once and folds the words into one register, written
// only if it has an unlikely value (so that the reads cannot be optimised away). Two families:
//
//   bulk: version 6's stream (gpu/decode.cu) with its sizes as parameters (the first shape is the
//     read roof, read_roof_launch): one thread per block issues cp.async.bulk copies of CHUNK
//     bytes into a ring of STAGES buffers (STAGES - 1 in flight while one is read from shared
//     memory); optionally with an L2 evict_first policy (createpolicy + .L2::cache_hint): lines
//     read once are the first replaced.
//   ld: register loads, ld.global.nc.L1::no_allocate.v4 (16 bytes, not kept in L1), UNROLL
//     independent loads per thread in flight before their words are folded; optionally with
//     the .L2::256B prefetch size (the L2 fetches the whole 256-byte block at the first miss).
//
// Order of the chunks: interleaved (block b takes chunks b, b + grid, b + 2 grid, ...: at any
// moment the grid reads one window of the buffer) or contiguous (block b takes one range of
// the buffer: as many DRAM streams as blocks, far apart, as a decode kernel over many heads).
#include "gpu/common.cuh"
#include "gpu/decode_kernels.h"
#include "gpu/mbarrier_ptx.cuh"
#include "gpu/tc_ptx.cuh"

namespace flashstep::gpu {

namespace {

template <bool k256>
__device__ __forceinline__ uint4 ld_stream(const uint4* p) {
  uint4 x;
  if constexpr (k256)
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(x.x), "=r"(x.y), "=r"(x.z), "=r"(x.w) : "l"(p));
  else
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(x.x), "=r"(x.y), "=r"(x.z), "=r"(x.w) : "l"(p));
  return x;
}

// The block reads `iters` pieces of THREADS x UNROLL words; piece i of block b is piece
// b iters + i (contiguous) or i grid + b (interleaved) of the buffer. Thread t reads words
// t, t + THREADS, ... of a piece (each load instruction of a warp: 512 consecutive bytes).
// The loads of piece i are issued in step i - 1 and their words folded in step i, each word
// just before its register is loaded again: every load of a step is in flight when the first
// fold waits, whatever order ptxas gives the instructions of a step. (Loads and folds of one
// piece in one step let ptxas fold each word right after its load, in flight 4-5 loads per
// thread at any UNROLL: 32 registers at UNROLL 16, against 75 here.) Bounded for two blocks per
// SM: 32 registers at 1024 threads; 64 at 512 threads, where ptxas (nvcc 13.0) spills 8 bytes of
// the interleaved kernels (one 4-byte reload).
template <int THREADS, int UNROLL, bool kContig, bool k256>
__global__ void __launch_bounds__(THREADS, 2)
    ld_stream_kernel(const uint4* src, int iters, uint32_t* sink) {
  constexpr int64_t kPiece = int64_t(THREADS) * UNROLL;
  auto piece = [&](int i) {
    return src + (kContig ? int64_t(blockIdx.x) * iters + i : int64_t(i) * gridDim.x + blockIdx.x) * kPiece + threadIdx.x;
  };
  if (iters <= 0) return;
  uint32_t acc = 0;
  uint4 x[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) x[u] = ld_stream<k256>(piece(0) + u * THREADS);
  for (int i = 1; i < iters; ++i) {
    const uint4* p = piece(i);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {  // fold the word of piece i - 1, then load piece i's
      acc ^= x[u].x ^ x[u].y ^ x[u].z ^ x[u].w;
      x[u] = ld_stream<k256>(p + u * THREADS);
    }
  }
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) acc ^= x[u].x ^ x[u].y ^ x[u].z ^ x[u].w;
  if (acc == 0x9E3779B9u) sink[0] = acc;
}

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

template <int THREADS, int UNROLL, bool kContig, bool k256>
ReadStreamRun launch_ld(const void* src, int64_t bytes, uint32_t* sink, int sms, int wanted) {
  auto kernel = ld_stream_kernel<THREADS, UNROLL, kContig, k256>;
  ReadStreamRun r;
  r.blocks_per_sm = fitting_blocks(kernel, THREADS, 0, wanted);
  const int64_t grid = int64_t(r.blocks_per_sm) * sms, piece = int64_t(THREADS) * UNROLL * 16;
  const int64_t iters = bytes / (piece * grid);
  kernel<<<unsigned(grid), THREADS>>>(static_cast<const uint4*>(src), int(iters), sink);  // iters < 2^31: bytes / 8 KiB
  CUDA_CHECK_LAUNCH();
  r.bytes = iters * piece * grid;
  return r;
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

struct StreamShape {
  const char* name;
  int threads, blocks_per_sm, in_flight_kib_per_block;  // bytes in flight per block while one stage is read
  ReadStreamRun (*launch)(const void*, int64_t, uint32_t*, int, int);
};

constexpr int KiB = 1024;
// The shapes timed, in this order (bench-gpu --decode --read-streams prints one line each).
const StreamShape kShapes[] = {
    {"bulk 16K x6 (the read roof)", 128, 2, 80, launch_bulk<16 * KiB, 6, false, false>},
    {"bulk 16K x6 contiguous", 128, 2, 80, launch_bulk<16 * KiB, 6, true, false>},
    {"bulk 16K x6 evict_first", 128, 2, 80, launch_bulk<16 * KiB, 6, false, true>},
    {"bulk 32K x3 (v6's stages)", 128, 2, 64, launch_bulk<32 * KiB, 3, false, false>},
    {"bulk 32K x3 evict_first (v8's)", 128, 2, 64, launch_bulk<32 * KiB, 3, false, true>},
    {"bulk 32K x3 contiguous", 128, 2, 64, launch_bulk<32 * KiB, 3, true, false>},
    {"bulk 32K x6", 128, 1, 160, launch_bulk<32 * KiB, 6, false, false>},
    {"bulk 64K x3", 128, 1, 128, launch_bulk<64 * KiB, 3, false, false>},
    {"bulk 16K x4", 128, 3, 48, launch_bulk<16 * KiB, 4, false, false>},
    {"ld v4 x4", 1024, 2, 64, launch_ld<1024, 4, false, false>},
    {"ld v4 x8", 512, 2, 64, launch_ld<512, 8, false, false>},
    {"ld v4 x16", 256, 2, 64, launch_ld<256, 16, false, false>},
    {"ld v4 x8 L2::256B", 512, 2, 64, launch_ld<512, 8, false, true>},
    {"ld v4 x8 contiguous", 512, 2, 64, launch_ld<512, 8, true, false>},
    {"ld v4 x4 (1 block/SM)", 1024, 1, 64, launch_ld<1024, 4, false, false>},
};

}  // namespace

int read_stream_count() { return int(sizeof(kShapes) / sizeof(kShapes[0])); }

ReadStreamInfo read_stream_info(int i) {
  const StreamShape& s = kShapes[i];
  return ReadStreamInfo{s.name, s.threads, s.blocks_per_sm, s.in_flight_kib_per_block};
}

ReadStreamRun read_stream_launch(int i, const void* src, int64_t bytes, uint32_t* sink, int sm_count) {
  return kShapes[i].launch(src, bytes, sink, sm_count, kShapes[i].blocks_per_sm);
}

// The read roof is the first shape: version 6's stream (16 KiB bulk copies, 6 stages, two blocks
// per SM, interleaved), the rate at which the device reads and the ceiling of a decode kernel (a
// copy also writes, so its rate is not that ceiling).
int64_t read_roof_launch(const void* src, int64_t bytes, uint32_t* sink, int sm_count) {
  return read_stream_launch(0, src, bytes, sink, sm_count).bytes;
}

}  // namespace flashstep::gpu
