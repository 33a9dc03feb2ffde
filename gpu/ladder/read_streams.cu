// The read streams of the kernel ladder: ways of reading one buffer from DRAM on every SM, no
// attention, timed beside the read roof (gpu/read_streams.cu) so that one device run tells which
// stream shape reads fastest (bench-gpu --decode --read-streams in a ladder build; docs/decode.md,
// "Read streams"). Two families: bulk copies (gpu/bulk_stream.cuh) of other sizes, orders and
// cache policies; and register loads, ld.global.nc.L1::no_allocate.v4 (16 bytes, not kept in L1),
// UNROLL independent loads per thread in flight before their words are folded, optionally with
// the .L2::256B prefetch size (the L2 fetches the whole 256-byte block at the first miss).
#include "gpu/bulk_stream.cuh"

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

constexpr int KiB = 1024;
// The shapes timed after the read roof, in this order (one line each).
const StreamShape kShapes[] = {
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

int ladder_read_stream_count() { return int(sizeof(kShapes) / sizeof(kShapes[0])); }
const StreamShape& ladder_read_stream(int i) { return kShapes[i]; }

}  // namespace flashstep::gpu
