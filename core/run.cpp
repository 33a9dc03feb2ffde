#include "core/run.h"

#include "core/backward.h"
#include "core/checked.h"
#include "core/decode.h"
#include "core/progress.h"
#include "core/schedules.h"

namespace flashstep {

// Each recorded vector or matrix is a heap block; count a little for the allocator too.
static constexpr size_t kAllocOverhead = 32;

int64_t schedule_steps(Schedule s, const Tiling& t, int64_t splits) {
  switch (s) {
    case Schedule::decode: return decode_steps(t, splits);
    case Schedule::fa1: return 1 + t.Tc * (1 + 6 * t.Tr);
    case Schedule::fa2: return t.Tr * (6 + 4 * t.Tc);
    case Schedule::standard: return 3 * t.Tr;
  }
  return 0;
}

size_t estimate_trace_bytes(const Problem& p, const Tiling& t) {
  const size_t nq = size_t(p.nq), nk = size_t(p.nk), d = size_t(p.d);
  const size_t Tr = size_t(t.Tr), Tc = size_t(t.Tc), pairs = Tr * Tc;
  const size_t f = sizeof(float), w = sizeof(HbmWrite) + kAllocOverhead;
  const size_t steps = size_t(schedule_steps(p.schedule, t, p.splits));
  // The dropout keep mask of every P~ tile (Alg1 L12, FA2fwd L10, Alg0 L3): Nq x Nk in all.
  const size_t dropout_masks = p.dropout > 0 ? nq * nk * f : 0;
  if (p.schedule == Schedule::standard) {
    return dropout_masks + steps * sizeof(Step) + 2 * nq * nk * f  // S_i, P_i tiles kept for display
           + (2 * nq * nk + nq * d) * f            // S, P, O writes
           + 3 * Tr * (w + kAllocOverhead);
  }
  if (p.schedule == Schedule::decode) {  // fa2's per split, plus the partials and the combine
    const size_t S = size_t(p.splits);
    return dropout_masks + steps * sizeof(Step) + 2 * nq * nk * f  // S_ij and P~_ij tiles
           + S * nq * (d + 1) * f + nq * (d + 1) * f   // FD L13, L14, L19, L20 writes
           + 5 * Tc * nq * f + Tc * nq * d * f         // FD L8 statistics, FD L9 O_i
           + S * nq * (3 * d + 4) * f                   // FD L17, L18: weights, O_i^(s), O_i
           + (pairs + S * Tr) * 7 * kAllocOverhead + S * Tr * 2 * w;
  }
  if (p.schedule == Schedule::fa2) {
    return dropout_masks + steps * sizeof(Step) + 2 * nq * nk * f  // S_ij (L8) and P~_ij (L9) tiles
           + nq * (d + 1) * f                      // L14, L15 writes
           + 5 * Tc * nq * f                       // L9 statistics
           + Tc * nq * d * f                       // L10: O_i^(j)
           + pairs * 7 * kAllocOverhead + Tr * 2 * w;
  }
  return dropout_masks + steps * sizeof(Step) + 2 * nq * nk * f  // S_ij (L9) and P~_ij (L10) tiles
         + Tc * nq * (d + 2) * f                 // L12, L13 writes
         + nq * (d + 2) * f                      // L2 writes
         + 8 * Tc * nq * f                       // L10, L11 statistics
         + pairs * (3 * w + 10 * kAllocOverhead);
}

size_t estimate_hbm_bytes(const Problem& p) {
  const size_t nq = size_t(p.nq), nk = size_t(p.nk), d = size_t(p.d), f = size_t(p.bytes_per_elem);
  size_t bytes = 2 * (nq * d + 2 * nk * d) * f  // inputs, in the Problem and in HBM
                 + 2 * (nq * d + 2 * nq) * f;   // O, l, m in HBM and in the result
  if (p.schedule == Schedule::standard) bytes += 2 * nq * nk * f;  // S and P
  if (p.schedule == Schedule::decode) bytes += 2 * size_t(p.splits) * nq * (d + 1) * 4;  // partials
  return bytes;
}

static std::string mib(size_t bytes) {
  return std::to_string((bytes + (size_t(1) << 20) - 1) >> 20) + " MiB";
}

Trace run_problem(const Problem& p, const Tiling& t, const RunOptions& opt) {
  // The estimates below count bytes per block pair in size_t: keep Tr * Tc far from overflow.
  checked::fits_int64(double(t.Tr) * double(t.Tc) * 4096.0, "the trace estimate (Tr * Tc block pairs)");
  if (p.schedule == Schedule::decode && (opt.dO || opt.l2))
    throw InputError(opt.dO ? "--schedule decode has no backward pass (flash-decoding is for inference): drop --backward"
                            : "the L2 model (--l2, --gpu) covers fa1, fa2 and standard, not decode");
  if (opt.dO) check_grad_output(p, *opt.dO);  // before any work
  if (opt.dO && opt.l2)  // the model replays one pass's accesses; the backward's are not modelled
    throw InputError("the L2 model (--l2, --gpu) covers the forward pass only; drop --backward or the L2 flags");
  const size_t hbm = estimate_hbm_bytes(p) + (opt.dO ? estimate_backward_hbm_bytes(p) : 0);
  if (hbm > opt.max_hbm_bytes)
    throw InputError("the simulated HBM would need about " + mib(hbm) + " (limit " +
                     mib(opt.max_hbm_bytes) + "); use smaller sizes" +
                     (p.schedule == Schedule::standard ? " (standard attention stores S and P)" : ""));
  if (opt.record) {
    const size_t est = estimate_trace_bytes(p, t) + (opt.dO ? estimate_backward_trace_bytes(p, t) : 0);
    if (est > opt.max_trace_bytes)
      throw InputError("a recorded trace of this problem would take about " + mib(est) +
                       " (limit " + mib(opt.max_trace_bytes) +
                       "); refusing to record. Drop --steps/--trace/--csv/--chrome/--snapshots to run the "
                       "unrecorded fast path, or raise --max-trace-mib");
  }
  Trace tr;
  tr.problem = p;
  tr.tiling = t;
  if (opt.l2) {
    tr.totals.l2.enabled = true;
    tr.totals.l2.config = *opt.l2;
  }
  if (opt.record)  // the step counts estimate_trace_bytes assumes, so the estimate holds
    tr.steps.reserve(size_t(schedule_steps(p.schedule, t, p.splits)) + (opt.dO ? backward_step_bound(p, t) : 0));
  tr.keep_hbm = opt.dO != nullptr;
  // The schedules tick once per block pair (standard attention: per row block, 3 passes).
  progress::begin(p.schedule == Schedule::standard ? 3 * t.Tr : t.Tr * t.Tc);
  switch (p.schedule) {
    case Schedule::fa1: run_fa1(tr, opt.record); break;
    case Schedule::fa2: run_fa2(tr, opt.record); break;
    case Schedule::standard: run_standard(tr, opt.record); break;
    case Schedule::decode: run_decode(tr, opt.record); break;
  }
  if (opt.dO) run_backward(tr, *opt.dO, opt.record);
  progress::end();
  return tr;
}

Trace run_spec(const ProblemSpec& spec, const RunOptions& opt) {
  const Problem p = make_problem(spec);
  return run_problem(p, make_tiling(p), opt);
}

}  // namespace flashstep
