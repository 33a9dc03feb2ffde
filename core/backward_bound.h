// Componentwise error bounds for a backward pass that feeds its matmuls 16-bit P and dS (the
// CPU engine's --p-dtype emulation and the tensor-core kernel of gpu/fa2_bwd_tc.cu): every
// element of dQ, dK, dV gets its own bound, computed in float64 from the exact P, dP and dS.
// The derivation is in docs/backward.md, "On tensor cores: the error bound". In short, with u
// the unit roundoff of the type:
//   dV: P rounded (u P), dV stored (u |dV|)              -> u P^T|dO| + u |dV|
//   dS: rounded (u |dS|), D = rowsum(dO o O~) from an O rounded twice in the forward
//       (2u (P|V|) per element of O), float32 dots and exp -> E (Nq x Nk)
//   dK = tau E^T |Q| + u |dK| (stored in the type); dQ = tau E |K| (float32 on the CPU; the
//   kernel rounds it once more: dQ_store = u |dQ|)
// plus the float32 sums' own error (length Nq for dK, dV; Nk for dQ). One engine that does this
// arithmetic is within `bound` of the float64 gradients; two such engines within 2 x bound of
// each other (both within it of the same float64 values).
#pragma once
#include "core/mask.h"
#include "core/types.h"

namespace flashstep {

double type_unit_roundoff(Dtype t);  // bf16 2^-8, fp16 2^-11, fp32 2^-24

struct GradBound {
  MatD dQ, dK, dV;                    // bounds on |x - x_64| for one engine
  MatD dQ_store;                      // u |dQ|: a dQ rounded to the type once at the end
  MatD dQ_exact, dK_exact, dV_exact;  // the float64 gradients
};
// Q, K, V, dO as the engine sees them (already values of the type). p_rounded_in_ds: the engine
// computes dS = P o (dP - D) from P as rounded to the type for the dV product (a kernel that keeps
// no float32 P beside dP), which adds |P~ - P| |dP - D| to each dS.
GradBound rounded_backward_bound(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO, double tau,
                                 const Mask& mask, Dtype type, bool p_rounded_in_ds = false);

struct BoundCheck {
  double max_abs = 0, worst_ratio = 0;  // max |x - ref|, max |x - ref| / allowed
  int64_t over = 0;                     // elements over the bound (NaN counts)
};
// |x - ref| <= times * bound (+ extra) element by element.
BoundCheck check_within(const Mat& x, const MatD& ref, const MatD& bound, double times,
                        const MatD* extra = nullptr);

}  // namespace flashstep
