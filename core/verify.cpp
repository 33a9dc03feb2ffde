#include "core/verify.h"

#include "core/schedules/decode/decode.h"
#include "core/trace.h"

#include <algorithm>
#include <cmath>

namespace flashstep {

namespace {

Eigen::Map<const Mat> rows_of(const float* x, int64_t rows, int64_t cols) { return {x, Eigen::Index(rows), Eigen::Index(cols)}; }
Vec vec_of(const float* x, int64_t n) { return Eigen::Map<const Vec>(x, n); }
ErrorStats diff(const Mat& x, const Mat& cpu) { return compare(x, cpu.cast<double>().eval()); }
ErrorStats diff(const Vec& x, const Vec& cpu) { return compare(x, cpu.cast<double>().eval()); }

ForwardAccuracy engine_accuracy(const Reference& ref, const Problem& p, const EngineOutput& e) {
  return forward_accuracy(ref, rows_of(e.O, p.nq, p.d), vec_of(e.lse, p.nq));
}

}  // namespace

ForwardCheck final_check(const std::string& name, const Trace& cpu, const EngineOutput& e, double o_tol,
                         double lse_tol) {
  const Problem& p = cpu.problem;
  ForwardCheck c{name, {diff(rows_of(e.O, p.nq, p.d), cpu.O), diff(vec_of(e.lse, p.nq), cpu.lse)}, o_tol, lse_tol};
  return c;
}

int64_t identical_elements(const Trace& cpu, const float* O) {
  int64_t same = 0;
  for (int64_t k = 0; k < cpu.O.size(); ++k) same += O[k] == cpu.O.data()[k];
  return same;
}

bool Float64Checks::pass() const {
  return std::all_of(checks.begin(), checks.end(), [](const ForwardCheck& c) { return c.pass(); });
}

Float64Checks float64_checks(const Trace& cpu, const std::string& cpu_name, size_t cpu_at,
                             const std::vector<EngineOutput>& engines) {
  const Problem& p = cpu.problem;
  Float64Checks out;
  const std::optional<Reference> ref = problem_reference(p);
  if (!ref) return out;
  out.measured = true;
  const bool judged = p.dtype == Dtype::fp32;  // 16-bit errors are the storage type's: reported
  for (size_t k = 0; k <= engines.size(); ++k) {
    if (k == cpu_at)  // the figures every reader of the run shows (core/accuracy.h)
      out.checks.push_back({cpu_name + " vs float64:", measure_accuracy(cpu, false, &*ref).forward, kFloat64Tol,
                            kFloat64Tol, judged});
    if (k < engines.size()) {
      const EngineOutput& e = engines[k];
      out.checks.push_back({e.name + " vs float64:", engine_accuracy(*ref, p, e), kFloat64Tol, kFloat64Tol,
                            judged || e.always_judged});
    }
  }
  return out;
}

std::vector<SplitCheck> decode_split_checks(const Trace& cpu, const float* O_part, const float* lse_part,
                                            double tol) {
  const Problem& p = cpu.problem;
  const Tiling& t = cpu.tiling;
  Cursor c(cpu);
  c.run_to_end();
  const Mat& Op = c.hbm(Tensor::Op);
  const Mat& Lp = c.hbm(Tensor::Lp);
  std::vector<SplitCheck> out;
  for (int64_t s = 0; s < t.S; ++s) {
    const SplitRange J = split_range(t.Tc, t.S, s);
    SplitCheck k;
    k.split = s;
    k.first_key = J.j0 * t.Bc;
    k.last_key = std::min(J.j1 * t.Bc, p.nk) - 1;
    k.O = diff(Mat(rows_of(O_part + s * p.nq * p.d, p.nq, p.d)), Mat(Op.middleRows(s * p.nq, p.nq)));
    k.lse = diff(vec_of(lse_part + s * p.nq, p.nq), Vec(Lp.middleRows(s * p.nq, p.nq).col(0)));
    k.pass = k.O.max_rel <= tol && k.lse.max_rel <= tol;
    out.push_back(k);
  }
  return out;
}

TensorCoreFloat64Check tensor_core_float64_check(const Trace& cpu, const float* flash_O, const float* flash_lse,
                                                 const float* standard_O, const float* standard_lse) {
  const Problem& p = cpu.problem;
  TensorCoreFloat64Check c;
  const std::optional<Reference> ref = problem_reference(p);
  if (!ref) return c;
  c.measured = true;
  const ForwardAccuracy f = engine_accuracy(*ref, p, {"", flash_O, flash_lse});
  const ForwardAccuracy s = engine_accuracy(*ref, p, {"", standard_O, standard_lse});
  c.flash_O = f.O;
  c.flash_lse = f.lse;
  c.standard_O = s.O;
  c.standard_lse = s.lse;
  c.cpu_O = measure_accuracy(cpu, false, &*ref).forward.O;
  c.allowed = 2 * s.O.max_abs + 1e-6 * double(p.V.cwiseAbs().maxCoeff());
  return c;
}

GradScale grad_scale(const Problem& p, const Mat& dO, const MatD& dQ, const MatD& dK, const MatD& dV) {
  const double mdo = dO.cwiseAbs().maxCoeff(), mv = p.V.cwiseAbs().maxCoeff();
  return {std::max(dQ.cwiseAbs().maxCoeff(), grad_scale_floor(p.scale, p.d, mdo, mv, p.K.cwiseAbs().maxCoeff())),
          std::max(dK.cwiseAbs().maxCoeff(), grad_scale_floor(p.scale, p.d, mdo, mv, p.Q.cwiseAbs().maxCoeff())),
          std::max(dV.cwiseAbs().maxCoeff(), 1e-300)};
}

double GradErr::worst() const { return std::max({dq, dk, dv}); }

GradErr grad_err(const Mat& dq, const Mat& dk, const Mat& dv, const MatD& rq, const MatD& rk, const MatD& rv,
                 const GradScale& sc) {
  return {compare(dq, rq).max_abs / sc.dq, compare(dk, rk).max_abs / sc.dk, compare(dv, rv).max_abs / sc.dv};
}

namespace {

std::optional<ReferenceGrad> grad_reference(const Trace& cpu) {
  const Problem& p = cpu.problem;
  if (!reference_affordable(p.nq, p.nk, p.d)) return std::nullopt;
  return reference_backward(p.Q, p.K, p.V, cpu.dO, p.scale, p.mask, p.dropout, p.seed);
}

}  // namespace

GradFloat64Checks grad_float64_checks(const Trace& cpu, const Mat& dQ, const Mat& dK, const Mat& dV) {
  GradFloat64Checks c;
  const std::optional<ReferenceGrad> ref = grad_reference(cpu);
  if (!ref) return c;
  c.measured = true;
  const GradScale rs = grad_scale(cpu.problem, cpu.dO, ref->dQ, ref->dK, ref->dV);
  c.gpu = grad_err(dQ, dK, dV, ref->dQ, ref->dK, ref->dV, rs);
  c.cpu = grad_err(cpu.dQ, cpu.dK, cpu.dV, ref->dQ, ref->dK, ref->dV, rs);
  return c;
}

GradNormwise grad_normwise(const Trace& cpu, const Mat& dQ, const Mat& dK, const Mat& dV) {
  GradNormwise c;
  const std::optional<ReferenceGrad> ref = grad_reference(cpu);
  if (!ref) return c;
  c.measured = true;
  const GradScale rs{std::max(ref->dQ.cwiseAbs().maxCoeff(), 1e-300), std::max(ref->dK.cwiseAbs().maxCoeff(), 1e-300),
                     std::max(ref->dV.cwiseAbs().maxCoeff(), 1e-300)};
  c.gpu = grad_err(dQ, dK, dV, ref->dQ, ref->dK, ref->dV, rs);
  c.cpu = grad_err(cpu.dQ, cpu.dK, cpu.dV, ref->dQ, ref->dK, ref->dV, rs);
  return c;
}

Fp8ForwardCheck fp8_forward_check(const Trace& cpu, const float* O, const float* lse, const Fp8Accumulation& acc,
                                  double dS, double acc_share) {
  const Problem& p = cpu.problem;
  const int64_t nq = p.nq, d = p.d;
  Fp8ForwardCheck c;
  c.nan = std::any_of(O, O + nq * d, [](float x) { return std::isnan(x); }) ||
          std::any_of(lse, lse + nq, [](float x) { return std::isnan(x); });
  const Mat Og = Eigen::Map<const Mat>(O, nq, d);
  c.O = compare(Og, cpu.O.cast<double>().eval());
  c.lse = compare(Eigen::Map<const Vec>(lse, nq).eval(), cpu.lse.cast<double>().eval());
  double lse_scale = 1;
  for (int64_t r = 0; r < cpu.lse.size(); ++r)
    if (std::isfinite(cpu.lse(r))) lse_scale = std::max(lse_scale, double(std::abs(cpu.lse(r))));
  // 4 dS: dS is the accumulation model's bound on a score's error (core/fp8_bound.h: u_acc = 2^-13 per
  // k32 instruction, an estimate of Hopper's FP8 accumulation), not a proven one; the largest
  // |lse_gpu - lse_cpu| / dS measured over the [fp8] tests is 2.03 (d = 128, outlier rows, per-tensor
  // scales: one product dominates a k32 step), so the check allows twice that. A wrong row, mask or
  // scale moves lse by far more (dS is 0.002-0.07 on the verifies' inputs).
  c.lse_tol = 4 * dS + 1e-5 * lse_scale;
  for (int64_t k = 0; k < nq * d; ++k) c.identical += O[k] == cpu.O.data()[k];
  if (!reference_affordable(p.nq, p.nk, p.d)) return c;
  c.measured = true;
  const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale, p.mask, p.dropout, p.seed);
  c.gpu_O = compare(Og, ref.O);
  c.cpu_O = compare(cpu.O, ref.O);
  c.allowed = 2 * c.cpu_O.max_abs + acc_share;
  c.gpu_ratio = fp8_bound_ratio(p, cpu.tiling, Og, ref.O, acc);
  c.cpu_ratio = fp8_bound_ratio(p, cpu.tiling, cpu.O, ref.O);
  return c;
}

}  // namespace flashstep
