// FP8 helpers beside core/fp8.h that only some readers need (kept out of fp8.h, which every
// Problem user includes): the rotation of a whole matrix and the format's error bound per row.
#pragma once
#include "core/types.h"

#include <cstdint>

namespace flashstep {

struct Problem;
struct Tiling;

// X R (R = hadamard_rotation(X.cols(), seed)) in float64, rounded to float32 once: Q and K as
// --rotate hands them to the quantisation.
Mat rotate_rows(const Mat& X, uint64_t seed);

// The first-order bound on max_c |O(r, c) - O_exact(r, c)| for row r that the format gives
// (docs/fp8.md, "How large the error can be"), over the keys lo <= c < hi of the row (its mask's
// interval). Q, K, V: the inputs before quantisation (Q, K after the rotation, if any), float64; tau
// the softmax scale; sq, sk, sv the largest scale of each tensor (a subnormal's error is 2^-10 s);
// stores: how many times O is rounded to bf16; p_rounded: P~ goes to e4m3 before P V (fa1, fa2;
// decode keeps it in float32). With u = 2^-4:
//   eps(x) = u |x| + 2^-10 s                 error of a quantised entry, dequantised
//   delta  = tau max_c sum_k |q_k| eps(k_ck) + eps(q_k) |k_ck| + eps(q_k) eps(k_ck)   on S
//   sigma  = e^(2 delta) - 1                 the softmax's weights moved by at most this in sum
//   rho    = u + Nk 2^-10 / l (P~ in e4m3; 0 otherwise), l = sum_c e^(S_c - max S) e^(-2 delta)
//   bound  = Vmax (sigma + rho) + (u Vmax + 2^-10 s_v)(1 + sigma + rho) + stores 2^-9 Vmax
// A row with no key (lo >= hi) gets 0.
double fp8_row_bound(const MatD& Q, const MatD& K, const MatD& V, double tau, double sq, double sk, double sv,
                     int64_t r, int64_t lo, int64_t hi, int64_t stores, bool p_rounded);

// An engine's O (Nq x d) of the problem against its float64 reference, held to fp8_row_bound
// row by row: the largest error / bound over the rows (<= 1 passes). The inputs as quantised (Q,
// K rotated with --rotate), each tensor's largest scale, O stored once in bf16, P~ in e4m3 only
// where the problem rounds it (fa1, fa2; decode keeps it in float32); with dropout, the bound
// scaled by 1 / (1 - p) as a kept weight is.
double fp8_bound_ratio(const Problem& p, const Tiling& t, const Mat& O);

}  // namespace flashstep
