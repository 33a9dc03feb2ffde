// gpu/tc_check.h: the tensor-core path against the float64 reference.
#include "gpu/tc_check.h"

#include "core/reference.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

namespace flashstep::gpu {

namespace {

double unit_roundoff(Dtype t) { return t == Dtype::fp16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8); }

Mat head_of(const std::vector<float>& v, int64_t h, int64_t rows, int64_t cols) {
  Mat m(rows, cols);
  std::copy_n(v.begin() + h * rows * cols, rows * cols, m.data());
  return m;
}

}  // namespace

bool TcAccuracy::ok() const {
  const double noise = 1e-6 * max_abs_v;
  return written && flash_abs <= 2.0 * std_abs + noise && flash_abs <= bound_abs + noise &&
         flash_lse_rel <= 2e-5;
}

std::string TcAccuracy::describe() const {
  std::ostringstream os;
  os << "flash |O - O64| " << flash_abs << " (standard " << std_abs << ", ratio "
     << (std_abs > 0 ? flash_abs / std_abs : 0.0) << ", bound 2u max|V| " << bound_abs
     << "), lse rel " << flash_lse_rel << " (standard " << std_lse_rel << ")"
     << (written ? "" : ", NaN left in the output");
  return os.str();
}

TcAccuracy tc_accuracy(const Shape& s, const TcOptions& o, uint64_t seed) {
  check_tc_request(s, 1.0f, o);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> Q(size_t(s.heads() * s.nq * s.d)), K(size_t(s.heads() * s.nk * s.d)), V(K.size());
  for (auto* v : {&Q, &K, &V}) {
    for (float& x : *v) x = nd(rng);
    round_in_place(o.dtype, v->data(), int64_t(v->size()));
  }
  const float scale = 1.0f / std::sqrt(float(s.d));
  const TcResult f = fa2_tc_forward(Q.data(), K.data(), V.data(), s, scale, o);
  const TcResult st = standard_tc_forward(Q.data(), K.data(), V.data(), s, scale, o);

  TcAccuracy a;
  a.variant = f.variant;
  a.written = true;
  for (const auto* v : {&f.O, &f.lse})
    for (float x : *v) a.written = a.written && !std::isnan(x);
  for (float x : V) a.max_abs_v = std::max(a.max_abs_v, double(std::abs(x)));
  a.bound_abs = 2.0 * unit_roundoff(o.dtype) * a.max_abs_v;
  for (int64_t h = 0; h < s.heads(); ++h) {
    Mask mask;
    mask.causal = o.causal;
    mask.offset = s.nk - s.nq;
    mask.kv_len = o.kv_lens.empty() ? o.kv_len : o.kv_lens[size_t(h / s.H)];
    const Reference ref = reference_attention(head_of(Q, h, s.nq, s.d), head_of(K, h, s.nk, s.d),
                                              head_of(V, h, s.nk, s.d), double(scale), mask);
    const Vec lse_f = Eigen::Map<const Vec>(f.lse.data() + h * s.nq, s.nq);
    const Vec lse_s = Eigen::Map<const Vec>(st.lse.data() + h * s.nq, s.nq);
    a.flash_abs = std::max(a.flash_abs, compare(head_of(f.O, h, s.nq, s.d), ref.O).max_abs);
    a.std_abs = std::max(a.std_abs, compare(head_of(st.O, h, s.nq, s.d), ref.O).max_abs);
    // lse is a logarithm: its absolute error is the relative error of the row's normaliser.
    // Relative to max(1, max|lse_ref|), so a head whose lse values are all near 0 (one key,
    // a score near 0) is not held to a relative bound its float32 scores cannot meet.
    double lse_max = 1.0;
    for (int64_t r = 0; r < s.nq; ++r)
      if (std::isfinite(ref.lse(r))) lse_max = std::max(lse_max, std::abs(ref.lse(r)));
    a.flash_lse_rel = std::max(a.flash_lse_rel, compare(lse_f, ref.lse).max_abs / lse_max);
    a.std_lse_rel = std::max(a.std_lse_rel, compare(lse_s, ref.lse).max_abs / lse_max);
  }
  return a;
}

}  // namespace flashstep::gpu
