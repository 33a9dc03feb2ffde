// The online-softmax update, written once. The CPU schedules call these, and so do the float32
// CUDA kernels (gpu/fa1_forward.cu, gpu/fa2_forward.cu, the float32 backward through
// gpu/backward_tile.cuh, gpu/decode.cu's split and combine kernels, gpu/row_softmax.cu): they
// include this header, so the CPU and those kernels run the same update and cannot drift apart.
// The tensor-core kernels (gpu/fa2_tc.cu, fa2_wgmma.cu, fa3_forward.cu, fa2_bwd_tc.cu) do not
// call these: they keep m in units of tau log2(e) S and exponentiate with the special-function
// unit's exp2 (gpu/tc_ptx.cuh's online_softmax_row), which rounds differently, so they are
// checked against the CPU engine by tolerance (core/tolerance.h), not bit for bit. What they
// share with this header is the rule, written again there: a row that has kept no score
// (m = -inf) gets weights 0, O = 0 and lse = -inf, never NaN.
// The statistics' helpers are templates so that the lesson (core/lesson.cpp) runs the same
// update in double; the schedules and kernels use float.
#pragma once
#include "core/host_device.h"

#include <cmath>

namespace flashstep {

FS_HD float exp_of(float x) { return expf(x); }
FS_HD double exp_of(double x) { return exp(x); }
FS_HD float max_of(float a, float b) { return fmaxf(a, b); }
FS_HD double max_of(double a, double b) { return fmax(a, b); }

// e^(m_from - m_to): the factor that moves a sum taken relative to m_from onto m_to.
// A row that has seen no (unmasked) score yet has m = -inf and contributes nothing. We don't
// want (-inf) - (-inf), which is NaN, so that case returns 0 explicitly.
template <typename T>
FS_HD T rescale_factor(T m_from, T m_to) {
  return m_from == -INFINITY ? T(0) : exp_of(m_from - m_to);
}

// Alg1 L10 / FA2fwd L9 / Alg0 L2, per element: the weight P~ = e^(s - m) of score s against
// the row max m. A row that has kept no score has m = -inf: its weights are 0, not
// e^(-inf - (-inf)) = NaN.
template <typename T>
FS_HD T softmax_weight(T s, T m) {
  return m == -INFINITY ? T(0) : exp_of(s - m);
}

// Alg1 L11: m_i^new = max(m_i, m~_ij)
template <typename T>
FS_HD T merged_max(T m_old, T m_tilde) {
  return max_of(m_old, m_tilde);
}

// Alg1 L11: l_i^new = e^(m_i - m_i^new) l_i + e^(m~_ij - m_i^new) l~_ij
template <typename T>
FS_HD T merged_sum(T alpha, T l_old, T beta, T l_tilde) {
  return alpha * l_old + beta * l_tilde;
}

// Alg1 L12, per element: O_i <- diag(l_new)^-1 (diag(l_i) alpha O_i + beta P~_ij V_j).
// A row with l_new = 0 (every key so far masked) stays 0 rather than 0/0.
template <typename T>
FS_HD T merged_output(T l_old, T alpha, T o_old, T beta, T pv, T l_new) {
  return l_new == T(0) ? T(0) : (l_old * alpha * o_old + beta * pv) / l_new;
}

// FA2fwd L10, per element: O_i = diag(e^(m_old - m_new)) O_i + P~_ij V_j, not yet normalised
// (the division by l_i waits for FA2fwd L12).
FS_HD float accumulated_output(float alpha, float o_old, float pv) { return alpha * o_old + pv; }

// FA2fwd L12, per element: O_i = diag(l)^-1 O_i, once at the end; 0 for a row that kept no key
// (l = 0).
FS_HD float normalised_output(float o, float l) { return l == 0.0f ? 0.0f : o / l; }

// lse = m + log(l): the natural-log logsumexp of the row; -inf for a fully masked row.
FS_HD float row_logsumexp(float m, float l) { return l == 0.0f ? -INFINITY : m + logf(l); }

// Flash-decoding's combine (FD L17, L18; gpu/decode.cu's combine kernel calls the same): with
// m = max_s lse^(s) (merged_max), lse = row_logsumexp(m, sum_s rescale_factor(lse^(s), m)) and
// split s weighs e^(lse^(s) - lse). A split that kept no key of the row has lse^(s) = -inf and
// weight 0; when every split is empty, lse = -inf and every weight is 0, never
// e^(-inf - (-inf)) = NaN (rescale_factor returns 0 for a -inf source).
FS_HD float split_weight(float lse_s, float lse) { return rescale_factor(lse_s, lse); }

// The backward pass recomputes P from the forward's statistics (core/schedules/fa1/backward.cpp,
// fa2/backward.cpp and the CUDA backward kernels).
// Alg4 L13, per element: P_ij = diag(l_i)^-1 exp(S_ij - m_i). A row that kept no key has
// l_i = 0 and m_i = -inf: its P is 0 (zero gradient), not exp(-inf - (-inf)) / 0 = NaN.
FS_HD float recomputed_prob(float s, float m, float l) {
  return l == 0.0f ? 0.0f : expf(s - m) / l;
}
// FA2b L11, per element: P_ij = exp(S_ij - L_i); L_i = -inf for a row that kept no key.
FS_HD float recomputed_prob_lse(float s, float L) { return L == -INFINITY ? 0.0f : expf(s - L); }

}  // namespace flashstep
