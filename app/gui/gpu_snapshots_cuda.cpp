// "Run on this GPU" through the CUDA backend: the same problem, inputs and blocks as the trace.
#include "app/gui/gpu_snapshots.h"

#include "gpu/backend.h"

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
  const gpu::Shape shape{1, 1, p.nq, p.nk, p.d};
  const gpu::Features f = gpu::features_of(p.options(), p.seed);
  gpu::Result r;
  if (p.schedule == Schedule::fa1) {
    gpu::Fa1Options o;
    o.snapshots = true;  // O, l, m copied back after every j (one launch per j)
    o.features = f;
    r = gpu::fa1_forward(p.Q.data(), p.K.data(), p.V.data(), shape, p.scale, t, o);
  } else if (p.schedule == Schedule::fa2) {
    gpu::Fa2Options o;
    o.snapshots = true;  // variant 1's snapshot kernel: every Q block's O_i, l_i, m_i after each j
    o.features = f;
    r = gpu::fa2_forward(p.Q.data(), p.K.data(), p.V.data(), shape, p.scale, t, o);
  } else {
    r = gpu::standard_forward(p.Q.data(), p.K.data(), p.V.data(), shape, p.scale, f);
  }
  SnapshotSet s;
  s.source = "gpu";
  s.device = gpu::device_info().name;
  s.problem = snapshot_problem(p, t, tr.has_backward ? &tr.dO : nullptr);
  for (const gpu::Snapshot& g : r.snapshots) {  // fa1: Alg1 L13 of the last Q block of j; fa2: on chip
    Snapshot sn;
    sn.phase = "forward";
    sn.j = g.j;
    sn.tensors = {{"O", "", as_mat(g.O, p.nq, p.d)}, {"l", "", as_mat(g.l, p.nq, 1)}, {"m", "", as_mat(g.m, p.nq, 1)}};
    s.snapshots.push_back(std::move(sn));
  }
  s.final_state.phase = "final";
  s.final_state.tensors = {{"O", "", as_mat(r.O, p.nq, p.d)}, {"lse", "", as_mat(r.lse, p.nq, 1)}};
  return s;
}

}  // namespace flashstep::gui
