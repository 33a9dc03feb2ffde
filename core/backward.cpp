// The backward pass's entry point: dispatch to the schedule's backward, split the totals into
// phases, and the checks and estimates around it.
#include "core/backward.h"

#include <cmath>
#include <sstream>

namespace flashstep {

// Per-tensor and overall difference of two running totals: what the backward alone moved.
static Totals phase_difference(const Totals& whole, const Totals& before) {
  Totals t;
  t.hbm_read_bytes = whole.hbm_read_bytes - before.hbm_read_bytes;
  t.hbm_write_bytes = whole.hbm_write_bytes - before.hbm_write_bytes;
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
  switch (tr.problem.schedule) {
    case Schedule::fa1: run_backward_fa1(tr, record); break;
    case Schedule::fa2: run_backward_fa2(tr, record); break;
    case Schedule::standard: run_backward_standard(tr, record); break;
    case Schedule::decode: throw InputError("--schedule decode has no backward pass: drop --backward");
  }
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
        throw InputError("input dO has a value beyond fp16's range (" + std::to_string(dO.data()[k]) +
                         ") at row " + std::to_string(k / dO.cols()) + ", column " +
                         std::to_string(k % dO.cols()));
}

// Each recorded vector or matrix is a heap block; count a little for the allocator too.
static constexpr size_t kAllocOverhead = 32;

size_t backward_step_bound(const Problem& p, const Tiling& t) {
  const size_t Tr = size_t(t.Tr), Tc = size_t(t.Tc);
  switch (p.schedule) {
    case Schedule::fa1: return 1 + Tc * (3 + 12 * Tr);       // L5; L7, L8, L24; L10-L22
    case Schedule::fa2: return 1 + Tr + Tc * (3 + 8 * Tr);   // L3; L4; L6, L7, L18; L9-L16
    case Schedule::standard: return 5 * Tr;                  // L1-L5 per row block
    case Schedule::decode: break;                            // no backward (run.cpp refuses it)
  }
  return 0;
}

size_t estimate_backward_trace_bytes(const Problem& p, const Tiling& t) {
  const size_t nq = size_t(p.nq), nk = size_t(p.nk), d = size_t(p.d), f = sizeof(float);
  const size_t Tr = size_t(t.Tr), Tc = size_t(t.Tc), pairs = Tr * Tc;
  const size_t w = sizeof(HbmWrite) + kAllocOverhead;
  const size_t dropout = p.dropout > 0 ? 2 * nq * nk * f : 0;  // keep masks and P^dropped tiles
  const size_t steps = backward_step_bound(p, t) * sizeof(Step);
  if (p.schedule == Schedule::standard)
    return steps + 5 * Tr * w + (4 * nq * nk + nq * d + 2 * nk * d + nq) * f + dropout;
  // Per (i, j): tiles S, P, dP, dS (Br x Bc each) and dV~_j, dK~_j (Bc x d); dQ_i written;
  // D_i. Per j: dK_j, dV_j written; once: dQ, dK, dV initialised (FA2: dQ and D).
  return steps + 5 * nq * nk * f + 2 * Tr * nk * d * f + Tc * nq * (d + 1) * f +
         pairs * (8 * kAllocOverhead + w) + dropout + (nq + 4 * nk) * d * f + (2 * Tc + 4 + Tr) * w;
}

size_t estimate_backward_hbm_bytes(const Problem& p) {
  const size_t nq = size_t(p.nq), nk = size_t(p.nk), d = size_t(p.d);
  // dO, dQ, dK, dV and D in HBM and again in the trace (float32 at most)
  size_t bytes = 2 * (2 * nq * d + 2 * nk * d + nq) * sizeof(float);
  if (p.schedule == Schedule::standard) bytes += 2 * nq * nk * size_t(p.bytes_per_elem);  // dP, dS
  return bytes;
}

}  // namespace flashstep
