// gpu/ladder/poly_exp2.h: 2^x from a polynomial and the float's exponent bits, which the Hopper
// forward rungs v35-v38 use for part of the softmax's exponentials. The same code runs in the kernels
// (with the device's round-to-nearest intrinsics, which give the same roundings).
#include "gpu/ladder/poly_exp2.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace flashstep;

TEST_CASE("poly_exp2 is within its stated relative error of 2^x on [-125, 0]", "[ladder][poly_exp2]") {
  double worst = 0, at = 0;
  const int steps = 2000000;
  for (int i = 0; i <= steps; ++i) {
    const float x = float(-125.0 * double(i) / steps);
    const double rel = std::fabs(double(poly_exp2(x)) / std::exp2(double(x)) - 1.0);
    if (rel > worst) worst = rel, at = x;
  }
  INFO("worst relative error " << worst << " at x = " << at);
  CHECK(worst <= kPolyExp2RelError);
  CHECK(worst > 1e-7);  // the polynomial's error, not float32 rounding alone: a sweep that saw it
}

TEST_CASE("poly_exp2 is exact where the softmax needs it and 0 where ex2.approx.ftz flushes", "[ladder][poly_exp2]") {
  CHECK(std::fabs(poly_exp2(0.0f) - 1.0f) <= 1e-6f);  // the row's largest score
  for (int j = -30; j <= 0; ++j) {                     // whole powers: only the polynomial's f = 0 error
    INFO("x = " << j);
    CHECK(std::fabs(double(poly_exp2(float(j))) / std::ldexp(1.0, j) - 1.0) <= 1e-6);
  }
  CHECK(poly_exp2(-std::numeric_limits<float>::infinity()) == 0.0f);  // masked keys
  CHECK(poly_exp2(-127.0f) == 0.0f);
  CHECK(poly_exp2(-126.6f) == 0.0f);
  CHECK(poly_exp2(-1000.0f) == 0.0f);
  CHECK(poly_exp2(-126.4f) > 0.0f);  // rounds to j = -126: a subnormal result, as 2^x is
  CHECK(std::fabs(poly_exp2(5.25f) / std::exp2(5.25f) - 1.0f) <= 3e-6f);  // small positive x (rounding past the max)
}

TEST_CASE("poly_exp2 does not jump where round(x) steps", "[ladder][poly_exp2]") {
  // At x = k + 0.5 the polynomial switches from f = 0.5 to f = -0.5: the two sides, one float
  // apart, must agree with 2^x's own step to the error bound, else P~ would jump there.
  for (int k = -124; k < 0; ++k) {
    const float above = float(k) + 0.5f, below = std::nextafter(above, -1000.0f);
    const double ratio = double(poly_exp2(above)) / double(poly_exp2(below));
    INFO("k = " << k);
    CHECK(std::fabs(ratio / std::exp2(double(above) - double(below)) - 1.0) <= 2 * kPolyExp2RelError);
  }
}
