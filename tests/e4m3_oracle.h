// The tests' own e4m3 (core/fp8.h's format), written from the bit fields and sharing nothing with
// core: decoding a code, and rounding by a search over every finite code. The FP8 tests, the
// course's source reader and the course's terminal walk-through hold core's values to it.
#pragma once
#include <cmath>
#include <stdexcept>

namespace fstest {

// An e4m3 code's value: sign 0x80, exponent field (code >> 3) & 15 with bias 7, mantissa code & 7.
inline double decode_e4m3(int code) {
  const int E = (code >> 3) & 15, M = code & 7;
  const double sign = (code & 0x80) ? -1.0 : 1.0;
  if (E == 15 && M == 7) return std::nan("");
  if (E == 0) return sign * M * std::ldexp(1.0, -9);
  return sign * (1.0 + M / 8.0) * std::ldexp(1.0, E - 7);
}

// Round to nearest by search over every finite code: the nearest value, on a tie the one with
// the even mantissa; beyond 448 the largest value (saturation).
inline float oracle_round_e4m3(float x) {
  if (std::fabs(double(x)) > 448.0) return x > 0 ? 448.0f : -448.0f;
  double best = 0;
  int best_code = -1;
  double best_dist = INFINITY;
  for (int code = 0; code < 256; ++code) {
    const double v = decode_e4m3(code);
    if (std::isnan(v) || (v == 0 && code == 0x80)) continue;  // +0 stands for both zeros
    const double dist = std::fabs(double(x) - v);
    if (dist < best_dist || (dist == best_dist && (code & 1) == 0)) {
      best_dist = dist;
      best = v;
      best_code = code;
    }
  }
  if (best_code < 0) throw std::runtime_error("e4m3 oracle: no code for a value (NaN?)");
  return std::copysign(float(best), x);  // a value that rounds to zero keeps its sign
}

}  // namespace fstest
