// e4m3 rounding, block quantisation and the Hadamard rotation (core/fp8.h; docs/fp8.md).
#include "core/fp8.h"
#include "core/fp8_bound.h"

#include "core/fp8_inputs.h"
#include "core/input_files.h"
#include "core/problem.h"
#include "core/reference.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace flashstep {

float round_e4m3(float x) {
  if (std::isnan(x)) return x;
  const double a = std::fabs(double(x));
  if (a >= double(kE4m3Max)) return std::copysign(kE4m3Max, x);  // satfinite (and +-inf)
  // The spacing of e4m3 values around a: 2^(e-3) in the binade [2^e, 2^(e+1)) of a normal value
  // (3 mantissa bits), 2^-9 for the subnormals below 2^-6. a / spacing is exact in a double, and
  // nearbyint rounds it to the nearest integer, ties to even: an even multiple of the spacing is an
  // even mantissa. A value that rounds up to 2^(e+1) lands on the next binade's first value, and
  // one that rounds up past 448 cannot happen (the largest a here is below 448 = 14 x 32).
  int e = 0;
  std::frexp(a, &e);  // a = f 2^e, f in [0.5, 1): a's binade is [2^(e-1), 2^e)
  const int binade = std::max(e - 1, -6);
  const double spacing = std::ldexp(1.0, binade - 3);
  const double r = std::nearbyint(a / spacing) * spacing;
  return std::copysign(float(r), x);
}

uint8_t e4m3_code(float x) {
  const float r = round_e4m3(x);
  if (std::isnan(r)) return 0x7F;
  const uint8_t sign = std::signbit(r) ? 0x80 : 0x00;
  const double a = std::fabs(double(r));
  if (a < std::ldexp(1.0, -6)) return uint8_t(sign | uint8_t(a * 512.0));  // subnormal: M 2^-9
  int e = 0;
  const double f = std::frexp(a, &e);  // a = (2f) 2^(e-1), 2f in [1, 2)
  const int E = e - 1 + 7;
  const int M = int((2.0 * f - 1.0) * 8.0);
  return uint8_t(sign | uint8_t(E << 3) | uint8_t(M));
}

const char* fp8_scale_name(Fp8Scale s) {
  switch (s) {
    case Fp8Scale::none: return "none";
    case Fp8Scale::per_tensor: return "per-tensor";
    case Fp8Scale::per_block: return "per-block";
  }
  return "?";
}

Fp8Scale parse_fp8_scale(const std::string& s) {
  if (s == "per-tensor") return Fp8Scale::per_tensor;
  if (s == "per-block") return Fp8Scale::per_block;
  throw InputError("unknown --fp8-scale '" + excerpt(s) + "' (expected per-tensor or per-block)");
}

float e4m3_scale(float amax) { return amax > 0 ? amax / kE4m3Max : 1.0f; }

Fp8Tensor quantise_e4m3(const Mat& X, int64_t block_rows) {
  const int64_t rows = X.rows(), blocks = rows == 0 ? 0 : (rows + block_rows - 1) / block_rows;
  Fp8Tensor q;
  q.values.resize(rows, X.cols());
  q.scales.resize(blocks, 1);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t r0 = b * block_rows, n = std::min(block_rows, rows - r0);
    const float scale = e4m3_scale(X.middleRows(r0, n).cwiseAbs().maxCoeff());
    q.scales(b, 0) = scale;
    for (int64_t r = r0; r < r0 + n; ++r)
      for (int64_t c = 0; c < X.cols(); ++c) q.values(r, c) = round_e4m3(X(r, c) / scale);
  }
  return q;
}

void check_rotation_dim(int64_t d) {
  if (d < 1 || (d & (d - 1)) != 0)
    throw InputError("--rotate uses a Hadamard matrix, which needs d a power of two (got d = " +
                     std::to_string(d) + ")");
}

MatD hadamard_rotation(int64_t d, uint64_t seed) {
  check_rotation_dim(d);
  // Sylvester: H_1 = [1], H_2n = [[H_n, H_n], [H_n, -H_n]]; entry (r, c) = (-1)^popcount(r & c).
  MatD R(d, d);
  // Random signs from splitmix64 of the seed (its own stream: not the inputs' generator).
  uint64_t s = seed ^ 0x5DEECE66Dull;
  std::vector<double> sign(size_t(d), 1.0);
  for (auto& v : sign) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    v = ((z ^ (z >> 31)) >> 63) ? -1.0 : 1.0;
  }
  const double norm = 1.0 / std::sqrt(double(d));
  for (int64_t r = 0; r < d; ++r)
    for (int64_t c = 0; c < d; ++c) {
      const double h = (__builtin_popcountll(uint64_t(r & c)) & 1) ? -1.0 : 1.0;
      R(r, c) = h * sign[size_t(c)] * norm;  // (H D)(r, c) = H(r, c) D(c, c)
    }
  return R;
}

Mat rotate_rows(const Mat& X, uint64_t seed) {
  return (X.cast<double>() * hadamard_rotation(X.cols(), seed)).cast<float>();
}

double fp8_row_bound(const MatD& Q, const MatD& K, const MatD& V, double tau, double sq, double sk, double sv,
                     int64_t r, int64_t lo, int64_t hi, int64_t stores, bool p_rounded, Fp8Accumulation acc) {
  lo = std::max<int64_t>(lo, 0);
  hi = std::min<int64_t>(hi, K.rows());
  if (lo >= hi) return 0;
  const double u = 1.0 / 16, sub = std::ldexp(1.0, -10);
  double delta = 0, smax = -INFINITY;
  for (int64_t c = lo; c < hi; ++c) {
    double dc = 0, mag = 0;
    for (int64_t k = 0; k < Q.cols(); ++k) {
      const double eq = u * std::fabs(Q(r, k)) + sub * sq, ek = u * std::fabs(K(c, k)) + sub * sk;
      dc += std::fabs(Q(r, k)) * ek + eq * std::fabs(K(c, k)) + eq * ek;
      mag += (std::fabs(Q(r, k)) + eq) * (std::fabs(K(c, k)) + ek);  // |q~| |k~| of the quantised values
    }
    dc += kFp8AccumulationU * double(acc.s_steps) * mag;
    delta = std::max(delta, tau * dc);
    smax = std::max(smax, tau * Q.row(r).dot(K.row(c)));
  }
  double l = 0;
  for (int64_t c = lo; c < hi; ++c) l += std::exp(tau * Q.row(r).dot(K.row(c)) - smax);
  l *= std::exp(-2 * delta);
  const double vmax = V.middleRows(lo, hi - lo).cwiseAbs().maxCoeff();
  const double sigma = std::expm1(2 * delta);
  const double rho = p_rounded ? u + double(hi - lo) * sub / std::max(l, 1.0) : 0.0;
  const double accumulation = kFp8AccumulationU * double(acc.pv_steps) * (vmax + u * vmax + sub * sv) * (1 + sigma + rho);
  return vmax * (sigma + rho) + (u * vmax + sub * sv) * (1 + sigma + rho) + double(stores) * std::ldexp(vmax, -9) * 1.01 +
         accumulation;
}

double fp8_bound_ratio(const Problem& p, const Tiling& t, const Mat& O, Fp8Accumulation acc) {
  const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale, p.mask, p.dropout, p.seed);
  return fp8_bound_ratio(p, t, O, ref.O, acc);
}

double fp8_bound_ratio(const Problem& p, const Tiling& t, const Mat& O, const MatD& ref_O, Fp8Accumulation acc) {
  const MatD Q = rotated_input(p, p.Q).cast<double>(), K = rotated_input(p, p.K).cast<double>(), V = p.V.cast<double>();
  const int64_t q_rows = p.fp8_scale == Fp8Scale::per_block ? t.Br : p.nq;
  const int64_t kv_rows = p.fp8_scale == Fp8Scale::per_block ? t.Bc : p.nk;
  const double sq = quantise_e4m3(Q.cast<float>(), q_rows).scales.maxCoeff();
  const double sk = quantise_e4m3(K.cast<float>(), kv_rows).scales.maxCoeff();
  const double sv = quantise_e4m3(p.V, kv_rows).scales.maxCoeff();
  double worst = 0;
  for (int64_t r = 0; r < p.nq; ++r) {
    double bound = fp8_row_bound(Q, K, V, p.scale, sq, sk, sv, r, p.mask.lo(r), p.mask.hi(r, p.nk) + 1, 1,
                                 p.p_dtype == Dtype::fp8, acc);
    const double err = (O.row(r).cast<double>() - ref_O.row(r)).cwiseAbs().maxCoeff();
    bound /= 1.0 - double(p.dropout);  // a kept weight is scaled by 1 / (1 - p), its error too
    if (bound > 0) worst = std::max(worst, err / bound);
    else if (err > 0) worst = INFINITY;  // a row with no key: O = 0 exactly
  }
  return worst;
}

}  // namespace flashstep

// [SECTION] the memory model's side (core/fp8_inputs.h)

namespace flashstep {

Mat rotated_input(const Problem& p, const Mat& X) {
  if (!p.rotate) return X;
  return rotate_rows(X, p.seed);
}

void put_fp8_inputs(Hbm& hbm, const Problem& p, const Tiling& t) {
  const bool per_block = p.fp8_scale == Fp8Scale::per_block;
  const auto put = [&](Tensor values, Tensor scales, const Mat& X, int64_t block_rows) {
    Fp8Tensor q = quantise_e4m3(X, per_block ? block_rows : std::max<int64_t>(X.rows(), 1));
    hbm.put(values, std::move(q.values));
    hbm.put(scales, std::move(q.scales));
  };
  put(Tensor::Q, Tensor::sQ, rotated_input(p, p.Q), t.Br);
  put(Tensor::K, Tensor::sK, rotated_input(p, p.K), t.Bc);
  put(Tensor::V, Tensor::sV, p.V, t.Bc);
}

float read_fp8_scale(Hbm& hbm, Tensor scales, int64_t block) {
  const int64_t row = hbm.get(scales).rows() == 1 ? 0 : block;
  return hbm.read(scales, row, 1)(0, 0);
}

}  // namespace flashstep
