// FP8 storage (--dtype fp8): the e4m3 format, its scales, and the incoherent-processing rotation
// (docs/fp8.md). FlashAttention-3's FP8 forward (arXiv 2407.08608, section 3.3) is the model.
//
// e4m3 (OCP FP8 "E4M3", CUDA's __nv_fp8_e4m3): 1 sign bit, 4 exponent bits with bias 7, 3
// mantissa bits.
//   normal:    exponent field E = 1..15, value (1 + M/8) 2^(E-7); the largest, E = 15, M = 6, is 448
//   subnormal: E = 0, value (M/8) 2^-6 = M 2^-9; the smallest positive value is 2^-9
//   NaN:       E = 15, M = 7 (S.1111.111); there are no infinities; +0 and -0 both exist.
// round_e4m3 rounds to nearest, ties to the even mantissa, and saturates (PTX's
// cvt.rn.satfinite.e4m3x2.f32): |x| > 448, and +-inf, become +-448. NaN stays NaN (code 0x7F).
// The sign is kept, so -0 and a negative value that rounds to zero give -0.
#pragma once
#include "core/types.h"

#include <cstdint>
#include <string>

namespace flashstep {

constexpr float kE4m3Max = 448.0f;

float round_e4m3(float x);   // x rounded to the nearest e4m3 value (see above)
uint8_t e4m3_code(float x);  // the 8-bit code of round_e4m3(x)

// How Q, K and V get their float32 scales: one per tensor, or one per tile (a Q block of Br rows,
// a K/V block of Bc rows), as FlashAttention-3's block quantisation.
enum class Fp8Scale { none, per_tensor, per_block };
const char* fp8_scale_name(Fp8Scale s);          // "per-tensor", "per-block" ("none" without fp8)
Fp8Scale parse_fp8_scale(const std::string& s);  // throws InputError

// The scale of a block whose largest magnitude is amax: amax / 448, so that the block's largest
// entry maps to e4m3's largest value. A block of zeros gets scale 1 (any scale stores it exactly).
float e4m3_scale(float amax);

// X quantised in blocks of block_rows rows (the last one ragged): values(r, c) is the e4m3 value
// round_e4m3(X(r, c) / scales(b)) for the block b = r / block_rows, so that X ~ values * scale.
struct Fp8Tensor {
  Mat values;  // e4m3 values, held in floats (every one exact in e4m3)
  Mat scales;  // one float32 per block, a column
};
Fp8Tensor quantise_e4m3(const Mat& X, int64_t block_rows);

// Incoherent processing: R = H D / sqrt(d), H the d x d Sylvester Hadamard matrix (entries +-1,
// H H^T = d I), D diagonal with random signs drawn from `seed`. R is orthogonal, so
// (Q R)(K R)^T = Q K^T in exact arithmetic, while an outlier in one column of Q or K is spread
// over all d columns before quantisation. d must be a power of two (InputError otherwise).
MatD hadamard_rotation(int64_t d, uint64_t seed);
void check_rotation_dim(int64_t d);  // the InputError hadamard_rotation throws, alone

}  // namespace flashstep
