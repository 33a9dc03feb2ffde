#include "core/run.h"

#include "core/accuracy.h"
#include "core/backward.h"
#include "core/checked.h"
#include "core/progress.h"
#include "core/schedule_registry.h"

namespace flashstep {

int64_t schedule_steps(Schedule s, const Tiling& t) { return schedule_info(s).forward_steps(t); }

size_t estimate_trace_bytes(const Problem& p, const Tiling& t) {
  return schedule_info(p.schedule).forward_trace_bytes(p, t);
}

size_t estimate_hbm_bytes(const Problem& p) {
  const size_t nq = size_t(p.nq), nk = size_t(p.nk), d = size_t(p.d), f = size_t(p.bytes_per_elem);
  size_t bytes = 2 * (nq * d + 2 * nk * d) * f  // inputs, in the Problem and in HBM
                 + 2 * (nq * d + 2 * nq) * f;   // O, l, m in HBM and in the result
  bytes += size_t(schedule_info(p.schedule).nn_matrices_forward) * nq * nk * f;  // S and P (standard)
  return bytes;
}

static std::string mib(size_t bytes) {
  return std::to_string((bytes + (size_t(1) << 20) - 1) >> 20) + " MiB";
}

Trace run_problem(const Problem& p, const Tiling& t, const RunOptions& opt) {
  // The estimates below count bytes per block pair in size_t: keep Tr * Tc far from overflow.
  checked::fits_int64(double(t.Tr) * double(t.Tc) * 4096.0, "the trace estimate (Tr * Tc block pairs)");
  const ScheduleInfo& sched = schedule_info(p.schedule);
  switch (missing_path(sched, p.dtype, opt.dO != nullptr)) {
    case MissingPath::none: break;
    case MissingPath::backward:
      throw InputError(std::string("--schedule ") + sched.name + " has no backward pass (" + sched.paper_name +
                       " is for inference): drop --backward");
    case MissingPath::fp8_version:  // a Problem made for another schedule
      throw InputError(std::string("--dtype fp8 has no ") + sched.name + " version: the FP8 forward runs --schedule " +
                       fp8_schedule_names());
    case MissingPath::fp8_backward:
      throw InputError("--dtype fp8 has no backward pass (the FP8 path is the forward of " + fp8_schedule_names() +
                       "): drop --backward, or use --dtype fp32, fp16 or bf16");
  }
  if (opt.l2 && p.dtype == Dtype::fp8)  // the model's addresses know fp32, fp16, bf16 tensors
    throw InputError("the L2 model (--l2, --gpu) does not take --dtype fp8: drop one of them");
  if (opt.l2 && !sched.l2_order)
    throw InputError(std::string("the L2 model (--l2, --gpu) does not take --schedule ") + sched.name);
  if (opt.dO) check_grad_output(p, *opt.dO);  // before any work
  if (opt.dO && opt.l2)  // the model replays one pass's accesses; the backward's are not modelled
    throw InputError("the L2 model (--l2, --gpu) covers the forward pass only; drop --backward or the L2 flags");
  const size_t hbm = estimate_hbm_bytes(p) + (opt.dO ? estimate_backward_hbm_bytes(p) : 0);
  if (hbm > opt.max_hbm_bytes)
    throw InputError("the simulated HBM would need about " + mib(hbm) + " (limit " +
                     mib(opt.max_hbm_bytes) + "); use smaller sizes" +
                     (schedule_info(p.schedule).nn_matrices_forward > 0
                          ? std::string(" (") + schedule_info(p.schedule).device_title + " stores S and P)"
                          : std::string()));
  if (opt.record) {
    const size_t est = estimate_trace_bytes(p, t) + (opt.dO ? estimate_backward_trace_bytes(p, t) : 0);
    if (est > opt.max_trace_bytes)
      throw InputError("a recorded trace of this problem would take about " + mib(est) +
                       " (limit " + mib(opt.max_trace_bytes) +
                       "); refusing to record. " + opt.unrecorded_hint);
  }
  Trace tr;
  tr.problem = p;
  tr.tiling = t;
  if (opt.l2) {
    tr.totals.l2.enabled = true;
    tr.totals.l2.config = *opt.l2;
  }
  if (opt.record)  // the step counts estimate_trace_bytes assumes, so the estimate holds
    tr.steps.reserve(size_t(schedule_steps(p.schedule, t)) + (opt.dO ? backward_step_bound(p, t) : 0));
  tr.keep_hbm = opt.dO != nullptr;
  // The schedules tick once per block pair (standard attention: per row block, 3 passes).
  const ScheduleInfo& info = schedule_info(p.schedule);
  progress::begin(info.progress_ticks(t));
  info.run_forward(tr, opt.record);
  if (opt.dO) run_backward(tr, *opt.dO, opt.record);
  progress::end();
  if (opt.accuracy) tr.accuracy = measure_accuracy(tr, opt.accuracy_companion);
  return tr;
}

Trace run_spec(const ProblemSpec& spec, const RunOptions& opt) {
  const Problem p = make_problem(spec);
  return run_problem(p, make_tiling(p), opt);
}

}  // namespace flashstep
