// The float64 reference: softmax(tau Q K^T) V and each row's logsumexp, computed directly in
// double precision. Every other path in flashstep (CPU schedules, CUDA kernels) is tested
// against this function; keep it obviously correct rather than fast.
#pragma once
#include "core/mask.h"  // the struct Mask only
#include "core/types.h"

namespace flashstep {

// The reference costs Nq*Nk*d multiply-adds in double; callers skip it beyond this (and say so).
constexpr double kMaxReferenceWork = 4.0e9;
inline bool reference_affordable(int64_t nq, int64_t nk, int64_t d) {
  return double(nq) * double(nk) * double(d) <= kMaxReferenceWork;
}

// Whether query row r keeps key c, written from docs/algorithm.md's definitions and not from
// core/mask.h (whose interval arithmetic the schedules and kernels use: the reference must not
// share the code it checks). Only the fields causal, window_left, window_right and kv_len of
// `mask` are read; the alignment is the documented bottom-right one, Nk - Nq.
bool reference_keeps(const Mask& mask, int64_t r, int64_t c, int64_t nq, int64_t nk);

struct Reference {
  MatD O;
  VecD lse;
};
// Masked keys are left out of the softmax; a row that keeps no key gets O = 0, lse = -inf.
// With dropout p > 0, weights are dropped by the same Philox mask the schedules use (keyed by
// seed) and kept ones scaled by 1/(1-p); lse is unaffected.
Reference reference_attention(const Mat& Q, const Mat& K, const Mat& V, double scale,
                              const Mask& mask = Mask{}, float dropout = 0, uint64_t seed = 0);

// The float64 backward (reference_backward.cpp): the gradients of the loss L with respect to
// Q, K and V given dO = dL/dO, from the definition, row by row: P = softmax(tau q K^T) over the
// kept keys, Z the same Philox dropout mask as the forward, dV += (P o Z)^T dO, dP = (dO V^T) o Z,
// dS = P o (dP - rowsum(P o dP)), dQ = tau dS K, dK += tau dS^T q. A row that keeps no key has
// P = 0 and so gets (and gives) zero gradient.
struct ReferenceGrad {
  MatD dQ, dK, dV;
};
ReferenceGrad reference_backward(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO,
                                 double scale, const Mask& mask = Mask{}, float dropout = 0,
                                 uint64_t seed = 0);

// Error of a float32 result against a float64 one.
//   max_abs = max |x - ref|;  max_rel = max_abs / max |ref|  (normwise, so tiny entries of ref
//   do not blow it up). Any NaN in x makes both +inf.
struct ErrorStats {
  double max_abs = 0, max_rel = 0;
  double rms = 0;  // root mean square of the differences (entries matched at -inf count as 0)
  // The first entry (row-major index) where x or ref is NaN, or -1; max_abs and max_rel are then
  // infinite (no bound holds), and a report names the NaN rather than printing inf.
  int64_t nan_at = -1;
};
ErrorStats compare(const Mat& x, const MatD& ref);
ErrorStats compare(const Vec& x, const VecD& ref);

}  // namespace flashstep
