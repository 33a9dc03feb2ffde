// The tensor-core path: FlashAttention-2 forward on mma.sync in bf16 / fp16
// (gpu/fa2_tc.cu, a ladder of numbered variants) and standard attention at full speed through
// cuBLAS (S = tau Q K^T and O = P V with float32 accumulation, S and P stored in the input type,
// gpu/standard_tc.cu's softmax between). Plain C++: no CUDA headers.
//
// Tensors are row-major (B, H, N, d) as in gpu/backend.h. Inputs are either 16-bit values
// (their bits, as uint16_t) or float32 rounded to the type on upload (nearest even, as
// core/types.h's round_to); O comes back as float32 (each value exactly one of the type, since
// the kernels round O once), lse as float32, natural log. Masks: causal (bottom-right, as
// core/mask.h) and key padding (kv_len, or one length per batch entry).
//
// Every request a user can get wrong (fp32, d other than 64 or 128, a GPU older than sm_80,
// bad sizes or masks, not enough memory) is an InputError with one clear line, raised before
// any device memory is allocated.
#pragma once
#include "core/types.h"
#include "gpu/backend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace flashstep::gpu {

// A (B, H, Nq, Nk, d) shape in one expression.
inline Shape make_shape(int64_t B, int64_t H, int64_t nq, int64_t nk, int64_t d) {
  Shape s;
  s.B = B;
  s.H = H;
  s.nq = nq;
  s.nk = nk;
  s.d = d;
  return s;
}

struct TcOptions {
  Dtype dtype = Dtype::bf16;  // bf16 or fp16
  int variant = 0;            // fa2 ladder variant; 0 = the fastest for d
  bool causal = false;
  int64_t kv_len = -1;            // keys >= kv_len masked in every head; -1 none
  std::vector<int64_t> kv_lens;   // one per batch entry (B values); overrides kv_len
};

// Variants of the FlashAttention-2 tensor-core ladder, and the one variant 0 picks for (d, causal):
// the fastest measured (v15 on a compute capability 9.0 GPU where it is built; else v11).
// The Bc sweep's kernels (Figure 2 middle on tensor cores): variants 101-104, Bc = 16 .. 128
// at Br = 128; run and checked like the ladder's variants, never picked automatically.
std::vector<int> tc_bc_sweep_variants();
int tc_variant_count();
// Whether this build holds a kernel for (variant, d): the defaults always, other rungs with the ladder.
bool tc_variant_built(int variant, int64_t d);
// The Hopper default for (d, causal) whatever GPU is present (0 in a build without sm_90a code).
int tc_hopper_default_variant(int64_t d, bool causal);
int tc_default_variant(int64_t d, bool causal = false);
struct TcVariant {
  int variant = 0;
  std::string what;
  int Br = 0, Bc = 0, warps = 0, stages = 0;
  int64_t smem_bytes = 0;
};
TcVariant tc_variant(int variant, int64_t d);  // throws InputError if none for d

// One clear InputError for anything the tensor-core kernels cannot take.
void check_tc_request(const Shape& s, float scale, const TcOptions& o);

struct TcResult {
  std::vector<float> O, lse;  // (B, H, Nq, d) and (B, H, Nq)
  int variant = 0;            // 0 for standard attention
  int64_t device_bytes = 0;   // peak device memory the run allocated
};

// FlashAttention-2 on tensor cores. Outputs are poisoned (NaN) before the run.
TcResult fa2_tc_forward(const float* Q, const float* K, const float* V, const Shape& s,
                        float scale, const TcOptions& o);
TcResult fa2_tc_forward_bits(const uint16_t* Q, const uint16_t* K, const uint16_t* V,
                             const Shape& s, float scale, const TcOptions& o);
// Standard attention on tensor cores (cuBLAS + softmax kernel), S and P in the input type.
TcResult standard_tc_forward(const float* Q, const float* K, const float* V, const Shape& s,
                             float scale, const TcOptions& o);
TcResult standard_tc_forward_bits(const uint16_t* Q, const uint16_t* K, const uint16_t* V,
                                  const Shape& s, float scale, const TcOptions& o);

// cuBLAS, which standard attention on tensor cores calls, is opened on first use rather than
// linked (gpu/tensor_core.cpp). This opens it now; it needs no GPU. Throws InputError (as for a
// missing GPU: one error line) naming the library when it cannot be opened or lacks a function
// this program calls.
void open_cublas();

// Timing on device-generated random inputs: CUDA events, `warmup` untimed runs, median of
// `reps` (gpu/common.cuh's median_ms). BenchTiming as gpu/backend.h (variant 0 = standard).
BenchTiming bench_fa2_tc(const Shape& s, float scale, const TcOptions& o, int warmup, int reps,
                         uint64_t seed);
BenchTiming bench_standard_tc(const Shape& s, float scale, const TcOptions& o, int warmup,
                              int reps, uint64_t seed);
// Device memory each path allocates for a shape (inputs, O, lse; S and P for standard).
int64_t fa2_tc_device_bytes(const Shape& s);
int64_t standard_tc_device_bytes(const Shape& s);

}  // namespace flashstep::gpu
