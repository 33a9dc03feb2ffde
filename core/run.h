// Running a problem: pick the schedule, decide whether to record, check the trace fits.
#pragma once
#include "core/trace.h"

#include <optional>

namespace flashstep {

// Steps of an unmasked run of schedule s (a mask skips blocks, each one step instead of
// several: then at most this many). fa1 1 + Tc (1 + 6 Tr), fa2 Tr (6 + 4 Tc), standard 3 Tr.
int64_t schedule_steps(Schedule s, const Tiling& t);

// Estimated bytes of a recorded trace (steps, tiles, HBM writes), computed before running.
size_t estimate_trace_bytes(const Problem& p, const Tiling& t);
// Estimated bytes of the simulated HBM (inputs, outputs, S and P for standard attention).
size_t estimate_hbm_bytes(const Problem& p);

struct RunOptions {
  bool record = true;
  size_t max_trace_bytes = size_t(1) << 30;  // 1 GiB
  // How the caller runs without a recording, or lifts the limit, for the refusal's message (the
  // CLI's flags; the Python module says record=False).
  const char* unrecorded_hint =
      "Drop --steps/--trace/--csv/--chrome/--snapshots to run the unrecorded fast path, or raise --max-trace-mib";
  // 8 GiB; 1 GiB where size_t is 32 bits (the web build's wasm32 has 4 GiB of address space at
  // most, and 8 << 30 would wrap to 0 there).
  size_t max_hbm_bytes = sizeof(size_t) >= 8 ? size_t(8) << 30 : size_t(1) << 30;
  const Mat* dO = nullptr;  // when set, the backward pass follows on the same trace (backward.h)
  std::optional<L2Config> l2;                 // the L2 model (l2_cache.h); none: DRAM = HBM
  // Measure the run against the float64 reference into trace.accuracy (core/accuracy.h), with
  // the companion run of a 16-bit or FP8 problem too when accuracy_companion is set.
  bool accuracy = false, accuracy_companion = false;
};

// Runs p with tiling t. If recording was asked for but the estimate exceeds the limit,
// throws InputError with the estimate. Throws InputError if the simulated HBM would not fit.
Trace run_problem(const Problem& p, const Tiling& t, const RunOptions& opt);

// The sequence every caller repeats: make_problem(spec), its tiling (make_tiling(p), with the
// spec's Br, Bc), run_problem. The returned trace holds the problem and the tiling too.
Trace run_spec(const ProblemSpec& spec, const RunOptions& opt);

}  // namespace flashstep
