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
//
// acc: a tensor core whose float32 accumulation keeps fewer bits (Hopper's FP8 wgmma; the
// DeepSeek-V3 report, section 3.3, measures about 14 bits). Modelled as: each k32 instruction's
// result carries an error of at most u_acc = 2^-13 of (|C| + sum |a_k b_k|), its accumulator
// input and its 32 products. S_ij takes s_steps instructions per score (d / 32), so delta grows by
// tau u_acc s_steps sum_k |q_k| |k_ck| (quantised magnitudes); O takes pv_steps instructions per
// row, each adding at most u_acc sum_c p_c |v_c| over every key so far: u_acc pv_steps Vmax (1 +
// sigma + rho) after the division by l. Zero steps (the CPU engine): no term.
struct Fp8Accumulation {
  int64_t s_steps = 0, pv_steps = 0;
};
constexpr double kFp8AccumulationU = 1.0 / 8192;  // 2^-13
double fp8_row_bound(const MatD& Q, const MatD& K, const MatD& V, double tau, double sq, double sk, double sv,
                     int64_t r, int64_t lo, int64_t hi, int64_t stores, bool p_rounded, Fp8Accumulation acc = {});

// An engine's O (Nq x d) of the problem against its float64 reference, held to fp8_row_bound
// row by row: the largest error / bound over the rows (<= 1 passes). The inputs as quantised (Q,
// K rotated with --rotate), each tensor's largest scale, O stored once in bf16, P~ in e4m3 only
// where the problem rounds it (fa1, fa2; decode keeps it in float32); with dropout, the bound
// scaled by 1 / (1 - p) as a kept weight is.
double fp8_bound_ratio(const Problem& p, const Tiling& t, const Mat& O, Fp8Accumulation acc = {});
// The same against a float64 reference already computed (core/reference.h's reference_attention
// of the problem), so that several engines' outputs share one.
double fp8_bound_ratio(const Problem& p, const Tiling& t, const Mat& O, const MatD& ref_O, Fp8Accumulation acc = {});

}  // namespace flashstep
