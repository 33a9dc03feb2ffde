// flashstep gpu --snapshots: see cmd_gpu_snapshots.h. Every check of the user's input (flags,
// sizes, the snapshot cap, the target folder) runs before the first call that needs a GPU.
#include "app/cmd_gpu_snapshots.h"

#include "app/cmd_backward_gpu.h"
#include "app/cmd_tensor_cores.h"
#include "core/snapshot.h"
#include "core/schedule_registry.h"
#include "gpu/backend.h"
#include "gpu/schedules.h"

#include <cmath>
#include <cstdio>

namespace flashstep {

namespace {

Mat head_matrix(const std::vector<float>& v, int64_t rows, int64_t cols) {
  return Eigen::Map<const Mat>(v.data(), rows, cols);
}

int64_t count_nan(const SnapshotSet& s) {
  int64_t n = 0;
  auto add = [&n](const SnapshotEntry& sn) {
    for (const SnapshotTensor& t : sn.tensors) n += t.data.array().isNaN().count();
  };
  for (const SnapshotEntry& sn : s.snapshots) add(sn);
  add(s.final_state);
  return n;
}

}  // namespace

int run_gpu_snapshots(const RunFlags& rf, int variant, const std::string& dir, const BackwardFlags& bf) {
  const ProblemSpec spec = rf.to_spec();
  reject_p_dtype_on_float32_kernels(spec);
  const Problem p = make_problem(spec);
  const Tiling t = make_tiling(p);
  const ScheduleInfo& info = schedule_info(p.schedule);
  const gpu::DeviceSchedule& dev = gpu::device_schedule(p.schedule);
  check_standard_float32(p.schedule, p.dtype);  // app/gpu_requests.cpp
  Mat dO;
  if (bf.backward) {
    check_float32_storage(p.dtype);
    dO = backward_grad_output(bf, p, rf.pattern);
  }
  SnapshotSet s;
  s.source = "gpu";
  s.problem = snapshot_problem(p, t, bf.backward ? &dO : nullptr);
  check_snapshot_size(s.problem);
  check_snapshot_target(dir);
  const gpu::Shape sh{1, 1, p.nq, p.nk, p.d};
  const gpu::Features f = gpu::features_of(p.options(), p.seed);
  gpu::check_features(f, sh);
  s.device = gpu::device_info().name;  // no GPU: said here, after every input check

  gpu::ForwardOptions fo;
  fo.variant = variant;
  fo.snapshots = info.forward_snapshots != nullptr;
  fo.features = f;
  const gpu::Result r = dev.forward(p.Q.data(), p.K.data(), p.V.data(), sh, p.scale, t, fo);
  for (const gpu::ForwardSnapshot& sn : r.snapshots)
    s.snapshots.push_back({SnapshotPhase::forward, sn.j, {{"O", "", head_matrix(sn.O, p.nq, p.d)}, {"l", "", head_matrix(sn.l, p.nq, 1)},
                                              {"m", "", head_matrix(sn.m, p.nq, 1)}}});
  for (SnapshotEntry& e : partial_snapshots(s.problem, r.O_part, r.lse_part)) s.snapshots.push_back(std::move(e));
  s.final_state = {SnapshotPhase::final, -1, {{"O", "", head_matrix(r.O, p.nq, p.d)}, {"lse", "", head_matrix(r.lse, p.nq, 1)}}};
  if (bf.backward) {
    gpu::BackwardOptions o;
    o.snapshots = info.backward_snapshots;  // Alg4 / FA2b as one launch per j
    o.features = f;
    const gpu::BackwardResult b = run_backward_on_gpu(p.schedule, p.Q.data(), p.K.data(), p.V.data(), dO.data(), sh,
                                                      p.scale, t, o);
    for (const gpu::GradSnapshot& sn : b.snapshots)
      s.snapshots.push_back({SnapshotPhase::backward, sn.j, {{"dQ", "", head_matrix(sn.dQ, p.nq, p.d)}}});
    s.final_state.tensors.push_back({"dQ", "", head_matrix(b.dQ, p.nq, p.d)});
    s.dq_scale_floor = snapshot_dq_floor(p, dO);
  }
  write_snapshots(dir, s);
  const int64_t nan = count_nan(s);
  std::printf("gpu        %s on %s, dtype %s, %s variant %d\n", schedule_name(p.schedule), s.device.c_str(),
              dtype_name(p.dtype), schedule_name(p.schedule), r.variant);
  std::printf("tiling     M = %lld, Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld\n", (long long)p.M, (long long)t.Br,
              (long long)t.Bc, (long long)t.Tr, (long long)t.Tc);
  std::printf("snapshots  %zu per-j or per-split snapshots and the final state written to %s\n", s.snapshots.size(),
              dir.c_str());
  if (nan > 0)
    std::printf("warning    %lld NaN elements (left unwritten by a kernel): compare will report them\n", (long long)nan);
  return 0;
}

}  // namespace flashstep
