// The CUDA backend's public interface: plain C++ (no CUDA headers), used by the GPU subcommands
// (app/cmd_*.cpp) and the tests (tests/gpu/). It takes the same Problem sizes and Tiling as
// the CPU engine and returns outputs plus per-j snapshots that line up with the Trace, so
// "compare the CPU trace with the GPU" is a plain diff.
//
// Tensors cross this interface as float32, row-major, (B, H, N, d): B * H independent heads of
// (N x d). l, m and lse are (B, H, Nq). With Features::dtype fp16 / bf16 the backend stores Q,
// K, V and O on the device in that type (rounded to nearest even on upload and on store) and
// hands back float32. Every problem a user can cause (no GPU, a shape the kernels cannot take,
// block sizes over the shared-memory limit, not enough device memory) is an InputError with
// one clear line, raised before any device memory is allocated.
#pragma once
#include "core/problem.h"

#include <cstdint>
#include <string>
#include <vector>

namespace flashstep::gpu {

struct Shape {
  int64_t B = 1, H = 1, nq = 0, nk = 0, d = 0;
  int64_t heads() const { return B * H; }
};

// Whether a CUDA device can be used; if not, `why` says why (no driver, no device, ...).
bool available(std::string* why = nullptr);

struct DeviceInfo {
  std::string name;
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  int64_t smem_per_block_optin = 0;  // bytes of shared memory one block may use
  int64_t free_bytes = 0, total_bytes = 0;
};
DeviceInfo device_info();  // throws InputError when no GPU can be used

// fa1 kernel variants (see fa1_forward.cu): 1 = plain, 2 = register-tiled; 0 = automatic.
// Returns the variant that will run, or throws InputError naming the reason (variant 2 not
// compiled for these sizes, or the shared memory they need is over the device's limit).
int resolve_fa1_variant(int requested, const Tiling& t, int64_t d);
// Shared memory a variant needs per block; -1 where the variant has no kernel for the sizes.
int64_t fa1_shared_bytes(int variant, const Tiling& t, int64_t d);
std::string fa1_v2_configs();  // "(Br, Bc, d) = (64, 16, 64), ..."

// Device memory each schedule allocates for a shape (inputs, outputs, S and P for standard).
int64_t fa1_device_bytes(const Shape& s, Dtype dtype = Dtype::fp32);
int64_t standard_device_bytes(const Shape& s);

// Algorithm 2's additions and the storage type, for every schedule: core's AttentionOptions
// (mask with core/mask.h's rule, dropout p, dtype; Mask::offset is set here from the shape)
// plus what the GPU adds:
//   kv_lens: valid key length per batch entry (B values, each 0..Nk); overrides mask.kv_len
//   seed: Philox's key; the counter is (batch, head, row, column), so for B = H = 1 the
//     dropout mask is the CPU engine's exactly
//   dtype: storage type of Q, K, V, O (fa1 and fa2; the standard baseline is float32)
struct Features : AttentionOptions {
  std::vector<int64_t> kv_lens;
  uint64_t seed = 0;
};
// The one way to build Features: a problem's options and seed (and kv_lens, if any).
Features features_of(const AttentionOptions& o, uint64_t seed, std::vector<int64_t> kv_lens = {});
// Validates f for the shape: core's validate_options, then the GPU's own (kv_lens), each
// value out of range one clear InputError, checked before any work.
void check_features(const Features& f, const Shape& s);

// fa1: the state in HBM after the last Q block of a given j (Alg1 L13 for i = Tr - 1).
// fa2 (Fa2Options::snapshots): every Q block's on-chip O_i^(j) (not yet divided by l_i),
// l_i^(j), m_i^(j) after inner step j, gathered over i. All heads, float32.
struct ForwardSnapshot {
  int64_t j = 0;
  std::vector<float> O, l, m;
};

struct Result {
  std::vector<float> O, lse;  // (B, H, Nq, d) and (B, H, Nq)
  std::vector<float> l, m;    // fa1 only: the final row statistics in HBM
  std::vector<ForwardSnapshot> snapshots;
  // decode with S >= 2: the split kernel's float32 partials O^(s) (S, B, H, Nq, d) and lse^(s)
  // (S, B, H, Nq), copied back after the run (gpu/decode.h's DecodeResult); empty otherwise.
  std::vector<float> O_part, lse_part;
  int variant = 0;
  int64_t device_bytes = 0;  // peak device memory the run allocated
};

struct Fa1Options {
  int variant = 0;
  bool snapshots = false;  // copy O, l, m back after every j
  Features features;
};

// FlashAttention-2 kernel variants (see fa2_forward.cu): 1 = plain, 2 = register-tiled.
struct Fa2Options {
  int variant = 0;
  // Variant 1's snapshot instantiation: O_i, l_i, m_i dumped after every inner step j (needs
  // variant 0 or 1, and Tc x the output's size of device memory more).
  bool snapshots = false;
  Features features;
};
int resolve_fa2_variant(int requested, const Tiling& t, int64_t d);
int64_t fa2_shared_bytes(int variant, const Tiling& t, int64_t d);
std::string fa2_v2_configs();
int64_t fa2_device_bytes(const Shape& s, Dtype dtype);

// Algorithm 1 on the GPU with the CPU's Br, Bc (t.Br, t.Bc; t.Tr and t.Tc must match the shape).
// Outputs are poisoned with NaN before the run, so an element no kernel writes stays NaN.
Result fa1_forward(const float* Q, const float* K, const float* V, const Shape& s, float scale,
                   const Tiling& t, const Fa1Options& opt = {});
// FlashAttention-2 on the GPU with the CPU's Br, Bc: one launch; O and lse (no l, m; per-j
// snapshots of the on-chip state only with Fa2Options::snapshots). Outputs are poisoned with
// NaN first.
Result fa2_forward(const float* Q, const float* K, const float* V, const Shape& s, float scale,
                   const Tiling& t, const Fa2Options& opt = {});
// Algorithm 0 (standard attention): S and P materialised in device memory (float32 only).
Result standard_forward(const float* Q, const float* K, const float* V, const Shape& s, float scale,
                        const Features& f = {});

// The dropout keep mask (1 kept, 0 dropped) the GPU's Philox gives rows [row0, row0 + rows) x
// columns [col0, col0 + cols) of (batch, head), computed by a kernel: for tests.
std::vector<uint8_t> gpu_dropout_mask(int rows, int cols, int row0, int col0, int batch, int head,
                                      uint64_t seed, float p);

// Timing on device-generated random inputs (CUDA events, warm-up, median of `reps`).
// Each timed sample is `batch` calls issued back to back between one pair of events, divided by
// `batch` (default 1: one call per pair). With 1 the host's work before each launch (argument
// set-up, tensor maps, a framework's dispatch) counts in the time, since the GPU sits idle
// until the launch arrives; with a few calls queued it runs under the previous call's kernels.
void set_timing_batch(int batch);
int timing_batch();
// The GPU time a timed measurement's `warmup` runs take at least (gpu/common.cuh's warmup_ms:
// FLASHSTEP_WARMUP_MS, default 25; 0 when there are none), for the tables' headers.
double timing_warmup_ms(int warmup);
struct BenchTiming {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int reps = 0, variant = 0;
  int64_t peak_bytes = 0;
};
BenchTiming bench_fa1(const Shape& s, float scale, const Tiling& t, int variant, int warmup,
                      int reps, uint64_t seed);
BenchTiming bench_standard(const Shape& s, float scale, int warmup, int reps, uint64_t seed);
BenchTiming bench_fa2(const Shape& s, float scale, const Tiling& t, int variant, const Features& f,
                      int warmup, int reps, uint64_t seed);

}  // namespace flashstep::gpu
