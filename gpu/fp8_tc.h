// The FP8 forward on tensor cores (Hopper, gpu/fp8_kernel.cuh): e4m3 Q, K, V with float32 scales
// per tensor or per block, O in bf16 (docs/fp8-gpu.md, "On the GPU: the forward"). Plain C++.
//
// The inputs are quantised on the host as the CPU engine quantises them (core/fp8.h's
// quantise_e4m3, after core/fp8_bound.h's rotation with --rotate), on the kernel's blocks (Br rows
// of Q, Bc keys of K and V), so that a CPU run on the same Br, Bc holds the same values and scales.
// That is the producer's work (the layer that writes Q, K, V), as in the CPU engine's traffic
// count; so is V^T, which the host writes with the keys of each group of 32 in the kernel's order.
//
// Every request a user can get wrong (d other than 64 or 128, a GPU other than compute capability
// 9.0, a build without the sm_90a kernels, bad sizes or masks) is an InputError with one line,
// raised before any device memory is allocated.
#pragma once
#include "core/fp8.h"
#include "core/fp8_bound.h"
#include "core/problem.h"
#include "gpu/tensor_core.h"

#include <string>
#include <vector>

namespace flashstep::gpu {

struct Fp8TcOptions {
  bool causal = false;
  int64_t kv_len = -1;           // keys >= kv_len masked in every head; -1 none
  std::vector<int64_t> kv_lens;  // one per batch entry (B values); overrides kv_len
  Fp8Scale scale_mode = Fp8Scale::per_tensor;
  bool rotate = false;  // Q, K times a seeded random Hadamard matrix first (core/fp8.h)
  uint64_t seed = 1;    // the rotation's signs
  int variant = 0;      // the kernel: 0 the default for d; 1-21 the ladder's rungs (-DFLASHSTEP_LADDER=ON)
};

// A problem's mask, scale mode and rotation as the kernel's options.
Fp8TcOptions fp8_tc_options(const Problem& p);

// The tiles of the kernel at d (variant 0: the default; a ladder rung otherwise); its Br and Bc are
// the per-block scales' blocks. InputError when this build has no such kernel (a rung names the
// ladder).
struct Fp8TcTiles {
  int Br = 0, Bc = 0, threads = 0, stages = 0;
  int64_t smem_bytes = 0;
  std::string what;
};
Fp8TcTiles fp8_tc_tiles(int64_t d, int variant = 0);
// Whether this build holds the kernel of variant at d (no InputError).
bool fp8_tc_variant_built(int64_t d, int variant);

// Quantised inputs, (heads, N, d) each, every value exact in e4m3; scales per head and block:
// (heads, q_blocks) and (heads, k_blocks), one block per head with one scale per tensor.
struct Fp8TcInputs {
  std::vector<float> Q, K, V;
  std::vector<float> q_scale, k_scale, v_scale;
  int64_t q_blocks = 1, k_blocks = 1;
};
// float32 Q, K, V (B, H, N, d) quantised head by head on the kernel's blocks.
Fp8TcInputs fp8_tc_quantise(const float* Q, const float* K, const float* V, const Shape& s, const Fp8TcOptions& o);

// The FP8 accumulation's share of the error of one head's O (app/cmd_fp8_tc.cpp's rule 2): the
// kernel's steps (d / 32 per score, Bc / 32 per K/V block per row), dS = tau u_acc (d / 32)
// max_r,c sum_k |q~_k| |k~_k| and share = Vmax~ (e^(2 dS) - 1 + u_acc pv_steps), from the
// dequantised inputs of head 0 of `in` (Nq x d, Nk x d).
struct Fp8TcAccumulationShare {
  Fp8Accumulation acc;
  double dS = 0, share = 0, vmax = 0;
};
Fp8TcAccumulationShare fp8_tc_accumulation_share(const Fp8TcInputs& in, int64_t nq, int64_t nk, int64_t d, float tau,
                                                  int variant = 0);

void check_fp8_tc_request(const Shape& s, float scale, const Fp8TcOptions& o);

// The FP8 forward: O (bf16 values as float32) and lse (natural log). Outputs poisoned first.
TcResult fp8_tc_forward(const Fp8TcInputs& in, const Shape& s, float scale, const Fp8TcOptions& o);

// Timing on random e4m3 inputs (scales 1/16 per block), CUDA events, median of reps.
BenchTiming bench_fp8_tc(const Shape& s, float scale, const Fp8TcOptions& o, int warmup, int reps, uint64_t seed);

// Device memory of a run: Q, K, V^T in e4m3 (V^T's rows padded to the kernel's Bc), O in bf16,
// lse and the scales in float32.
int64_t fp8_tc_device_bytes(const Shape& s, int64_t Bc = 128);

}  // namespace flashstep::gpu
