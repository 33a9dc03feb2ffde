// "Run on this GPU" through the CUDA backend: the same problem, inputs and blocks as the trace.
#include "app/gui/gpu_snapshots.h"

#include "core/schedule_registry.h"
#include "gpu/backend.h"
#include "gpu/schedules.h"

namespace flashstep::gui {

namespace {

Mat as_mat(const std::vector<float>& x, int64_t rows, int64_t cols) {
  return Eigen::Map<const Mat>(x.data(), Eigen::Index(rows), Eigen::Index(cols));
}

}  // namespace

bool gpu_snapshots_available(std::string* why) {
  std::string reason;
  if (gpu::available(&reason)) return true;
  if (why) *why = "no GPU can be used here: " + reason;
  return false;
}

SnapshotSet gpu_snapshots(const Trace& tr) {
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  if (p.dtype == Dtype::fp8)  // docs/fp8.md: the CUDA kernels would take the unquantised inputs
    throw InputError("the GPU kernels take fp32, fp16 and bf16; --dtype fp8 runs on the CPU engine only");
  const gpu::Shape shape{1, 1, p.nq, p.nk, p.d};
  const gpu::Features f = gpu::features_of(p.options(), p.seed);
  // fa1: O, l, m copied back after every j (one launch per j); fa2: variant 1's snapshot
  // kernel, every Q block's O_i, l_i, m_i after each j; standard: the final state only.
  gpu::ForwardOptions o;
  o.snapshots = schedule_info(p.schedule).forward_snapshots != nullptr;
  o.features = f;
  const gpu::Result r = gpu::device_schedule(p.schedule).forward(p.Q.data(), p.K.data(), p.V.data(), shape, p.scale, t, o);
  SnapshotSet s;
  s.source = "gpu";
  s.device = gpu::device_info().name;
  s.problem = snapshot_problem(p, t, tr.has_backward ? &tr.dO : nullptr);
  for (const gpu::ForwardSnapshot& g : r.snapshots) {  // fa1: Alg1 L13 of the last Q block of j; fa2: on chip
    SnapshotEntry sn;
    sn.phase = SnapshotPhase::forward;
    sn.j = g.j;
    sn.tensors = {{"O", "", as_mat(g.O, p.nq, p.d)}, {"l", "", as_mat(g.l, p.nq, 1)}, {"m", "", as_mat(g.m, p.nq, 1)}};
    s.snapshots.push_back(std::move(sn));
  }
  for (SnapshotEntry& e : partial_snapshots(s.problem, r.O_part, r.lse_part)) s.snapshots.push_back(std::move(e));
  s.final_state.phase = SnapshotPhase::final;
  s.final_state.tensors = {{"O", "", as_mat(r.O, p.nq, p.d)}, {"lse", "", as_mat(r.lse, p.nq, 1)}};
  return s;
}

}  // namespace flashstep::gui
