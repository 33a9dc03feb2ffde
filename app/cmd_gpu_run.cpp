// flashstep gpu: run a schedule on the GPU and write O and lse as .npy; inputs from the run
// flags (2-D) or from .npy files, 2-D (N, d) or 4-D (B, H, N, d).
#include "app/cmd_backward_gpu.h"
#include "app/cmd_gpu_snapshots.h"
#include "app/cmd_tensor_cores.h"
#include "app/commands.h"
#include "core/npy.h"
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

void shape_of(const NpyArray& a, const char* name, int64_t& B, int64_t& H, int64_t& N, int64_t& d) {
  if (a.shape.size() == 2) {
    B = H = 1;
    N = a.shape[0];
    d = a.shape[1];
  } else if (a.shape.size() == 4) {
    B = a.shape[0];
    H = a.shape[1];
    N = a.shape[2];
    d = a.shape[3];
  } else {
    throw InputError(std::string(name) + " must be 2-D (N, d) or 4-D (B, H, N, d); it has " +
                     std::to_string(a.shape.size()) + " dimensions");
  }
  for (float x : a.data)
    if (!std::isfinite(x)) throw InputError(std::string(name) + " contains NaN or Inf");
}

Inputs load_inputs(const RunFlags& rf, const std::vector<int64_t>& kv_lens) {
  ProblemSpec spec = rf.to_spec();
  reject_p_dtype_on_float32_kernels(spec);
  Inputs in;
  if (!kv_lens.empty() && spec.options.mask.kv_len >= 0)
    throw InputError("give --kv-len (one length) or --kv-lens (one per batch entry), not both");
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
  if (spec.k_path.empty() || spec.v_path.empty())
    throw InputError("give all three of --q, --k and --v, or none");
  NpyArray q = read_npy(spec.q_path), k = read_npy(spec.k_path), v = read_npy(spec.v_path);
  int64_t qb, qh, qn, qd, kb, kh, kn, kd, vb, vh, vn, vd;
  shape_of(q, "Q", qb, qh, qn, qd);
  shape_of(k, "K", kb, kh, kn, kd);
  shape_of(v, "V", vb, vh, vn, vd);
  if (q.shape.size() != k.shape.size() || q.shape.size() != v.shape.size() || kb != qb ||
      vb != qb || kh != qh || vh != qh || kd != qd || vd != qd || vn != kn)
    throw InputError("mismatched shapes: need Q (B, H, Nq, d), K and V (B, H, Nk, d), all 2-D or all 4-D");
  in.rank = int(q.shape.size());
  in.s = {qb, qh, qn, kn, qd};
  spec.q_path = spec.k_path = spec.v_path = "";
  spec.nq = qn;
  spec.nk = kn;
  spec.d = qd;
  validate_sizes(spec);
  in.scale = spec.scale ? float(*spec.scale) : float(1.0 / std::sqrt(double(qd)));
  in.M = spec.M;
  in.Q = std::move(q.data);
  in.K = std::move(k.data);
  in.V = std::move(v.data);
  return in;
}

int run_gpu(const RunFlags& rf, int variant, const std::string& out_o, const std::string& out_lse,
            const std::vector<int64_t>& kv_lens, const BackwardFlags& bwd) {
  const Inputs in = load_inputs(rf, kv_lens);
  if (bwd.backward)
    return run_gpu_backward(rf, bwd, {in.s, in.rank, &in.Q, &in.K, &in.V, in.scale, in.M, in.features}, variant,
                            out_o, out_lse);
  const Schedule sched = parse_schedule(rf.schedule);
  const ScheduleInfo& info = schedule_info(sched);
  const gpu::DeviceSchedule& dev = gpu::device_schedule(sched);
  const gpu::Shape& s = in.s;
  Tiling t;
  if (info.tiled) t = make_tiling(s.nq, s.nk, s.d, in.M, rf.br, rf.bc);
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
  if (!out_o.empty()) write_npy(out_o, r.O.data(), o_shape);
  if (!out_lse.empty()) write_npy(out_lse, r.lse.data(), l_shape);
  const gpu::DeviceInfo device = gpu::device_info();
  std::printf("gpu        %s on %s, dtype %s\n", info.device_title, device.name.c_str(), dtype_name(in.features.dtype));
  std::printf("shape      B = %lld, H = %lld, Nq = %lld, Nk = %lld, d = %lld, tau = %.9g\n",
              (long long)s.B, (long long)s.H, (long long)s.nq, (long long)s.nk, (long long)s.d, in.scale);
  if (info.tiled)
    std::printf("tiling     M = %lld, Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld, %s variant %d\n",
                (long long)in.M, (long long)t.Br, (long long)t.Bc, (long long)t.Tr, (long long)t.Tc,
                schedule_name(sched), r.variant);
  std::printf("device mem %.3f MiB allocated\n", r.device_bytes / 1048576.0);
  if (!out_o.empty()) std::printf("wrote      %s\n", out_o.c_str());
  if (!out_lse.empty()) std::printf("wrote      %s\n", out_lse.c_str());
  return 0;
}

}  // namespace

void add_gpu_run_command(CLI::App& app, const SetAction& set_action) {
  // flashstep gpu
  static RunFlags gf;
  static int g_variant = 0;
  static std::string out_o, out_lse;
  static std::vector<int64_t> kv_lens;
  static BackwardFlags bwd;
  auto* g = app.add_subcommand("gpu", "run a schedule on the GPU and write O and lse as .npy "
                                      "(inputs 2-D (N, d) or 4-D (B, H, N, d))");
  add_run_flags(g, gf);
  g->add_option("--variant", g_variant, kFloat32VariantHelp);
  g->add_option("--kv-lens", kv_lens, "valid key length per batch entry (B values, 4-D inputs): key padding");
  g->add_option("--out-o", out_o, "write O (float32; (Nq, d) or (B, H, Nq, d)) to a .npy file");
  g->add_option("--out-lse", out_lse, "write lse = m + log l (float32; (Nq) or (B, H, Nq))");
  add_backward_flags(g, bwd);  // --backward, --do, --out-dq/-dk/-dv: app/cmd_backward_gpu.cpp
  static std::string snapshots;
  g->add_option("--snapshots", snapshots, "write the state after every j (fa1: O, l, m in HBM; fa2: O_i, l_i, m_i on "
                                          "chip; with --backward dQ) and the final O, lse to a folder for compare");
  g->callback([&set_action] {
    set_action([] {
      if (snapshots.empty()) return run_gpu(gf, g_variant, out_o, out_lse, kv_lens, bwd);
      if (!kv_lens.empty()) throw InputError("--snapshots takes one head: drop --kv-lens (use --kv-len)");
      if (!out_o.empty() || !out_lse.empty() || !bwd.out_dq.empty() || !bwd.out_dk.empty() || !bwd.out_dv.empty())
        throw InputError("--snapshots writes the final O, lse (and dQ) into its folder: drop --out-o/--out-lse/--out-d*");
      return run_gpu_snapshots(gf, g_variant, snapshots, bwd);
    });
  });
}

}  // namespace flashstep
