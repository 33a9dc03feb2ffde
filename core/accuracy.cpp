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

// The FP8 storages beside the run's own (Fp8StorageAccuracy), each run unrecorded on the same
// inputs and tiles; the run's own choice keeps its figures.
std::vector<Fp8StorageAccuracy> fp8_storage_accuracies(const Trace& t, const Reference& ref, const ErrorStats& own_o) {
  const Problem& p = t.problem;
  const Fp8Scale own_scale = p.fp8_scale == Fp8Scale::per_block ? Fp8Scale::per_block : Fp8Scale::per_tensor;
  const bool d_pow2 = p.d > 0 && (p.d & (p.d - 1)) == 0;  // the rotation's Hadamard matrix needs it
  std::vector<Fp8StorageAccuracy> out;
  // The table's three rows, and the run's own where it is none of them (per tensor, rotated).
  for (const auto& [scale, rotate] : {std::pair{Fp8Scale::per_tensor, false}, std::pair{Fp8Scale::per_tensor, true},
                                      std::pair{Fp8Scale::per_block, false}, std::pair{Fp8Scale::per_block, true}}) {
    if (rotate && !d_pow2) continue;
    if (scale == Fp8Scale::per_tensor && rotate && !(own_scale == scale && p.rotate)) continue;
    Fp8StorageAccuracy s;
    s.scale = scale;
    s.rotate = rotate;
    s.own = scale == own_scale && rotate == p.rotate;
    if (s.own) {
      s.O = own_o;
    } else {
      Problem c = p;
      c.fp8_scale = scale;
      c.rotate = rotate;
      RunOptions opt;
      opt.record = false;
      s.O = compare(run_problem(c, t.tiling, opt).O, ref.O);
    }
    out.push_back(s);
  }
  return out;
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
  a.companion_asked = companion;
  if (companion) a.companion = companion_accuracy(t, *ref);
  if (companion && p.dtype == Dtype::fp8) a.fp8_storages = fp8_storage_accuracies(t, *ref, a.forward.O);
  return a;
}

Accuracy accuracy_of(const Trace& t, bool companion) {
  if (t.accuracy && (t.accuracy->companion_asked || !companion)) return *t.accuracy;
  return measure_accuracy(t, companion);
}

}  // namespace flashstep
