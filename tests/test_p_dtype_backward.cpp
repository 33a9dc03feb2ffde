// --p-dtype in the backward: the CPU engine's emulation of a tensor-core backward kernel, which
// rounds P_ij (before dV += P^T dO) and dS_ij (before dQ += tau dS K, dK += tau dS^T Q) to the
// 16-bit type, and the componentwise bound of core/backward_bound.h that verify uses.
#include "core/backward.h"
#include "core/backward_bound.h"
#include "core/reference.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <random>

using namespace flashstep;

namespace {

using fstest::fresh_seed;

struct RoundedCase {
  int64_t nq, nk, d, br, bc;
  bool causal;
  int64_t kv_len;
};

// A problem whose Q, K, V are values of the type, and dO rounded the same way (the engine's
// HBM stores dO in the type; the bound must see the same dO).
Problem make_rounded(const RoundedCase& c, Dtype t, Dtype p_dtype, Schedule sched, uint64_t seed) {
  ProblemSpec s;
  s.nq = c.nq; s.nk = c.nk; s.d = c.d; s.M = 1 << 16; s.seed = seed; s.schedule = sched;
  s.br = c.br; s.bc = c.bc;
  s.options.dtype = t;
  s.options.p_dtype = p_dtype;
  s.options.mask.causal = c.causal;
  s.options.mask.kv_len = c.kv_len;
  Problem p = make_problem(s);
  for (Mat* m : {&p.Q, &p.K, &p.V}) round_in_place(t, m->data(), m->size());
  return p;
}

Mat rounded_grad_output(const Problem& p, Dtype t) {
  Mat dO = make_grad_output(p, p.pattern);
  round_in_place(t, dO.data(), dO.size());
  return dO;
}

Trace run_backward_of(const Problem& p, const Mat& dO, bool record) {
  RunOptions opt;
  opt.record = record;
  opt.dO = &dO;
  return run_problem(p, make_tiling(p), opt);
}

// The trace's last recorded step of pseudocode line `line` (with one Q block and one K/V block,
// its only one), or nullptr.
const Step* last_step(const Trace& tr, Line line) {
  const Step* found = nullptr;
  for (const Step& s : tr.steps)
    if (s.line == line) found = &s;
  return found;
}

}  // namespace

TEST_CASE("p_dtype backward: P and dS are rounded exactly where the kernel rounds them", "[p_dtype][backward]") {
  const auto t = GENERATE(Dtype::bf16, Dtype::fp16);
  const uint64_t seed = fresh_seed();
  CAPTURE(dtype_name(t), seed);
  // One Q block and one K/V block: the recorded tiles are whole matrices.
  const RoundedCase c{23, 37, 16, 23, 37, false, -1};
  const Problem p = make_rounded(c, t, t, Schedule::fa2, seed);
  const Mat dO = rounded_grad_output(p, t);
  const Trace tr = run_backward_of(p, dO, true);
  const Step *P = last_step(tr, Line::FA2B_L11), *dV = last_step(tr, Line::FA2B_L12);
  const Step *dP = last_step(tr, Line::FA2B_L13), *dS = last_step(tr, Line::FA2B_L14);
  const Step* D = last_step(tr, Line::FA2B_L4);
  REQUIRE((P && dV && dP && dS && D));
  // P_ij stays float32 in the trace (dS is computed from it) ...
  int64_t p_off_grid = 0;
  for (int64_t k = 0; k < P->tile.size(); ++k) p_off_grid += round_to(t, P->tile.data()[k]) != P->tile.data()[k];
  CHECK(p_off_grid > 0);
  // ... but dV_j = round(P_ij)^T dO_i (to float32 summation order), not P_ij^T dO_i.
  Mat Pr = P->tile;
  round_in_place(t, Pr.data(), Pr.size());
  const Mat want_dV = Pr.transpose() * dO, unrounded_dV = P->tile.transpose() * dO;
  const double dv_size = want_dV.cwiseAbs().maxCoeff();
  CHECK((dV->tile - want_dV).cwiseAbs().maxCoeff() <= 1e-6 * dv_size);
  CHECK((dV->tile - unrounded_dV).cwiseAbs().maxCoeff() > 1e-3 * type_unit_roundoff(t) * dv_size);
  // dS_ij = round(P o (dP - D)), computed from the float32 P, bit for bit.
  Mat want_dS(c.nq, c.nk);
  for (int64_t r = 0; r < c.nq; ++r)
    for (int64_t k = 0; k < c.nk; ++k)
      want_dS(r, k) = round_to(t, P->tile(r, k) * (dP->tile(r, k) - D->D_i(r)));
  CHECK((dS->tile - want_dS).cwiseAbs().maxCoeff() == 0.0f);
  // dQ = tau round(dS) K (float32 in HBM, not rounded), dK = round_t(tau round(dS)^T Q).
  const Mat want_dQ = p.scale * (want_dS * p.K);
  CHECK((tr.dQ - want_dQ).cwiseAbs().maxCoeff() <= 1e-6 * want_dQ.cwiseAbs().maxCoeff());
}

TEST_CASE("p_dtype backward: gradients move by about the rounding, no more", "[p_dtype][backward]") {
  const auto t = GENERATE(Dtype::bf16, Dtype::fp16);
  const auto sched = GENERATE(Schedule::fa2, Schedule::fa1);
  const uint64_t seed = fresh_seed();
  CAPTURE(dtype_name(t), schedule_name(sched), seed);
  const RoundedCase c{41, 29, 16, 16, 12, false, -1};
  const Problem plain = make_rounded(c, t, Dtype::fp32, sched, seed);
  const Problem emul = make_rounded(c, t, t, sched, seed);
  const Mat dO = rounded_grad_output(plain, t);
  const Trace a = run_backward_of(plain, dO, false), b = run_backward_of(emul, dO, false);
  const double u = type_unit_roundoff(t);
  const double dv_moved = (a.dV - b.dV).cwiseAbs().maxCoeff(), dv_size = a.dV.cwiseAbs().maxCoeff();
  const double dq_moved = (a.dQ - b.dQ).cwiseAbs().maxCoeff(), dq_size = a.dQ.cwiseAbs().maxCoeff();
  CAPTURE(dv_moved, dv_size, dq_moved, dq_size);
  CHECK(dv_moved > 1e-3 * u * dv_size);  // the rounding happened, at the type's scale
  CHECK(dq_moved > 1e-3 * u * dq_size);
  CHECK(dv_moved < 8 * u * dv_size * std::max<double>(1, double(c.nq)));
}

TEST_CASE("p_dtype backward: fa2 and fa1 within the derived bound of float64", "[p_dtype][backward]") {
  const auto t = GENERATE(Dtype::bf16, Dtype::fp16);
  const auto sched = GENERATE(Schedule::fa2, Schedule::fa1);
  const RoundedCase c = GENERATE(RoundedCase{97, 131, 32, 32, 24, false, -1},   // ragged blocks, Nq < Nk
                          RoundedCase{131, 97, 32, 16, 32, true, -1},    // causal, Nq > Nk: rows with no key
                          RoundedCase{60, 75, 16, 16, 16, true, 50},     // causal with key padding
                          RoundedCase{1, 1, 8, 1, 1, false, -1});
  const uint64_t seed = fresh_seed();
  CAPTURE(dtype_name(t), schedule_name(sched), c.nq, c.nk, c.causal, c.kv_len, seed);
  const Problem p = make_rounded(c, t, t, sched, seed);
  const Mat dO = rounded_grad_output(p, t);
  const Trace tr = run_backward_of(p, dO, false);
  const GradBound b = rounded_backward_bound(p.Q, p.K, p.V, dO, p.scale, p.mask, t);
  const BoundCheck q = check_within(tr.dQ, b.dQ_exact, b.dQ, 1.0), k = check_within(tr.dK, b.dK_exact, b.dK, 1.0),
                   v = check_within(tr.dV, b.dV_exact, b.dV, 1.0);
  CAPTURE(q.worst_ratio, k.worst_ratio, v.worst_ratio);
  CHECK(q.over == 0);
  CHECK(k.over == 0);
  CHECK(v.over == 0);
  // Not vacuous: the worst element uses a fair part of its bound (the rounding is of its size).
  if (c.nq > 1) CHECK(std::max({q.worst_ratio, k.worst_ratio, v.worst_ratio}) > 0.02);
  // The bound agrees with the float64 reference the other tests use.
  const ReferenceGrad ref = reference_backward(p.Q, p.K, p.V, dO, p.scale, p.mask, 0, p.seed);
  CHECK((ref.dV - b.dV_exact).cwiseAbs().maxCoeff() <= 1e-9 * (1 + ref.dV.cwiseAbs().maxCoeff()));
  CHECK((ref.dQ - b.dQ_exact).cwiseAbs().maxCoeff() <= 1e-9 * (1 + ref.dQ.cwiseAbs().maxCoeff()));
}

TEST_CASE("p_dtype backward: the bound check fails on a gradient off by a few bounds", "[p_dtype][backward]") {
  const uint64_t seed = fresh_seed();
  const RoundedCase c{40, 50, 16, 16, 16, true, -1};
  const Problem p = make_rounded(c, Dtype::bf16, Dtype::bf16, Schedule::fa2, seed);
  const Mat dO = rounded_grad_output(p, Dtype::bf16);
  const Trace tr = run_backward_of(p, dO, false);
  const GradBound b = rounded_backward_bound(p.Q, p.K, p.V, dO, p.scale, p.mask, Dtype::bf16);
  Mat bad = tr.dK;
  bad(7, 3) += float(3 * b.dK(7, 3) + 1e-6);
  CHECK(check_within(bad, b.dK_exact, b.dK, 1.0).over >= 1);
  bad(7, 3) = NAN;
  CHECK(check_within(bad, b.dK_exact, b.dK, 1.0).over >= 1);
  // Rows that see no key (bottom-right causal with Nq > Nk) have an exact zero bound and gradient.
  const RoundedCase e{30, 10, 8, 8, 8, true, -1};
  const Problem q = make_rounded(e, Dtype::fp16, Dtype::fp16, Schedule::fa2, seed);
  const Mat dOq = rounded_grad_output(q, Dtype::fp16);
  const Trace tq = run_backward_of(q, dOq, false);
  const GradBound bq = rounded_backward_bound(q.Q, q.K, q.V, dOq, q.scale, q.mask, Dtype::fp16);
  CHECK(bq.dQ.row(0).cwiseAbs().maxCoeff() == 0.0);
  CHECK(tq.dQ.row(0).cwiseAbs().maxCoeff() == 0.0f);
}

TEST_CASE("p_dtype backward: dS from the rounded P within the bound that counts that rounding", "[p_dtype][backward]") {
  // A backward that computes dS = P~ o (dP - D) from P~, P as rounded for the dV product (the
  // ladder's configuration 46 keeps no float32 P beside dP), worked out here in float64 with the
  // roundings of the type put in by hand: P~ and dS~ rounded, everything else exact.
  const Dtype t = GENERATE(Dtype::bf16, Dtype::fp16);
  const uint64_t seed = fresh_seed();
  CAPTURE(dtype_name(t), seed);
  const RoundedCase c{45, 70, 16, 16, 16, true, -1};
  const Problem p = make_rounded(c, t, t, Schedule::fa2, seed);
  const Mat dO = rounded_grad_output(p, t);
  const int64_t nq = p.Q.rows(), nk = p.K.rows(), d = p.Q.cols();
  const double tau = p.scale;
  auto rounded = [t](double x) {
    float f = float(x);
    round_in_place(t, &f, 1);
    return double(f);
  };
  MatD dQ = MatD::Zero(nq, d), dK = MatD::Zero(nk, d), dV = MatD::Zero(nk, d);
  for (int64_t r = 0; r < nq; ++r) {
    std::vector<double> s(size_t(nk), -INFINITY);
    double mx = -INFINITY;
    for (int64_t k = 0; k < nk; ++k)
      if (p.mask.allowed(r, k, nk)) {
        double dot = 0;
        for (int64_t e = 0; e < d; ++e) dot += double(p.Q(r, e)) * double(p.K(k, e));
        s[size_t(k)] = tau * dot;
        mx = std::max(mx, s[size_t(k)]);
      }
    if (mx == -INFINITY) continue;  // no key: zero gradients
    double sum = 0;
    for (double& x : s) sum += x == -INFINITY ? 0.0 : std::exp(x - mx);
    std::vector<double> P(static_cast<size_t>(nk)), O(static_cast<size_t>(d), 0.0);
    for (int64_t k = 0; k < nk; ++k) {
      P[size_t(k)] = s[size_t(k)] == -INFINITY ? 0.0 : std::exp(s[size_t(k)] - mx) / sum;
      for (int64_t e = 0; e < d; ++e) O[size_t(e)] += P[size_t(k)] * double(p.V(k, e));
    }
    double D = 0;
    for (int64_t e = 0; e < d; ++e) D += double(dO(r, e)) * O[size_t(e)];
    for (int64_t k = 0; k < nk; ++k) {
      const double pr = rounded(P[size_t(k)]);
      double dp = 0;
      for (int64_t e = 0; e < d; ++e) dp += double(dO(r, e)) * double(p.V(k, e));
      const double ds = rounded(pr * (dp - D));
      for (int64_t e = 0; e < d; ++e) {
        dV(k, e) += pr * double(dO(r, e));
        dK(k, e) += tau * ds * double(p.Q(r, e));
        dQ(r, e) += tau * ds * double(p.K(k, e));
      }
    }
  }
  const GradBound plain = rounded_backward_bound(p.Q, p.K, p.V, dO, p.scale, p.mask, t);
  const GradBound b = rounded_backward_bound(p.Q, p.K, p.V, dO, p.scale, p.mask, t, true);
  const auto check = [](const MatD& x, const MatD& ref, const MatD& bound) {
    int64_t over = 0;
    for (int64_t e = 0; e < x.size(); ++e) over += !(std::abs(x.data()[e] - ref.data()[e]) <= bound.data()[e]);
    return over;
  };
  CHECK(check(dQ, b.dQ_exact, b.dQ) == 0);
  CHECK(check(dK, b.dK_exact, b.dK) == 0);
  CHECK(check(dV, b.dV_exact, b.dV) == 0);
  // Not vacuous: dK's worst element uses a fair part of its bound.
  double worst = 0;
  for (int64_t e = 0; e < dK.size(); ++e)
    if (b.dK.data()[e] > 0) worst = std::max(worst, std::abs(dK.data()[e] - b.dK_exact.data()[e]) / b.dK.data()[e]);
  CAPTURE(worst);
  CHECK(worst > 0.02);
  // The extra term only adds, and only to dS's consumers: dK and dQ grow, dV does not move.
  CHECK(((b.dK - plain.dK).array() >= 0).all());
  CHECK(((b.dQ - plain.dQ).array() >= 0).all());
  CHECK((b.dK - plain.dK).maxCoeff() > 0);
  CHECK((b.dV - plain.dV).cwiseAbs().maxCoeff() == 0);
}

TEST_CASE("p_dtype backward: ds_from_rounded_p takes dS from P as rounded for dV's product", "[p_dtype][backward]") {
  // The CPU engine's emulation of backward configuration 46: FA2b L14 from P~ (the L12 operand).
  const auto t = GENERATE(Dtype::bf16, Dtype::fp16);
  const uint64_t seed = fresh_seed();
  CAPTURE(dtype_name(t), seed);
  const RoundedCase c{23, 37, 16, 23, 37, false, -1};  // one Q block, one K/V block
  Problem p = make_rounded(c, t, t, Schedule::fa2, seed);
  const Mat dO = rounded_grad_output(p, t);
  const Trace plain = run_backward_of(p, dO, true);
  p.ds_from_rounded_p = true;
  const Trace tr = run_backward_of(p, dO, true);
  const Step *P = last_step(tr, Line::FA2B_L11), *dP = last_step(tr, Line::FA2B_L13);
  const Step *dS = last_step(tr, Line::FA2B_L14), *D = last_step(tr, Line::FA2B_L4);
  const Step* dS_plain = last_step(plain, Line::FA2B_L14);
  REQUIRE((P && dP && dS && D && dS_plain));
  // dS_ij = round(round(P_ij) o (dP_ij - D_i)), bit for bit; P itself stays float32 in the trace.
  Mat want(c.nq, c.nk);
  for (int64_t r = 0; r < c.nq; ++r)
    for (int64_t k = 0; k < c.nk; ++k)
      want(r, k) = round_to(t, round_to(t, P->tile(r, k)) * (dP->tile(r, k) - D->D_i(r)));
  CHECK((dS->tile - want).cwiseAbs().maxCoeff() == 0.0f);
  // Not the engine's usual dS: some element moves by the extra rounding.
  CHECK((dS->tile - dS_plain->tile).cwiseAbs().maxCoeff() > 0.0f);
  // dV does not depend on it; dK does.
  CHECK((tr.dV - plain.dV).cwiseAbs().maxCoeff() == 0.0f);
  CHECK((tr.dK - plain.dK).cwiseAbs().maxCoeff() > 0.0f);
  // The emulation lies within the bound that counts that rounding, over several blocks.
  const RoundedCase m{45, 70, 16, 16, 16, true, -1};
  Problem q = make_rounded(m, t, t, Schedule::fa2, seed);
  q.ds_from_rounded_p = true;
  const Mat dOq = rounded_grad_output(q, t);
  const Trace e = run_backward_of(q, dOq, false);
  const GradBound b = rounded_backward_bound(q.Q, q.K, q.V, dOq, q.scale, q.mask, t, true);
  for (const auto& [x, ref, bound] : {std::tie(e.dQ, b.dQ_exact, b.dQ), std::tie(e.dK, b.dK_exact, b.dK),
                                      std::tie(e.dV, b.dV_exact, b.dV)}) {
    int64_t over = 0;
    for (int64_t k = 0; k < x.size(); ++k)
      over += !(std::abs(double(x.data()[k]) - ref.data()[k]) <= bound.data()[k]);
    CHECK(over == 0);
  }
}
