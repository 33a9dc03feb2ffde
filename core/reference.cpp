// The float64 reference every other path is tested against: softmax(tau Q K^T) V computed
// directly, row by row, in double precision, with the safe (max-subtracted) softmax.
#include "core/reference.h"

#include "core/philox.h"

#include <cmath>
#include <limits>

namespace flashstep {

bool reference_keeps(const Mask& mask, int64_t r, int64_t c, int64_t nq, int64_t nk) {
  // Bottom-right alignment: query row r lines up with key column r + (Nk - Nq).
  const int64_t aligned = r + (nk - nq);
  // --causal: no key after the aligned column.
  if (mask.causal && c > aligned) return false;
  // --window LEFT,RIGHT: keys from aligned - LEFT to aligned + RIGHT; -1 is no limit on that side.
  if (mask.window_left != -1 && c < aligned - mask.window_left) return false;
  if (mask.window_right != -1 && c > aligned + mask.window_right) return false;
  // --kv-len L: only the first L keys are valid; -1 is no padding.
  if (mask.kv_len != -1 && c >= mask.kv_len) return false;
  return true;
}

Reference reference_attention(const Mat& Q, const Mat& K, const Mat& V, double scale,
                              const Mask& mask, float dropout, uint64_t seed) {
  const MatD q = Q.cast<double>(), k = K.cast<double>(), v = V.cast<double>();
  Reference ref;
  ref.O.resize(q.rows(), v.cols());
  ref.lse.resize(q.rows());
  Eigen::RowVectorXd s(k.rows());
  for (int64_t r = 0; r < q.rows(); ++r) {
    s.noalias() = scale * (q.row(r) * k.transpose());
    for (int64_t c = 0; c < k.rows(); ++c)
      if (!reference_keeps(mask, r, c, q.rows(), k.rows())) s(c) = -std::numeric_limits<double>::infinity();
    const double mx = s.maxCoeff();
    if (mx == -std::numeric_limits<double>::infinity()) {  // no key kept: O = 0, lse = -inf
      ref.O.row(r).setZero();
      ref.lse(r) = mx;
      continue;
    }
    Eigen::RowVectorXd e = (s.array() - mx).exp().matrix();
    const double l = e.sum();
    if (dropout > 0)
      for (int64_t c = 0; c < e.size(); ++c)
        e(c) = dropout_keep(seed, 0, 0, uint32_t(r), uint32_t(c), dropout) ? e(c) / (1.0 - dropout) : 0.0;
    ref.O.row(r).noalias() = (e * v) / l;
    ref.lse(r) = mx + std::log(l);
  }
  return ref;
}

template <typename X, typename R>
static ErrorStats compare_impl(const X& x, const R& ref) {
  ErrorStats e;
  double ref_max = 0, sum_sq = 0;
  for (int64_t k = 0; k < ref.size(); ++k) {
    const double xv = double(x.data()[k]), rv = ref.data()[k];
    if (std::isinf(rv) && xv == rv) continue;  // -inf lse of a fully masked row, matched
    const double diff = std::abs(xv - rv);
    if (std::isnan(diff)) {
      e.max_abs = e.max_rel = std::numeric_limits<double>::infinity();
      e.nan_at = k;
      return e;
    }
    e.max_abs = std::max(e.max_abs, diff);
    sum_sq += diff * diff;
    if (std::isfinite(rv)) ref_max = std::max(ref_max, std::abs(rv));
  }
  e.max_rel = ref_max > 0 ? e.max_abs / ref_max : e.max_abs;
  e.rms = ref.size() > 0 ? std::sqrt(sum_sq / double(ref.size())) : 0.0;
  return e;
}

ErrorStats compare(const Mat& x, const MatD& ref) {
  if (x.rows() != ref.rows() || x.cols() != ref.cols())
    throw std::invalid_argument("compare: shape mismatch");
  return compare_impl(x, ref);
}

ErrorStats compare(const Vec& x, const VecD& ref) {
  if (x.size() != ref.size()) throw std::invalid_argument("compare: size mismatch");
  return compare_impl(x, ref);
}

}  // namespace flashstep
