// Work limits: what a run will cost, estimated from the sizes alone (before inputs are
// generated or read, before anything is allocated), and a refusal that names the flag that
// raises the limit. Also the check that a result is finite (scores overflowing float32).
#pragma once
#include "core/problem.h"
#include "core/trace.h"

#include <string>

namespace flashstep {

constexpr double kDefaultMaxGflop = 1000;  // --max-gflop: about 7 minutes of the simulator
constexpr double kMaxWorkGflop = 1e9;      // the largest --max-gflop accepted

struct WorkEstimate {
  double gflop = 0;        // S = QK^T, softmax, PV, plus the simulator's per-block cost
  double block_pairs = 0;  // Tr * Tc
  double hbm_bytes = 0;    // the simulated HBM and the inputs (estimate_hbm_bytes)
};

// Estimated in doubles, so that no size can overflow it. t.S must be the run's splits (decode's
// partials take S x Nq x (d + 1) float32 values of HBM): spec_tiling gives it before the run.
WorkEstimate estimate_work(int64_t nq, int64_t nk, int64_t d, const Tiling& t, Schedule s, int bytes_per_elem);

// With the backward (--backward): about 2.5 times the forward's FLOPs over the same blocks twice
// more, added to w.
void add_backward_work(WorkEstimate& w);

// With the L2 model (--l2, --gpu): the replay of every head's HBM accesses through the cache,
// one operation per 128-byte line, added to w.gflop (so --max-gflop refuses --heads 4096 on a
// large problem before it starts).
void add_l2_replay_work(WorkEstimate& w, Schedule s, int64_t nq, int64_t nk, int64_t d, const Tiling& t,
                        int bytes_per_elem, int64_t heads);

struct WorkLimits {
  double max_gflop = kDefaultMaxGflop;
  double max_hbm_bytes = double(sizeof(size_t) >= 8 ? int64_t(8) << 30 : int64_t(1) << 30);  // as RunOptions::max_hbm_bytes
};
// Throws InputError with the estimate and the flag that raises the limit.
void check_work(const WorkEstimate& w, const WorkLimits& lim);

// A float32 result that is NaN or Inf (other than lse = -inf of a row that keeps no key) means
// the scores tau q.k, or the sums of P V, left float32's range: an InputError that says so.
void check_result_finite(const Trace& t);

}  // namespace flashstep
