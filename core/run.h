// Running a problem: pick the schedule, decide whether to record, check the trace fits.
#pragma once
#include "core/trace.h"

#include <optional>

namespace flashstep {

// Estimated bytes of a recorded trace (steps, tiles, HBM writes), computed before running.
size_t estimate_trace_bytes(const Problem& p, const Tiling& t);
// Estimated bytes of the simulated HBM (inputs, outputs, S and P for standard attention).
size_t estimate_hbm_bytes(const Problem& p);

struct RunOptions {
  bool record = true;
  size_t max_trace_bytes = size_t(1) << 30;  // 1 GiB
  size_t max_hbm_bytes = size_t(8) << 30;    // 8 GiB
  std::optional<L2Config> l2;                 // the L2 model (l2_cache.h); none: DRAM = HBM
};

// Runs p with tiling t. If recording was asked for but the estimate exceeds the limit,
// throws InputError with the estimate. Throws InputError if the simulated HBM would not fit.
Trace run_problem(const Problem& p, const Tiling& t, const RunOptions& opt);

}  // namespace flashstep
