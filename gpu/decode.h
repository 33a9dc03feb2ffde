// Flash-decoding on the GPU (gpu/decode.cu): the host API. Same conventions as backend.h:
// float32 (B, H, N, d) tensors in and out, the storage type (Features::dtype) on the device,
// every user-caused problem an InputError before any device memory is allocated.
#pragma once
#include "gpu/backend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace flashstep::gpu {

struct DecodeOptions {
  int64_t splits = 1;      // S, 1 <= S <= Tc: split s covers core/schedules/decode/decode.h's split_range
  Features features;
  // A paged KV cache (core/paged_kv.h): pages of page_size tokens, placed by
  // page_table(B H, ceil(Nk / P), features.seed); 0 = K, V contiguous.
  int64_t page_size = 0;
  int variant = 0;         // the split kernel's variant (gpu/decode.cu); 0 = the default
};

struct DecodeResult {
  std::vector<float> O, lse;            // (B, H, Nq, d), (B, H, Nq)
  std::vector<float> O_part, lse_part;  // S >= 2: (S, B, H, Nq, d), (S, B, H, Nq), float32
  int64_t device_bytes = 0;
};

// The split kernel's numbered variants (gpu/decode.cu's header); 0 = the default, the one
// decode_default picks for the shape.
inline constexpr int kFirstDecodeVariant = 3, kLastDecodeVariant = 12;

// The default split kernel and S of a decode run on this device (the rule and the sweep it
// comes from: gpu/decode_backend.cpp). Needs the device (its SM count).
struct DecodeChoice {
  int variant = 3;
  int64_t splits = 1;
};
DecodeChoice decode_default(const Shape& s, const Tiling& t, Dtype dtype, int64_t page_size);
// `variant`, or decode_default's variant when it is 0.
int resolve_decode_variant(int variant, const Shape& s, const Tiling& t, Dtype dtype, int64_t page_size);

// Whether the split kernel has variant v (gpu/decode.cu: 3 always; 4-9 for d = 64, 128 in
// fp16/bf16; 9 and 10 for fp8 at d = 64, 128; 0 = the default) for this d and storage type.
bool decode_variant_exists(int variant, int64_t d, Dtype dtype);  // built in this build
bool decode_variant_is_ladder(int variant);  // 4, 6, 7, 8 (and 3 at d = 64, 128 in 16 bits): -DFLASHSTEP_LADDER=ON only
bool decode_fp8_one_row_kernel(int variant);  // FP8: 10; 9 too in a ladder build (a default build: 9's four-row kernel)
// The same as a check: an InputError naming what exists when it does not.
void check_decode_variant(int variant, int64_t d, Dtype dtype);

// Device memory a decode run allocates (inputs and O in the storage type, partials float32).
int64_t decode_device_bytes(const Shape& s, Dtype dtype, int64_t splits, int64_t page_size = 0);

// Split-KV with the CPU's Bc and Tc (t.Tc must be ceil(Nk / Bc)), then the combine (S >= 2).
// Outputs and partials are poisoned with NaN first.
DecodeResult decode_forward(const float* Q, const float* K, const float* V, const Shape& s, float scale,
                            const Tiling& t, const DecodeOptions& opt);

// Times the split and combine launches on device-generated inputs (warm-up, median of reps).
BenchTiming bench_decode(const Shape& s, float scale, const Tiling& t, const DecodeOptions& opt, int warmup,
                         int reps, uint64_t seed);

// Times several (splits, variant) configurations of one shape on one set of device buffers
// (allocated and filled once, for the largest S): one BenchTiming per entry of `configs`, each
// checked as bench_decode checks its options (page_size and features from configs[0]).
std::vector<BenchTiming> bench_decode_configs(const Shape& s, float scale, const Tiling& t,
                                              const std::vector<DecodeOptions>& configs, int warmup, int reps,
                                              uint64_t seed);

// The device's copy bandwidth: cudaMemcpy of `bytes` device to device, (read + written bytes)
// / median time, in GB/s.
double measure_copy_bandwidth(int64_t bytes, int warmup, int reps);

// The device's read roof: a kernel that only reads `bytes` (a ring of bulk copies into shared
// memory on every SM, the stream of the decode kernel's variant 6 without the attention), bytes
// read / median time, in GB/s. A decode kernel reads and hardly writes: this, not the copy
// bandwidth, is its ceiling.
double measure_read_bandwidth(int64_t bytes, int warmup, int reps);

// The read streams (the read roof, gpu/read_streams.cu, then the ladder's shapes,
// gpu/ladder/read_streams.cu: bulk copies of several sizes and depths, with and without an L2
// evict_first policy; register loads with 4-16 in flight per thread, with and without the
// .L2::256B prefetch; chunks interleaved over the grid or one range per block) reading the same
// `bytes` buffer: bytes read / median time, GB/s. A default build has the read roof alone and
// refuses with an InputError naming -DFLASHSTEP_LADDER=ON.
struct ReadStreamResult {
  std::string name;
  int threads = 0, blocks_per_sm = 0, in_flight_kib_per_sm = 0;
  double gbps = 0, median_ms = 0;
};
std::vector<ReadStreamResult> measure_read_streams(int64_t bytes, int warmup, int reps);

}  // namespace flashstep::gpu
