// The backward pass on the GPU: float32 kernels of the three backward schedules,
// behind a plain C++ interface (no CUDA headers), shaped like gpu/backend.h's forward API.
//   fa1_backward       Algorithm 4: one thread block per (K/V block j, head) looping over the Q
//                      blocks i; dK_j, dV_j accumulated on chip and written once; dQ accumulated
//                      in HBM with float32 atomic adds. With `snapshots`, one launch per j and
//                      dQ, dK, dV copied back after each (to compare with the CPU trace per j).
//   fa2_backward       FlashAttention-2's Algorithm 2: D = rowsum(dO o O) first, then the same
//                      loop order with P_ij = exp(S_ij - L_i) from the forward's logsumexp.
//                      `snapshots` as for fa1 (dK_j, dV_j of blocks after j are still NaN then).
//   standard_backward  Algorithm 3: P, dP and dS materialised in device memory.
// Each runs its own forward first (the existing forward kernels: fa1's l and m, fa2's lse,
// standard's P) on the same inputs and returns its O and lse too. Tensors are float32,
// row-major (B, H, N, d) as in gpu/backend.h; masks and dropout are Features (the forward's
// Philox draw, applied again). float32 storage only. Every problem a user can cause is an
// InputError with one clear line, raised before any device memory is allocated.
#pragma once
#include "core/problem.h"
#include "gpu/backend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace flashstep::gpu {

struct BackwardOptions {
  int variant = 0;          // backward kernels (fa1, fa2): 0 automatic, 1 plain, 2 register-tiled, 3 lean
  int forward_variant = 0;  // the forward's kernel variant (gpu/backend.h), 0 automatic
  bool snapshots = false;   // fa1, fa2: one launch per j, dQ, dK, dV copied back after each
  Features features;
};

// HBM's dQ, dK, dV after all Q blocks of K/V block j (after Alg4 L24 of j), all heads.
struct GradSnapshot {
  int64_t j = 0;
  std::vector<float> dQ, dK, dV;
};

struct BackwardResult {
  std::vector<float> O, lse;      // the forward's: (B, H, Nq, d) and (B, H, Nq)
  std::vector<float> dQ, dK, dV;  // (B, H, Nq, d), (B, H, Nk, d), (B, H, Nk, d)
  std::vector<GradSnapshot> snapshots;
  int variant = 0;           // the backward kernel variant that ran (0 for standard)
  int64_t device_bytes = 0;  // peak device memory the run allocated
};

// Backward kernel variant for (Br, Bc, d), as resolve_fa1_variant: InputError where none fits.
int resolve_backward_variant(int requested, const Tiling& t, int64_t d);
int64_t backward_shared_bytes(int variant, const Tiling& t, int64_t d);
std::string backward_v2_configs();
std::string backward_v3_configs();
// Device memory each schedule's forward + backward allocates.
int64_t backward_device_bytes(Schedule schedule, const Shape& s);

// Gradients of O = attention(Q, K, V) given dO = dLoss/dO (Nq x d per head), with the CPU's
// Br, Bc (t.Tr, t.Tc must match the shape). Outputs are poisoned with NaN before the run
// (dQ starts at zero, Alg4 L5 / FA2b L3), so an element no kernel writes stays NaN.
BackwardResult fa1_backward(const float* Q, const float* K, const float* V, const float* dO,
                            const Shape& s, float scale, const Tiling& t, const BackwardOptions& opt = {});
BackwardResult fa2_backward(const float* Q, const float* K, const float* V, const float* dO,
                            const Shape& s, float scale, const Tiling& t, const BackwardOptions& opt = {});
BackwardResult standard_backward(const float* Q, const float* K, const float* V, const float* dO,
                                 const Shape& s, float scale, const Features& f = {});

// Timing on device-generated random inputs (CUDA events, `warmup` untimed runs, median of
// `reps`): the forward alone, the backward alone (after one forward), forward + backward.
// peak_bytes of each is the whole run's peak device memory.
struct BackwardTiming {
  BenchTiming forward, backward, total;
};
BackwardTiming bench_backward(Schedule schedule, const Shape& s, float scale, const Tiling& t,
                              const BackwardOptions& opt, int warmup, int reps, uint64_t seed);

}  // namespace flashstep::gpu
