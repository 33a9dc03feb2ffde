// The backward pass's entry point: dispatch to the schedule's backward, split the totals into
// phases, and the checks and estimates around it.
#include "core/backward.h"

#include "core/schedule_registry.h"

#include <cmath>
#include <sstream>

namespace flashstep {

// Per-tensor and overall difference of two running totals: what the backward alone moved.
static Totals phase_difference(const Totals& whole, const Totals& before) {
  Totals t;
  t.hbm_read_bytes = whole.hbm_read_bytes - before.hbm_read_bytes;
  t.hbm_write_bytes = whole.hbm_write_bytes - before.hbm_write_bytes;
  // Without an L2 model (the backward has none) DRAM's bytes are HBM's, as in the forward.
  t.dram_read_bytes = whole.dram_read_bytes - before.dram_read_bytes;
  t.dram_write_bytes = whole.dram_write_bytes - before.dram_write_bytes;
  t.flops = whole.flops - before.flops;
  t.steps = whole.steps - before.steps;
  for (int k = 0; k < kTensors; ++k) {
    t.traffic.read[k] = whole.traffic.read[k] - before.traffic.read[k];
    t.traffic.written[k] = whole.traffic.written[k] - before.traffic.written[k];
  }
  return t;
}

void run_backward(Trace& tr, const Mat& dO, bool record) {
  check_grad_output(tr.problem, dO);
  tr.forward_totals = tr.totals;
  tr.backward_first_step = size_t(tr.totals.steps);  // == steps.size() when recorded
  tr.has_backward = true;
  tr.keep_hbm = false;
  tr.dO = dO;
  schedule_info(tr.problem.schedule).run_backward(tr, record);
  const int64_t peak = tr.backward_totals.peak_sram_bytes, tiles = tr.backward_totals.peak_tile_bytes;
  tr.backward_totals = phase_difference(tr.totals, tr.forward_totals);
  tr.backward_totals.peak_sram_bytes = peak;
  tr.backward_totals.peak_tile_bytes = tiles;
}

Mat make_grad_output(const Problem& p, const std::string& pattern) {
  return make_input(p.pattern == "npy" ? pattern : p.pattern, p.nq, p.d, p.seed, 3);
}

void check_grad_output(const Problem& p, const Mat& dO) {
  if (dO.rows() != p.nq || dO.cols() != p.d) {
    std::ostringstream os;
    os << "dO is " << dO.rows() << " x " << dO.cols() << " but must be Nq x d = " << p.nq << " x "
       << p.d << " (the gradient of the loss with respect to O)";
    throw InputError(os.str());
  }
  check_finite(dO, "dO");
  if (p.dtype == Dtype::fp16)  // dO is stored in HBM as fp16 too: it must fit
    for (int64_t k = 0; k < dO.size(); ++k)
      if (std::abs(dO.data()[k]) > 65504.0f)
        throw InputError("input dO has a value beyond fp16's range (" + error_value(dO.data()[k]) +
                         ") at row " + std::to_string(k / dO.cols()) + ", column " +
                         std::to_string(k % dO.cols()));
}

size_t backward_step_bound(const Problem& p, const Tiling& t) {
  const ScheduleInfo& s = schedule_info(p.schedule);
  return has_backward(s) ? s.backward_steps(t) : 0;  // none: run_problem refuses the run
}

void check_gradients_finite(const Trace& t) {
  const std::pair<const Mat*, const char*> grads[] = {{&t.dQ, "dQ"}, {&t.dK, "dK"}, {&t.dV, "dV"}};
  for (const auto& [g, name] : grads)
    if (!g->allFinite())
      throw InputError(std::string("the gradient ") + name + " overflows float32: the inputs or dO "
                       "are too large for this problem");
}

size_t estimate_backward_trace_bytes(const Problem& p, const Tiling& t) {
  const ScheduleInfo& s = schedule_info(p.schedule);
  return has_backward(s) ? s.backward_trace_bytes(p, t) : 0;  // none: run_problem refuses the run
}

size_t estimate_backward_hbm_bytes(const Problem& p) {
  const size_t nq = size_t(p.nq), nk = size_t(p.nk), d = size_t(p.d);
  // dO, dQ, dK, dV and D in HBM and again in the trace (float32 at most)
  size_t bytes = 2 * (2 * nq * d + 2 * nk * d + nq) * sizeof(float);
  bytes += size_t(schedule_info(p.schedule).nn_matrices_backward) * nq * nk * size_t(p.bytes_per_elem);  // dP, dS
  return bytes;
}

}  // namespace flashstep
