// FlashAttention-2's backward on tensor cores (gpu/fa2_bwd_tc.cu): bf16 / fp16 storage, float32
// accumulation, after the tensor-core forward of gpu/tensor_core.h on the same device-resident
// inputs (its O and lse stay on the device). Plain C++: no CUDA headers.
//
// Tensors are row-major (B, H, N, d). Inputs and dO are float32 rounded to the type on upload
// (nearest even); O, dQ, dK, dV come back as float32 holding values of the type (dQ is summed in
// float32 and rounded once at the end; dK, dV once), lse float32. Masks: causal (bottom-right)
// and key padding, as the forward. A row that keeps no key gets dQ = 0; a key no row keeps gets
// dK = dV = 0.
//
// Every request a user can get wrong is an InputError with one line, raised before any device
// memory is allocated (check_tc_backward_request).
#pragma once
#include "gpu/tensor_core.h"

#include <string>
#include <vector>

namespace flashstep::gpu {

struct TcBackwardOptions {
  TcOptions forward;  // dtype, masks, the forward's variant (0: its default)
  int variant = 0;    // backward configuration (gpu/README.md; others in gpu/ladder/); 0 = the default for d
};

int tc_backward_variant_count();
int tc_backward_default_variant(int64_t d);
struct TcBackwardVariant {
  int variant = 0;
  std::string what;
  int Br = 0, Bc = 0, warps = 0;
  int64_t smem_bytes = 0;
  bool sm90_only = false;  // wgmma (variants 5-10): compute capability 9.0 alone
  bool ds_from_rounded_p = false;  // dS from P as rounded for dV's product (rounded_backward_bound's p_rounded_in_ds)
};
TcBackwardVariant tc_backward_variant(int variant, int64_t d);  // InputError if none for d
bool tc_backward_variant_compiled(int variant, int64_t d);

// The forward's checks (check_tc_request) and the backward's own (variant, shared memory).
void check_tc_backward_request(const Shape& s, float scale, const TcBackwardOptions& o);

struct TcBackwardResult {
  std::vector<float> O, lse, dQ, dK, dV;
  int forward_variant = 0, variant = 0;
  int64_t device_bytes = 0;  // peak device memory of forward + backward
};
TcBackwardResult fa2_tc_backward(const float* Q, const float* K, const float* V, const float* dO, const Shape& s,
                                 float scale, const TcBackwardOptions& o);

// Forward, backward (D and L2, the main kernel, dQ's conversion; dQ's zeroing included) and
// both together, each the median of `reps` after `warmup`, on device-generated inputs.
struct TcBackwardTiming {
  BenchTiming forward, backward, total;
};
TcBackwardTiming bench_fa2_tc_backward(const Shape& s, float scale, const TcBackwardOptions& o, int warmup,
                                       int reps, uint64_t seed);
int64_t fa2_tc_backward_device_bytes(const Shape& s);

}  // namespace flashstep::gpu
