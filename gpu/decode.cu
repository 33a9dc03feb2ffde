// Flash-decoding on the GPU (Dao, Haziza, Massa, Sizov 2023): the split-KV kernel and the combine
// kernel of core/schedules/decode/forward.cpp. Decoding reads a long KV cache for one query row (or
// a few), so the work is a stream of K and V bytes; the kernels are written to keep that stream at
// the memory's bandwidth, not to use tensor cores (one row gives a GEMV, not a GEMM).
//
//   decode_split_kernel<T, G, R, V> (gpu/decode_kernel.cuh): one thread block per (head, group of R query rows,
//     split s). Split s covers the K/V blocks core/schedules/decode/decode.h's split_range gives (the same
//     blocks as the CPU's FD L5 loop), clipped to the keys the mask leaves to any of the rows.
//     K and V stream through shared memory in tiles of 8 KiB each (TK keys), STAGES tiles deep
//     by cp.async, so STAGES - 1 tiles per block are in flight while one is computed. 128 threads
//     form 128 / G groups of G = d / 8 lanes; a group takes one key of the tile at a time, each
//     lane 8 of its d elements. Per group and row the online softmax of FD L7-L9
//     (core/online_softmax.h), then the groups merge through shared memory with the same
//     functions and the block writes the split's normalised partial O_i^(s) and lse_i^(s) in
//     float32 (FD L11-L14) -- or, with S = 1 (no partials buffer), O (rounded to T) and lse
//     directly: decode without splits, FlashAttention-2's order for one row block.
//     Version history (docs/decode.md): version 1 loaded K and V straight into registers, 8 keys
//     per group in flight, and reached about 1500 GB/s (36% of the copy bandwidth) on the H200;
//     version 2 streamed 4-deep tiles (3 x 16 KiB in flight): 3990-4150 GB/s at d = 128; version
//     3 is 6 deep. The variants the template parameter V selects (--variant; 0 = the default
//     for the shape, gpu/decode_backend.cpp's decode_default: 9 unpaged (16-bit, d = 64, 128), 5 paged,
//     3 for every other d and type):
//       3  128 threads, 8 KiB tiles, 6 stages, cp.async.cg (L2 fetches by sector): every d, type.
//       4  version 3 with the .L2::256B prefetch hint on every cp.async: a tile is 8 KiB of
//          consecutive addresses, so each 16-byte request lets the L2 fetch the whole 256-byte
//          block from DRAM at once instead of sector by sector (fewer, larger DRAM bursts).
//       5  version 4 with 256 threads (16 groups at d = 128): half the cp.async issues and half
//          the keys per thread and tile, twice the warps per SM to hide the shared-memory and
//          shuffle latency of the dot products; the same bytes in flight per block.
//       6  the tiles by the bulk copy engine (cp.async.bulk, no tensor map: K and V rows of one
//          head are contiguous, so a tile is one range of bytes): one thread issues a stage's K
//          and V as two copies that complete on the stage's "full" mbarrier (expect_tx), instead
//          of 128 threads issuing 16-byte cp.async each. Stages of two 8 KiB tiles (16 KiB of K
//          and of V), 3 deep: 96 KiB, still two blocks per SM. The arithmetic is version 3's,
//          tile by tile (same groups, same keys per update), so the results equal version 3's
//          bit for bit; keys past the split's end are not copied and read as zero, as version 3's
//          zero-filled chunks.
//       7  version 6 with stages of one 8 KiB tile, 6 deep (version 3's ring): the bulk copy
//          engine alone, against version 6's larger copies.
//       8  version 6 with an L2 evict_first cache policy on every bulk copy (createpolicy +
//          .L2::cache_hint): K and V are read once, so their lines are the first the L2 replaces.
//          Results equal version 3's bit for bit (the same tiles and arithmetic).
//       9  version 8's stream (bulk copies, two-tile stages 3 deep, evict_first) with version 5's
//          256 threads (16 groups at d = 128): the stream of version 6 under the arithmetic that
//          was fastest where the heads fill the GPU. Results equal version 5's bit for bit.
//      10  (e4m3 only) version 9's stream (the same stages, copies, policy and 256 threads) under
//          batched arithmetic: L = d / 16 lanes per key, 16 e4m3 codes (one 16-byte shared-memory
//          word) per lane, and each group of L lanes takes a batch of 4 keys of the stage at once.
//          The four partial dots of a lane are reduced by a transposed (reduce-scatter)
//          butterfly that leaves one key's whole dot in each lane; that lane alone looks up the
//          key's scales, applies the mask and computes its score, P~ and P~ s_V; m is updated
//          once per batch (O and l rescaled only when it grows), l summed per lane and over the
//          group at the end, the four P~ s_V broadcast for O += (P~ s_V) v. The same function
//          as variant 9 in another order of float32 sums; one query row per block (Nq > 1: a
//          block per row). Per key, the work every lane of variant 9's group repeats (a full
//          shuffle reduction, the scale look-up, the softmax step) is here a quarter of a
//          reduction per lane and one lane's score: decode_kernel.cuh's compute_batched.
//      11, 12  (e4m3 only, the ladder's) variant 10 whose paged stages split their copies
//          between the copy engine and every thread's cp.async (16-byte chunks through their own
//          table entries, read a stage ahead; each thread arrives on the stage's mbarrier when its
//          chunks have landed): 11 copies all of V by cp.async, 12 each stage's second half of V.
//          Unpaged they are variant 10. The same bytes in the same places, so the same bits as
//          10; measured slower than 10 paged (gpu/ladder/notes/decode.md).
//     Variants 4-9 exist for d = 64, 128 in 16-bit storage (the decode benchmark's shapes). A
//     default build compiles the defaults alone: 5 and 9 there, 3 for every other d and type
//     (float32 storage, d = 16, 32, 256); 3 at d = 64, 128 in 16 bits, 4, 6, 7 and 8 are the
//     ladder's (gpu/ladder/decode_rungs.cu). Variant 3 runs a single query row in its four-row
//     kernel (launch_variant); 5 and 9 have a one-row kernel for Nq = 1, decoding proper.
//   An FP8 KV cache (DecodeParams::fp8, --dtype fp8; docs/fp8-gpu.md): the same template with T =
//     e4m3, d = 64, 128, paged or not: variant 10 (one row per block; the default for Nq = 1) and
//     variant 9's four-row kernel (the default for Nq > 1; its one-row kernel is the ladder's, a
//     default build runs one row in the four-row kernel). 9 measured against variant 5, its
//     arithmetic with cp.async chunks: 9 reads 8-11% faster unpaged and 9-10% paged
//     (gpu/results/fp8-decode/kernel_budget/); 10 at 0.58-0.64x 9's time, 88-102% of the read
//     roof unpaged, 77-85% paged (gpu/results/fp8-decode/variant10/). A tile is still 8 KiB,
//     now twice the keys; each lane loads its 8 bytes of a K or V row from shared memory and
//     converts them to float32 in registers (exact). The scores take (tau s_Q) s_K after the dot
//     product of the e4m3 values, P~ stays float32 and is multiplied by s_V before P~ V: the
//     CPU engine's decode (core/schedule_context.h's score_tile) up to float32 summation order.
//     O is bf16; the partials and the combine are the 16-bit kernels' own.
//   Paged K/V (core/paged_kv.h; a run-time switch, DecodeParams::block_table set): the chunk
//     addresses go through the block table (key n at pool row table[n / P] P + n mod P); the
//     tiles in shared memory, hence every value and every rounding, are the unpaged run's. Variants 6-9: the rows of one page
//     are contiguous in the pool, so a stage is one bulk copy per page piece it touches (P = 1:
//     one per row), issued by the 32 lanes of one warp (stage t: warp t mod the warps), one
//     table read per piece, made a stage before the copy (decode_kernel.cuh's piece_entry;
//     FLASHSTEP_DECODE_TABLE_AHEAD below).
//   decode_combine_kernel<T>: one thread block per (head, row): FD L17-L20 with split_weight,
//     launched as the split kernel's programmatic dependent (sm_90: its launch overlaps the
//     split kernel's tail; it waits for the partials with griddepcontrol.wait).
//
// Masks: a key the row does not keep scores -inf (core/mask.h's rule, per-batch key lengths);
// a split that keeps no key of a row leaves m = -inf, l = 0: O^(s) = 0, lse^(s) = -inf, weight
// 0 in the combine. Dropout: Philox keyed by (batch, head, row, column) on P~ before P~ V_j, l
// summing the undropped weights, as the CPU's FD L9.
#include "core/input_error.h"
#include "gpu/decode_kernel.cuh"

#include <cmath>
#include <cstdlib>
#include <string>

namespace flashstep::gpu {

#if defined(FLASHSTEP_LADDER)
bool decode_ladder_launch(const DecodeParams& p, int variant);  // gpu/ladder/decode_rungs.cu
#endif

namespace {

// FD L17-L20 for one (head, row): lse = m + log sum_s e^(lse^(s) - m), then
// O = sum_s e^(lse^(s) - lse) O^(s), rounded to T once.
template <typename T>
__global__ void decode_combine_kernel(DecodeParams p) {
  extern __shared__ float w[];  // the S weights e^(lse^(s) - lse), then lse at w[S]
  wait_for_prerequisite_grid();  // the split kernel's partials
  const int64_t row = blockIdx.x, stride = p.heads * p.nq;
  float& lse_row = w[p.S];
  if (threadIdx.x == 0) {
    float M = -INFINITY;
    for (int s = 0; s < p.S; ++s) M = merged_max(M, p.lse_part[s * stride + row]);
    float L = 0.0f;
    for (int s = 0; s < p.S; ++s) L += rescale_factor(p.lse_part[s * stride + row], M);
    lse_row = row_logsumexp(M, L);  // -inf when no split kept a key
  }
  __syncthreads();
  const float lse = lse_row;
  for (int s = threadIdx.x; s < p.S; s += blockDim.x) w[s] = split_weight(p.lse_part[s * stride + row], lse);
  __syncthreads();
  for (int c = threadIdx.x; c < p.d; c += blockDim.x) {
    float o = 0.0f;
    for (int s = 0; s < p.S; ++s) o += w[s] * p.O_part[(s * stride + row) * p.d + c];
    static_cast<T*>(p.O)[row * p.d + c] = from_float<T>(o);
  }
  if (threadIdx.x == 0) p.lse[row] = lse;
}

// The FP8 configurations (the header's list), paged or not: variant 10 (one query row per
// block, the default for one row) and variant 9's four-row kernel (the default for more). Variant
// 9's one-row kernel is the ladder's (gpu/ladder/decode_rungs.cu); a default build runs one row
// in the four-row kernel, as variant 3 does: rows past Nq are skipped, and the one row's
// arithmetic is the same, in the same order.
template <int G>
void launch_split_fp8(const DecodeParams& p) {
  if (p.variant == 10) return launch_variant<__nv_fp8_e4m3, G, 10>(p);
#if defined(FLASHSTEP_LADDER)
  if (p.variant >= 11 && decode_ladder_launch(p, p.variant)) return;
  if (p.nq == 1 && decode_ladder_launch(p, 9)) return;
#endif
  launch_split_kernel<__nv_fp8_e4m3, G, 4, 9>(p);
}

template <typename T, int G>
void launch_split_rows(const DecodeParams& p) {
  const int v = p.variant;  // resolved by the host (decode_default)
  if constexpr (sizeof(T) == 2 && (G == 8 || G == 16)) {  // the 16-bit defaults at d = 64, 128
    if (v == 5) return launch_variant<T, G, 5>(p);
    if (v == 9) return launch_variant<T, G, 9>(p);
  } else {
    if (v == 3) return launch_variant<T, G, 3>(p);  // every other d and type
  }
#if defined(FLASHSTEP_LADDER)
  if (decode_ladder_launch(p, v)) return;
#endif
  throw std::runtime_error("decode: no such kernel variant");  // checked by the host first
}

}  // namespace

// The variants a default build holds, the defaults of gpu/decode_backend.cpp's decode_default:
// 5 and 9 at d = 64, 128 in 16 bits, 3 for every other d and type. The ladder's: 4, 6, 7, 8, and
// 3 at d = 64, 128 in 16 bits (the reference the ladder's rungs are compared with bit for bit).
bool decode_variant_is_ladder(int variant) { return variant == 3 || variant == 4 || (variant >= 6 && variant <= 8); }

bool decode_supports_d(int d) { return d == 16 || d == 32 || d == 64 || d == 128 || d == 256; }

bool decode_variant_supported(int variant, int d, Storage dtype) {
  const bool fast_shape = (d == 64 || d == 128) && dtype != Storage::fp32;  // 5 and 9 built
  if (variant == 0) return decode_supports_d(d);
#if !defined(FLASHSTEP_LADDER)
  if (variant == 3) return decode_supports_d(d) && !fast_shape;
  if (decode_variant_is_ladder(variant)) return false;
#else
  if (variant == 3) return decode_supports_d(d);
#endif
  return variant >= 4 && variant <= 9 && fast_shape;
}


bool decode_fp8_supported(int variant, int d) {  // paged or not: it takes a block table
#if defined(FLASHSTEP_LADDER)
  return (d == 64 || d == 128) && (variant == 0 || (variant >= 9 && variant <= 12));
#else
  return (d == 64 || d == 128) && (variant == 0 || variant == 9 || variant == 10);
#endif
}

bool decode_fp8_one_row_kernel(int variant) {
#if defined(FLASHSTEP_LADDER)
  return variant >= 9 && variant <= 12;
#else
  return variant == 10;
#endif
}

namespace {
__global__ void to_e4m3_kernel(const float* __restrict__ src, uint8_t* __restrict__ dst, int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += stride)
    dst[e] = __nv_cvt_float_to_fp8(src[e], __NV_SATFINITE, __NV_E4M3);
}
}  // namespace

void to_e4m3(const float* src, uint8_t* dst, int64_t n) {
  if (n <= 0) return;
  to_e4m3_kernel<<<unsigned(std::min<int64_t>((n + 255) / 256, 65536)), 256>>>(src, dst, n);
  CUDA_CHECK_LAUNCH();
}

// FLASHSTEP_DECODE_TABLE_AHEAD=0, 1 or 2 makes the paged bulk-copy variants issue every stage
// from warp 0 and read each page piece's table entry at the copy's issue (0, the code before), a
// stage ahead (1), or a stage ahead after an L2 prefetch of the split's table (2), to time what
// the default (3: 2 with the stages' issues dealt to the warps in turn; DecodeParams::
// table_ahead) saves (tools/device/fp8_decode_paged.sh).
static int table_ahead() {
  static const int mode = [] {
    const char* e = std::getenv("FLASHSTEP_DECODE_TABLE_AHEAD");
    const std::string v = e ? e : "";
    if (v.empty()) return 3;
    if (v.size() == 1 && v[0] >= '0' && v[0] <= '3') return v[0] - '0';
    throw InputError("FLASHSTEP_DECODE_TABLE_AHEAD must be 0, 1, 2 or 3 (got '" + v + "')");
  }();
  return mode;
}

void decode_split_launch(const DecodeParams& params) {
  DecodeParams p = params;
  p.table_ahead = table_ahead();
  if (p.fp8) {  // checked by the host first: d = 64 or 128
    if (p.d == 64) return launch_split_fp8<8>(p);
    if (p.d == 128) return launch_split_fp8<16>(p);
    throw std::runtime_error("decode: no fp8 kernel for this d");
  }
  with_storage(p.dtype, [&](auto st) {
    using T = decltype(st);
    switch (p.d) {
      case 16: return launch_split_rows<T, 2>(p);
      case 32: return launch_split_rows<T, 4>(p);
      case 64: return launch_split_rows<T, 8>(p);
      case 128: return launch_split_rows<T, 16>(p);
      case 256: return launch_split_rows<T, 32>(p);
      default: throw std::runtime_error("decode: no kernel for this d");  // checked by the host first
    }
  });
}

// FLASHSTEP_DECODE_PDL=0 launches the combine in plain stream order instead, to time what the
// dependent launch saves (tools/device/decode_pdl.sh).
static bool combine_as_dependent() {
  static const bool on = [] {
    const char* e = std::getenv("FLASHSTEP_DECODE_PDL");
    return !(e && std::string(e) == "0");
  }();
  return on;
}

void decode_combine_launch(const DecodeParams& p) {
  with_storage(p.dtype, [&](auto st) {
    using T = decltype(st);
    const unsigned threads = unsigned(std::min(p.d, 128));
    // S weights and lse, padded by a float4: compute-sanitizer saw the compiler's vector loads
    // of w[] read up to 12 bytes past w[S] (values it then discards).
    const size_t smem = size_t((p.S + 1 + 3) / 4 + 1) * 16;
    cudaLaunchAttribute dependent[1] = {};
    dependent[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    dependent[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(unsigned(p.heads * p.nq));
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.attrs = dependent;
    cfg.numAttrs = combine_as_dependent() ? 1 : 0;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, decode_combine_kernel<T>, p));
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace flashstep::gpu
