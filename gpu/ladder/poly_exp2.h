// 2^x without the special-function unit: the softmax's exponentials on the float32 and integer
// pipes, for the Hopper forward rungs that move part of the exp2 work off the 16-per-clock
// special-function units (gpu/ladder/fa3_rungs.cu, v35-v38; FlashAttention-4 does this on
// Blackwell). A ladder file: the default kernels take every exp2 from the special-function unit,
// and gpu/tc_ptx.cuh includes this header only in a ladder build.
//
// x = j + f with j = round(x) and f in [-0.5, 0.5]:
//   - j: adding 1.5 x 2^23 leaves round(x) in the low mantissa bits of the sum (the float
//     rounding itself does the rounding), and subtracting it again gives j as a float;
//   - 2^f: a degree-4 polynomial, Horner's rule in fused multiply-adds. Its coefficients are a
//     Remez-exchange fit of 2^f's relative error on [-0.5, 0.5] made for this file: 2.7e-6 at
//     most in float32 (the test sweeps it), below bf16's 2^-8 and fp16's 2^-11 by 1000x and 180x;
//   - 2^j: the bits (j + 127) << 23 of a float, from the sum's low bits shifted left by 23.
// Ten float32 or integer instructions. x is clamped to -127 first, where 2^j's bits are 0: so
// x <= -126.5 and x = -inf give +0, as ex2.approx.ftz does; x must be at most 128 (softmax
// arguments are at most 0). NaN is not expected (scores are finite or -inf).
#pragma once
#include "core/host_device.h"

#include <cstdint>
#include <cstring>

namespace flashstep {

namespace poly_exp2_detail {
FS_HD float bits_to_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}
FS_HD uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}
}  // namespace poly_exp2_detail

// The largest relative error of poly_exp2 on [-125, 0] (gpu/ladder/tests/test_poly_exp2.cpp
// measures it); below -125 the results turn subnormal and lose relative precision, as 2^x itself does in float.
constexpr double kPolyExp2RelError = 3e-6;

FS_HD float poly_exp2(float x) {
  using namespace poly_exp2_detail;
  const float kShift = 12582912.0f;  // 1.5 x 2^23
  x = x > -127.0f ? x : -127.0f;     // also maps -inf to -127
#if defined(__CUDA_ARCH__)
  const float t = __fadd_rn(x, kShift);  // _rn: kept apart from contraction and reassociation
  const float j = __fsub_rn(t, kShift);
  const float f = __fsub_rn(x, j);
  float p = __fmaf_rn(9.570102207e-03f, f, 5.591785908e-02f);
  p = __fmaf_rn(p, f, 2.402474433e-01f);
  p = __fmaf_rn(p, f, 6.931217909e-01f);
  p = __fmaf_rn(p, f, 9.999992847e-01f);
#else
  volatile float t_ = x + kShift;  // volatile: the host compiler must round here too
  const float t = t_;
  const float j = t - kShift;
  const float f = x - j;
  float p = __builtin_fmaf(9.570102207e-03f, f, 5.591785908e-02f);
  p = __builtin_fmaf(p, f, 2.402474433e-01f);
  p = __builtin_fmaf(p, f, 6.931217909e-01f);
  p = __builtin_fmaf(p, f, 9.999992847e-01f);
#endif
  // The sum's bits are 0x4B400000 + j; shifted by 23 only j << 23 is left (mod 2^32), and adding
  // 127 << 23 makes 2^j (bits 0, that is +0, for j = -127).
  const float two_j = bits_to_float((float_to_bits(t) << 23) + 0x3F800000u);
  return p * two_j;
}

}  // namespace flashstep
