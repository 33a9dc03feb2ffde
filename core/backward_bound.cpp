// The componentwise error bound of a backward pass that rounds P and dS to a 16-bit type before
// its matmuls (--p-dtype; the tensor-core kernel of gpu/fa2_bwd_tc.cu), evaluated in float64
// from the exact P, dP, dS. The derivation is in docs/backward.md, "On tensor cores: the error
// bound"; the names below are the ones used there.
#include "core/backward_bound.h"

#include <cmath>
#include <limits>
#include <vector>

namespace flashstep {

// Half the spacing of the type's subnormals: below the smallest normal, rounding is off by up to
// this much whatever the value's size (fp16's normals stop at 6.1e-5: a P_ij of 1e-6 there is
// rounded to a few percent, not to u).
static double subnormal_half_spacing(Dtype t) {
  switch (t) {
    case Dtype::fp16: return std::ldexp(1.0, -25);
    case Dtype::bf16: return std::ldexp(1.0, -134);
    case Dtype::fp8: return std::ldexp(1.0, -10);  // e4m3: subnormal spacing 2^-9
    case Dtype::fp32: break;
  }
  return std::ldexp(1.0, -150);
}

double type_unit_roundoff(Dtype t) {
  switch (t) {
    case Dtype::bf16: return std::ldexp(1.0, -8);
    case Dtype::fp16: return std::ldexp(1.0, -11);
    case Dtype::fp8: return std::ldexp(1.0, -4);  // e4m3: 3 mantissa bits
    case Dtype::fp32: break;
  }
  return std::ldexp(1.0, -24);
}

GradBound rounded_backward_bound(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO, double tau,
                                 const Mask& mask, Dtype type, bool p_rounded_in_ds) {
  const MatD q = Q.cast<double>(), k = K.cast<double>(), v = V.cast<double>(), dout = dO.cast<double>();
  const int64_t nq = q.rows(), nk = k.rows(), d = q.cols();
  const double u = type_unit_roundoff(type), eps = std::ldexp(1.0, -24);
  const double tiny = subnormal_half_spacing(type);
  // The kernel's exp2 flushes float32 subnormals to 0: an absolute error below the smallest normal.
  const double p_flush = std::ldexp(1.0, -126);
  // A float32 dot product of length d (S, dP, D). Twice the round-to-nearest bound: the tensor
  // cores' accumulation inside one MMA is not IEEE round-to-nearest.
  const double g_dot = 2.0 * double(d + 2) * eps;
  const double g_exp = 8 * eps;              // exp's and the product S - L's relative rounding
  const MatD absK = k.cwiseAbs(), absQ = q.cwiseAbs(), absV = v.cwiseAbs(), absdO = dout.cwiseAbs();
  // The float32 sums of the matmuls: Nq terms for dK and dV, Nk for dQ.
  const double g_q = double(nq + 2) * eps, g_k = double(nk + 2) * eps;
  GradBound b;
  b.dV = MatD::Zero(nk, d);
  b.dK = MatD::Zero(nk, d);
  b.dQ = MatD::Zero(nq, d);
  b.dV_exact = MatD::Zero(nk, d);
  b.dK_exact = MatD::Zero(nk, d);
  b.dQ_exact = MatD::Zero(nq, d);
  // Row by row (rank-one updates of the Nk x d sums): nothing of size Nq x Nk is kept.
  Eigen::RowVectorXd s(nk), Pv(nk), E(nk), absdS(nk);
  std::vector<bool> row_kept(size_t(nq), false), key_kept(size_t(nk), false);
  for (int64_t r = 0; r < nq; ++r) {
    s.noalias() = tau * (q.row(r) * k.transpose());
    for (int64_t c = 0; c < nk; ++c)
      if (!mask.allowed(r, c, nk)) s(c) = -std::numeric_limits<double>::infinity();
    const double mx = s.maxCoeff();
    if (mx == -std::numeric_limits<double>::infinity()) continue;  // no key kept: exact zeros
    row_kept[size_t(r)] = true;
    // std::exp, not Eigen's vectorised exp, which clamps its argument and gives masked keys a
    // P of about 1e-308 instead of 0.
    const Eigen::RowVectorXd e = (s.array() - mx).unaryExpr([](double x) { return std::exp(x); }).matrix();
    const double sum = e.sum();
    const Eigen::RowVectorXd P = e / sum;
    const double L = mx + std::log(sum);
    const Eigen::RowVectorXd O = P * v, PabsV = P * absV;
    const Eigen::RowVectorXd dP = dout.row(r) * v.transpose();
    const double D = dout.row(r).dot(O);
    const double absD = absdO.row(r).dot(O.cwiseAbs());
    // D from an O rounded twice in the forward (P~ and O): |O~ - O| <= 2u (P|V|) per element.
    const double w = 2 * u * absdO.row(r).dot(PabsV) + g_dot * absD;
    const Eigen::RowVectorXd absdP_dot = absdO.row(r) * absV.transpose();  // |dO_r| . |V_c|
    const Eigen::RowVectorXd absS_dot = tau * (absQ.row(r) * absK.transpose());  // tau |Q_r| . |K_c|
    const Eigen::RowVectorXd dS = (P.array() * (dP.array() - D)).matrix();
    for (int64_t c = 0; c < nk; ++c) {
      // P recomputed in float32: S's dot product, exp and S - L, and L's own error (l summed
      // over Nk keys). An absolute error x in S - L is a relative error e^x - 1 ~ x in P.
      const double p_rel =
          P(c) == 0 ? 0.0 : g_dot * absS_dot(c) + g_exp * (std::abs(s(c)) + std::abs(L) + 1) + g_k;
      if (P(c) == 0) {  // a masked key: exactly 0 on every side
        Pv(c) = E(c) = absdS(c) = 0;
        continue;
      }
      key_kept[size_t(c)] = true;
      // P as the dV product takes it: rounded to the type (relative u, or the subnormal
      // spacing), float32's own error and flush to zero.
      Pv(c) = P(c) * (u + p_rel + g_q) + tiny + p_flush;
      // dS as the dQ, dK products take it: rounded once, plus what D, dP and P carry in.
      const double dP_minus_D = std::abs(dP(c) - D);
      E(c) = u * std::abs(dS(c)) + tiny + P(c) * (w + g_dot * absdP_dot(c)) + (p_rel * P(c) + p_flush) * dP_minus_D;
      // P~ in place of P (p_rounded_in_ds): one more rounding of P, relative u or the subnormal spacing.
      if (p_rounded_in_ds) E(c) += (u * P(c) + tiny) * dP_minus_D;
      absdS(c) = std::abs(dS(c));
    }
    b.dV.noalias() += Pv.transpose() * absdO.row(r);
    b.dK.noalias() += tau * (E + g_q * absdS).transpose() * absQ.row(r);
    b.dQ.row(r).noalias() = tau * ((E + g_k * absdS) * absK);
    b.dV_exact.noalias() += P.transpose() * dout.row(r);
    b.dQ_exact.row(r).noalias() = tau * (dS * k);
    b.dK_exact.noalias() += tau * dS.transpose() * q.row(r);
  }
  // dK and dV are stored in the type once: u of their size (or the subnormal spacing); rows and
  // keys nothing reaches stay exactly 0.
  b.dV += u * b.dV_exact.cwiseAbs();
  b.dK += u * b.dK_exact.cwiseAbs();
  b.dQ_store = u * b.dQ_exact.cwiseAbs();
  for (int64_t c = 0; c < nk; ++c)
    if (key_kept[size_t(c)]) {
      b.dV.row(c).array() += tiny;
      b.dK.row(c).array() += tiny;
    }
  for (int64_t r = 0; r < nq; ++r)
    if (row_kept[size_t(r)]) b.dQ_store.row(r).array() += tiny;
  return b;
}

BoundCheck check_within(const Mat& x, const MatD& ref, const MatD& bound, double times, const MatD* extra) {
  BoundCheck c;
  for (int64_t r = 0; r < ref.rows(); ++r)
    for (int64_t k = 0; k < ref.cols(); ++k) {
      const double err = std::abs(double(x(r, k)) - ref(r, k));
      const double lim = times * bound(r, k) + (extra ? (*extra)(r, k) : 0.0);
      c.max_abs = std::max(c.max_abs, err);
      if (!(err <= lim)) ++c.over;  // NaN counts as over
      if (lim > 0) c.worst_ratio = std::max(c.worst_ratio, err / lim);
      else if (err > 0) c.worst_ratio = std::numeric_limits<double>::infinity();
    }
  return c;
}

}  // namespace flashstep
