// A run's accuracy: its outputs against the float64 reference (core/reference.h). This is the
// one place a run is compared with the reference: run's summary, the backward's printout, the
// app's memory panel, the Python module and verify's CPU side all read the figures made here,
// so they show the same numbers. run_problem fills Trace::accuracy when RunOptions::accuracy is
// set; measure_accuracy does it for a trace made otherwise.
#pragma once
#include "core/problem.h"
#include "core/reference.h"

#include <optional>
#include <vector>

namespace flashstep {

struct Trace;

// The reference's figures of one forward output (O as stored, lse float32).
struct ForwardAccuracy {
  ErrorStats O, lse;
};
// The backward's gradients against reference_backward on the same dO.
struct BackwardAccuracy {
  ErrorStats dQ, dK, dV;
};
// A second run beside a 16-bit or FP8 one, so that its error has a scale: with --dtype fp16 or
// bf16, standard attention in the same type (S and P stored in it too); with --dtype fp8, the
// same schedule with Q, K, V and O stored in bf16 (docs/fp8.md).
struct CompanionAccuracy {
  Schedule schedule;
  Dtype dtype;
  ErrorStats O;
};

// With --dtype fp8, the run's inputs under each FP8 storage (docs/fp8.md's table): one scale per
// tensor, per block, per block after the rotation (where d is a power of two), and the run's own
// choice where it is none of these (per tensor, rotated). `own` marks it; its figures are the run's.
struct Fp8StorageAccuracy {
  Fp8Scale scale = Fp8Scale::per_tensor;
  bool rotate = false;
  bool own = false;
  ErrorStats O;
};

struct Accuracy {
  // false: the reference would cost more than kMaxReferenceWork multiply-adds, so nothing was
  // compared (every reader says so instead of showing figures).
  bool measured = false;
  ForwardAccuracy forward;
  std::optional<BackwardAccuracy> backward;    // when the backward ran
  std::optional<CompanionAccuracy> companion;  // when the storage type asks for one (above)
  std::vector<Fp8StorageAccuracy> fp8_storages;  // with the companion, for --dtype fp8
  // The companion was asked for (whether or not the storage type has one): accuracy_of reuses
  // these figures instead of computing the reference again.
  bool companion_asked = false;
};

// The float64 forward of p (its inputs, scale, mask, dropout and seed), or none where it costs
// more than kMaxReferenceWork.
std::optional<Reference> problem_reference(const Problem& p);

// O and lse of any engine (a schedule, a GPU kernel) of one problem against its reference.
ForwardAccuracy forward_accuracy(const Reference& ref, const Mat& O, const Vec& lse);

// The outputs (O, lse) of several engines of one problem against one reference: the app's
// memory panel, every schedule on the same inputs. None where the reference is too costly.
struct EngineResult {
  const Mat* O;
  const Vec* lse;
};
std::optional<std::vector<ForwardAccuracy>> forward_accuracies(const Problem& p,
                                                               const std::vector<EngineResult>& engines);

// The figures of trace t: the forward, the backward when it ran, and with `companion` the
// companion run (which runs one more schedule unrecorded). `ref`: the problem's reference when
// the caller has it already (problem_reference(t.problem)), else it is computed here.
Accuracy measure_accuracy(const Trace& t, bool companion = false, const Reference* ref = nullptr);

// t.accuracy when the run carried it (as measured then), else measure_accuracy(t, companion).
Accuracy accuracy_of(const Trace& t, bool companion = false);

}  // namespace flashstep
