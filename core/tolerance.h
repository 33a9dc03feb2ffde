// The tolerance rule of verify (its checks: core/verify.h) and compare (app/cmd_compare.cpp),
// in one place: how far two float32 tiled engines (the CPU engine and a
// GPU kernel, or two runs of either) may differ, and each of them from the float64 reference.
//
//   tiled vs tiled: max_rel <= 5e-6 for O, l, m and lse. Same algorithm, same blocks, same
//     update functions; only the summation order inside a dot product and the exp
//     implementation differ (a few ulp).
//   16-bit storage (--dtype fp16 / bf16): both sides round the same inputs the same way and
//     compute in float32, so a stored O differs only where the float32 values fall on
//     different sides of a rounding boundary: one ulp of the stored type (2^-10 fp16, 2^-7
//     bf16). fa1 stores O at every j, so a one-ulp disagreement at one j carries into the next
//     update: two ulp. fa2 stores O once (one ulp); its per-j O_i^(j) is float32 on chip
//     (5e-6). l, m and lse are float32 always (5e-6).
//   each vs float64: max_rel <= 1e-5 (fp32 storage only; 16-bit errors are the storage type's).
//   gradients: max|x - ref| / s where s = max|ref|, but for dQ and dK never less than a
//     thousandth of one term of their sums (grad_scale_floor), because dS = P o (dP - D)
//     cancels where softmax saturates; GPU vs CPU 2e-5, each vs float64 1e-5. After every j,
//     relative to the final gradient's size.
//   max_rel = max|x - ref| / max|ref| (core/reference.h's compare).
#pragma once
#include "core/problem.h"
#include "core/schedule_registry.h"

#include <cmath>

namespace flashstep {

constexpr double kTiledTol = 5e-6;
constexpr double kFloat64Tol = 1e-5;
constexpr double kGradTiledTol = 2e-5;
constexpr double kGradFloat64Tol = 1e-5;

// One ulp of the storage type relative to the value (fp32: the tiled tolerance).
inline double storage_tol(Dtype t, double tiled_tol = kTiledTol) {
  switch (t) {
    case Dtype::fp16: return std::ldexp(1.0, -10);
    case Dtype::bf16: return std::ldexp(1.0, -7);
    case Dtype::fp8: return std::ldexp(1.0, -7);  // O is stored in bf16 (core/types.h output_dtype)
    default: return tiled_tol;
  }
}

// Tiled vs tiled tolerance of O as stored in HBM: fa1 rewrites O at every j (two ulp of a
// 16-bit type), fa2 and standard write it once (one ulp).
inline double tiled_o_tol(Schedule s, Dtype t, double tiled_tol = kTiledTol) {
  if (t == Dtype::fp32) return tiled_tol;
  return schedule_info(s).o_storage_ulps * storage_tol(t, tiled_tol);
}

// The least denominator of dQ's (or dK's, with max|Q| for max|K|) error: a thousandth of one
// term tau d max|dO| max|V| max|K| of its sum.
inline double grad_scale_floor(double scale, int64_t d, double max_do, double max_v, double max_k) {
  return 1e-3 * scale * double(d) * max_do * max_v * max_k;
}

}  // namespace flashstep
