#include "core/accuracy.h"

#include "core/run.h"
#include "core/schedule_registry.h"
#include "core/trace.h"

namespace flashstep {

std::optional<Reference> problem_reference(const Problem& p) {
  if (!reference_affordable(p.nq, p.nk, p.d)) return std::nullopt;
  return reference_attention(p.Q, p.K, p.V, p.scale, p.mask, p.dropout, p.seed);
}

ForwardAccuracy forward_accuracy(const Reference& ref, const Mat& O, const Vec& lse) {
  return {compare(O, ref.O), compare(lse, ref.lse)};
}

std::optional<std::vector<ForwardAccuracy>> forward_accuracies(const Problem& p,
                                                               const std::vector<EngineResult>& engines) {
  const std::optional<Reference> ref = problem_reference(p);
  if (!ref) return std::nullopt;
  std::vector<ForwardAccuracy> out;
  for (const EngineResult& e : engines) out.push_back(forward_accuracy(*ref, *e.O, *e.lse));
  return out;
}

namespace {

// The companion run of a 16-bit or FP8 problem (CompanionAccuracy), unrecorded; none for
// float32 and for the baseline itself.
std::optional<CompanionAccuracy> companion_accuracy(const Trace& t, const Reference& ref) {
  const Problem& p = t.problem;
  Problem c = p;
  if (p.dtype == Dtype::fp8) {  // the same schedule and inputs stored in bf16
    c.dtype = Dtype::bf16;
    c.p_dtype = Dtype::fp32;
    c.fp8_scale = Fp8Scale::none;
    c.rotate = false;
    c.bytes_per_elem = dtype_bytes(c.dtype);
  } else if (p.dtype != Dtype::fp32 && !schedule_info(p.schedule).baseline) {
    c.schedule = baseline_schedule().id;  // standard attention in the same storage type
  } else {
    return std::nullopt;
  }
  RunOptions opt;
  opt.record = false;
  return CompanionAccuracy{c.schedule, c.dtype, compare(run_problem(c, t.tiling, opt).O, ref.O)};
}

}  // namespace

Accuracy measure_accuracy(const Trace& t, bool companion, const Reference* ref) {
  const Problem& p = t.problem;
  Accuracy a;
  std::optional<Reference> own;
  if (!ref) {
    own = problem_reference(p);
    if (!own) return a;  // too large: not measured
    ref = &*own;
  }
  a.measured = true;
  a.forward = forward_accuracy(*ref, t.O, t.lse);
  if (t.has_backward) {
    const ReferenceGrad g = reference_backward(p.Q, p.K, p.V, t.dO, p.scale, p.mask, p.dropout, p.seed);
    a.backward = BackwardAccuracy{compare(t.dQ, g.dQ), compare(t.dK, g.dK), compare(t.dV, g.dV)};
  }
  if (companion) a.companion = companion_accuracy(t, *ref);
  return a;
}

Accuracy accuracy_of(const Trace& t, bool companion) {
  if (t.accuracy && (t.accuracy->companion || !companion)) return *t.accuracy;
  return measure_accuracy(t, companion);
}

}  // namespace flashstep
