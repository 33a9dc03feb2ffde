// flashstep gpu: run a schedule on the GPU and write O and lse as .npy; inputs from the run
// flags (2-D) or from .npy files, 2-D (N, d) or 4-D (B, H, N, d).
#include "app/cmd_backward_gpu.h"
#include "app/cmd_backward_tc.h"
#include "app/cmd_decode_gpu.h"
#include "app/cmd_gpu_snapshots.h"
#include "app/cmd_tensor_cores.h"
#include "app/commands.h"
#include "app/run_printer.h"
#include "core/schedules/decode/decode.h"
#include "core/npy.h"
#include "core/output_files.h"
#include "core/schedule_registry.h"
#include "gpu/backend.h"
#include "gpu/schedules.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace flashstep {

namespace {

struct Inputs {
  gpu::Shape s;
  int rank = 2;
  std::vector<float> Q, K, V;
  float scale = 1.0f;
  int64_t M = 0;
  gpu::Features features;  // mask, dropout, dtype from the run flags
};

Inputs load_inputs(const RunFlags& rf, const std::vector<int64_t>& kv_lens) {
  ProblemSpec spec = rf.to_spec();
  reject_p_dtype_on_float32_kernels(spec);
  Inputs in;
  // --kv-len with --kv-lens: refused by check_gpu_request (app/gpu_requests.cpp)
  in.features = gpu::features_of(spec.options, spec.seed, kv_lens);
  if (spec.q_path.empty()) {
    const Problem p = make_problem(spec);
    in.s.nq = p.nq;
    in.s.nk = p.nk;
    in.s.d = p.d;
    in.Q.assign(p.Q.data(), p.Q.data() + p.Q.size());
    in.K.assign(p.K.data(), p.K.data() + p.K.size());
    in.V.assign(p.V.data(), p.V.data() + p.V.size());
    in.scale = p.scale;
    in.M = p.M;
    return in;
  }
  GpuInputFiles files = read_gpu_input_files(spec);  // app/gpu_requests.cpp
  in.rank = files.rank;
  in.s = files.s;
  spec.q_path = spec.k_path = spec.v_path = "";
  spec.nq = in.s.nq;
  spec.nk = in.s.nk;
  spec.d = in.s.d;
  validate_sizes(spec);
  in.scale = spec.scale ? float(*spec.scale) : float(1.0 / std::sqrt(double(in.s.d)));
  in.M = spec.M;
  in.Q = std::move(files.q.data);
  in.K = std::move(files.k.data);
  in.V = std::move(files.v.data);
  return in;
}

int run_gpu(const RunFlags& rf, int variant, const std::string& out_o, const std::string& out_lse,
            const std::vector<int64_t>& kv_lens, const BackwardFlags& bwd, bool tensor_cores) {
  const Inputs in = load_inputs(rf, kv_lens);
  if (tensor_cores)  // app/cmd_backward_tc.cpp
    return run_gpu_backward_tensor_cores(rf, bwd, {in.s, in.rank, &in.Q, &in.K, &in.V, in.scale, in.M, in.features},
                                         variant, out_o, out_lse);
  if (bwd.backward)
    return run_gpu_backward(rf, bwd, {in.s, in.rank, &in.Q, &in.K, &in.V, in.scale, in.M, in.features}, variant,
                            out_o, out_lse);
  const Schedule sched = parse_schedule(rf.schedule);
  const ScheduleInfo& info = schedule_info(sched);
  const gpu::DeviceSchedule& dev = gpu::device_schedule(sched);
  const gpu::Shape& s = in.s;
  Tiling t;
  if (info.tiled) t = make_tiling(s.nq, s.nk, s.d, in.M, rf.br, rf.bc);
  if (rf.page_opt && rf.page_opt->count()) {  // decode's paged KV cache; the range is checked with the shape
    if (!schedule_splits_kv(sched)) throw InputError("--page-size is for --schedule decode (a paged KV cache)");
    if (rf.page_size < 1) throw InputError("--page-size " + std::to_string(rf.page_size) + " must be at least 1");
    t.P = rf.page_size;
  }
  if (schedule_splits_kv(sched))  // --splits, or the device's default for the shape, type and pages
    t.S = gpu_decode_splits(rf.splits, s, t, in.features.dtype, t.P);
  gpu::ForwardOptions o;
  o.variant = variant;
  o.features = in.features;
  const gpu::Result r = dev.forward(in.Q.data(), in.K.data(), in.V.data(), s, in.scale, t, o);
  for (float x : r.O)
    if (std::isnan(x)) throw std::runtime_error("GPU output has unwritten (NaN) elements");
  std::vector<int64_t> o_shape = {s.nq, s.d}, l_shape = {s.nq};
  if (in.rank == 4) {
    o_shape = {s.B, s.H, s.nq, s.d};
    l_shape = {s.B, s.H, s.nq};
  }
  // Both files or neither (core/output_files.h): the targets were checked before the run.
  OutputFiles out;
  const std::pair<const std::string*, const char*> targets[] = {{&out_o, "--out-o"}, {&out_lse, "--out-lse"}};
  for (const auto& [path, flag] : targets)
    if (!path->empty()) out.add(*path, flag);
  out.add_input(rf.q, "--q");
  out.add_input(rf.k, "--k");
  out.add_input(rf.v, "--v");
  if (!out_o.empty()) out.bytes(out_o) = npy_bytes(r.O.data(), o_shape);
  if (!out_lse.empty()) out.bytes(out_lse) = npy_bytes(r.lse.data(), l_shape);
  const gpu::DeviceInfo device = gpu::device_info();
  out.commit([&] {  // the report once the files are written, before they are renamed into place
    std::printf("gpu        %s on %s, dtype %s\n", info.device_title, device.name.c_str(), dtype_name(in.features.dtype));
    std::printf("shape      B = %lld, H = %lld, Nq = %lld, Nk = %lld, d = %lld, tau = %.9g\n",
                (long long)s.B, (long long)s.H, (long long)s.nq, (long long)s.nk, (long long)s.d, in.scale);
    if (info.tiled)
      std::printf("tiling     M = %lld, Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld, S = %lld, %s variant %d\n",
                  (long long)in.M, (long long)t.Br, (long long)t.Bc, (long long)t.Tr, (long long)t.Tc, (long long)t.S,
                  schedule_name(sched), r.variant);
    std::printf("device mem %.3f MiB allocated\n", r.device_bytes / 1048576.0);
    require_stdout_written();
  });
  if (!out_o.empty()) std::printf("wrote      %s\n", out_o.c_str());
  if (!out_lse.empty()) std::printf("wrote      %s\n", out_lse.c_str());
  return 0;
}

}  // namespace

void add_gpu_run_command(CLI::App& app, const SetAction& set_action) {
  // flashstep gpu; its flags and the checks that need no GPU: app/gpu_requests.cpp
  static GpuRequest r;
  auto* g = add_gpu_subcommand(app, r, "run a schedule on the GPU and write O and lse as .npy "
                                       "(inputs 2-D (N, d) or 4-D (B, H, N, d))");
  g->callback([&set_action] {
    set_action([] {
      check_gpu_request(r);
      if (r.snapshots.empty()) return run_gpu(r.rf, r.variant, r.out_o, r.out_lse, r.kv_lens, r.bwd, r.tensor_cores);
      return run_gpu_snapshots(r.rf, r.variant, r.snapshots, r.bwd);
    });
  });
}

}  // namespace flashstep
