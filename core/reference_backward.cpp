// The float64 reference for the backward pass, beside reference.cpp's forward: every backward
// schedule (and the CUDA kernels) is tested against it. Obviously correct rather than fast:
// one query row at a time, straight from the chain rule through softmax, in double precision.
#include "core/philox.h"
#include "core/reference.h"

#include <cmath>
#include <limits>

namespace flashstep {

ReferenceGrad reference_backward(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO,
                                 double scale, const Mask& mask, float dropout, uint64_t seed) {
  const MatD q = Q.cast<double>(), k = K.cast<double>(), v = V.cast<double>(), dout = dO.cast<double>();
  const int64_t nk = k.rows();
  ReferenceGrad g;
  g.dQ = MatD::Zero(q.rows(), q.cols());
  g.dK = MatD::Zero(nk, k.cols());
  g.dV = MatD::Zero(nk, v.cols());
  Eigen::RowVectorXd s(nk), z(nk);
  for (int64_t r = 0; r < q.rows(); ++r) {
    s.noalias() = scale * (q.row(r) * k.transpose());
    for (int64_t c = 0; c < nk; ++c)
      if (!reference_keeps(mask, r, c, q.rows(), nk)) s(c) = -std::numeric_limits<double>::infinity();
    const double mx = s.maxCoeff();
    if (mx == -std::numeric_limits<double>::infinity()) continue;  // no key kept: zero gradient
    const Eigen::RowVectorXd e = (s.array() - mx).exp().matrix();
    const Eigen::RowVectorXd P = e / e.sum();
    for (int64_t c = 0; c < nk; ++c)  // Z: 1/(1-p) where kept, 0 where dropped
      z(c) = dropout > 0 ? (dropout_keep(seed, 0, 0, uint32_t(r), uint32_t(c), dropout) ? 1.0 / (1.0 - dropout) : 0.0)
                         : 1.0;
    // O_r = (P o Z) V, so dV += (P o Z)^T dO_r and dP = (dO_r V^T) o Z
    g.dV.noalias() += (P.array() * z.array()).matrix().transpose() * dout.row(r);
    const Eigen::RowVectorXd dP = ((dout.row(r) * v.transpose()).array() * z.array()).matrix();
    // softmax's Jacobian: dS = P o (dP - <P, dP>)
    const Eigen::RowVectorXd dS = (P.array() * (dP.array() - P.dot(dP))).matrix();
    g.dQ.row(r).noalias() = scale * (dS * k);
    g.dK.noalias() += scale * dS.transpose() * q.row(r);
  }
  return g;
}

}  // namespace flashstep
