// flashstep verify: the CPU engine and the GPU on the same inputs; O, l, m compared after
// every j (fa1) and O, lse at the end (fa2, standard).
//
//
// Tolerance rule: core/tolerance.h (shared with compare). fa1 is compared after every j
// (snapshots); fa2 and standard at the end only (O and lse): fa2's per-j state never leaves
// the chip in the normal kernel (gpu --snapshots has a variant that dumps it; see compare).
#include "app/cmd_backward_gpu.h"
#include "app/cmd_backward_tc.h"
#include "app/cmd_decode_gpu.h"
#include "core/schedules/decode/decode.h"
#include "app/cmd_tensor_cores.h"
#include "app/commands.h"
#include "core/export.h"
#include "core/verify.h"
#include "app/run_printer.h"
#include "core/tolerance.h"
#include "core/schedule_registry.h"
#include "gpu/backend.h"
#include "gpu/schedules.h"
#include "gpu/trace_align.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace flashstep {

namespace {

Mat to_mat(const std::vector<float>& v, int64_t rows, int64_t cols, int64_t offset = 0) {
  Mat m(rows, cols);
  std::copy(v.begin() + offset, v.begin() + offset + rows * cols, m.data());
  return m;
}

ErrorStats diff(const Mat& gpu, const Mat& cpu) { return compare(gpu, cpu.cast<double>().eval()); }


// verify for schedules without per-j state in HBM (fa2, standard): the final O and lse of the
// CPU engine and the GPU.
int run_verify_final(const Problem& p, const Tiling& t, int variant, double tiled_tol) {
  gpu::Shape s;
  s.nq = p.nq;
  s.nk = p.nk;
  s.d = p.d;
  const gpu::Features f = gpu::features_of(p.options(), p.seed);
  gpu::check_features(f, s);
  const ScheduleInfo& info = schedule_info(p.schedule);
  const gpu::DeviceSchedule& dev = gpu::device_schedule(p.schedule);
  const bool tiled = info.tiled;
  check_standard_float32(p.schedule, p.dtype);  // app/gpu_requests.cpp
  const int v = dev.resolve_variant ? dev.resolve_variant(variant, t, p.d) : 0;  // fail fast
  RunOptions opt;
  opt.record = false;
  const Trace tr = run_problem(p, t, opt);
  gpu::ForwardOptions go;
  go.variant = v;
  go.features = f;
  const gpu::Result g = dev.forward(p.Q.data(), p.K.data(), p.V.data(), s, p.scale, t, go);
  const gpu::DeviceInfo device = gpu::device_info();
  const double o_tol = tiled_o_tol(p.schedule, p.dtype, tiled_tol);
  std::printf("verify     %s, CPU engine vs GPU (%s%s), final state\n",
              info.device_title, device.name.c_str(),
              dev.resolve_variant ? (std::string(", ") + info.name + " variant " + std::to_string(g.variant)).c_str() : "");
  std::printf("problem    Nq = %lld, Nk = %lld, d = %lld, tau = %.9g, inputs %s (seed %llu), dtype %s\n",
              (long long)p.nq, (long long)p.nk, (long long)p.d, p.scale, p.pattern.c_str(),
              (unsigned long long)p.seed, dtype_name(p.dtype));
  std::printf("options    mask %s; dropout %g\n", p.mask.describe().c_str(), p.dropout);
  if (tiled)
    std::printf("tiling     M = %lld, Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld\n", (long long)p.M,
                (long long)t.Br, (long long)t.Bc, (long long)t.Tr, (long long)t.Tc);
  std::printf("note       %s\n", dev.verify_note);
  std::printf("tolerance  CPU vs GPU: O max rel <= %.3g%s, lse <= %.0e; each vs float64 <= %.0e%s\n\n",
              o_tol, p.dtype == Dtype::fp32 ? "" : " (one ulp of the storage type)", tiled_tol,
              kFloat64Tol, p.dtype == Dtype::fp32 ? "" : " (fp32 only; reported for 16-bit types)");
  bool ok = true;
  for (float x : g.O)
    if (std::isnan(x)) ok = false;
  for (float x : g.lse)
    if (std::isnan(x)) ok = false;
  if (!ok) std::printf("GPU output has NaN elements (unwritten, or a masked row gone wrong)\n");
  // The checks (core/verify.h): GPU vs CPU, then each against float64.
  const EngineOutput gpu_out{"GPU", g.O.data(), g.lse.data()};
  const ForwardCheck final_state = final_check("GPU vs CPU:", tr, gpu_out, o_tol, tiled_tol);
  const Float64Checks f64 = float64_checks(tr, "CPU", 1, {gpu_out});
  ok = ok && final_state.pass() && f64.pass();
  print_check("final      ", final_state);
  std::printf("           O elements bit-identical: %lld of %lld\n", (long long)identical_elements(tr, g.O.data()),
              (long long)(p.nq * p.d));
  print_float64_checks(f64);
  std::printf("%s\n", ok ? "PASS" : "FAIL: a difference is over its tolerance");
  return ok ? 0 : 1;
}

int run_verify(const RunFlags& rf, int variant, double tiled_tol) {
  const ProblemSpec spec = rf.to_spec();
  reject_p_dtype_on_float32_kernels(spec);
  const Problem p = make_problem(spec);
  const Tiling t = make_tiling(p);
  const ScheduleInfo& info = schedule_info(p.schedule);
  const gpu::DeviceSchedule& dev = gpu::device_schedule(p.schedule);
  // Split-KV: the partials of every split too (app/cmd_decode_gpu.cpp).
  if (schedule_splits_kv(p.schedule)) return run_verify_decode(p, t, variant, tiled_tol);
  if (!dev.verify_per_j) return run_verify_final(p, t, variant, tiled_tol);
  // The HBM state (O, l, m) after every j, against the GPU's per-j snapshots (Algorithm 1).
  gpu::Shape s;
  s.nq = p.nq;
  s.nk = p.nk;
  s.d = p.d;
  const int v = dev.resolve_variant ? dev.resolve_variant(variant, t, p.d) : 0;  // fail fast, before the CPU run

  RunOptions opt;
  opt.record = true;
  Trace tr;
  bool recorded = true;
  try {
    tr = run_problem(p, t, opt);
  } catch (const InputError& e) {  // the trace would be too large: compare final state only
    recorded = false;
    opt.record = false;
    tr = run_problem(p, t, opt);
    std::printf("note: %s; comparing the final state only\n", e.what());
  }
  gpu::ForwardOptions go;
  go.variant = v;
  go.snapshots = recorded;
  go.features = gpu::features_of(p.options(), p.seed);
  const gpu::Result g = dev.forward(p.Q.data(), p.K.data(), p.V.data(), s, p.scale, t, go);
  const gpu::DeviceInfo device = gpu::device_info();

  std::printf("verify     %s, CPU step engine vs GPU (%s, %s variant %d)\n", info.device_title,
              device.name.c_str(), info.name, g.variant);
  std::printf("problem    Nq = %lld, Nk = %lld, d = %lld, tau = %.9g, inputs %s (seed %llu), dtype %s\n",
              (long long)p.nq, (long long)p.nk, (long long)p.d, p.scale, p.pattern.c_str(),
              (unsigned long long)p.seed, dtype_name(p.dtype));
  std::printf("tiling     M = %lld, Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld\n", (long long)p.M,
              (long long)t.Br, (long long)t.Bc, (long long)t.Tr, (long long)t.Tc);
  std::printf("options    mask %s; dropout %g\n", p.mask.describe().c_str(), p.dropout);
  // fa1 rounds O to the storage type at every j: a one-ulp disagreement at one j carries into
  // the next update, so 16-bit O gets two ulp (ScheduleInfo::o_storage_ulps).
  const bool judged = p.dtype == Dtype::fp32;
  const double o_tol = tiled_o_tol(p.schedule, p.dtype, tiled_tol);
  std::printf("tolerance  CPU tiled vs GPU tiled max rel <= %.0e (O: %.3g); each vs float64 <= %.0e%s\n\n",
              tiled_tol, o_tol, kFloat64Tol, judged ? "" : " (fp32 only; reported for 16-bit types)");

  bool ok = true;
  double worst[3] = {0, 0, 0};
  if (recorded) {
    const std::vector<size_t> at = gpu::fa1_steps_after_each_j(tr);
    Cursor c(tr);
    const bool print_all = t.Tc <= 64;
    std::printf("%6s | %10s %10s | %10s %10s | %10s %10s |\n", "j", "O abs", "O rel", "l abs",
                "l rel", "m abs", "m rel");
    for (int64_t j = 0; j < t.Tc; ++j) {
      c.seek(at[size_t(j)]);
      const gpu::ForwardSnapshot& sn = g.snapshots[size_t(j)];
      const ErrorStats eo = diff(to_mat(sn.O, p.nq, p.d), c.hbm(Tensor::O));
      const ErrorStats el = diff(to_mat(sn.l, p.nq, 1), c.hbm(Tensor::l));
      const ErrorStats em = diff(to_mat(sn.m, p.nq, 1), c.hbm(Tensor::m));
      worst[0] = std::max(worst[0], eo.max_rel);
      worst[1] = std::max(worst[1], el.max_rel);
      worst[2] = std::max(worst[2], em.max_rel);
      const bool jok = eo.max_rel <= o_tol && el.max_rel <= tiled_tol && em.max_rel <= tiled_tol;
      ok = ok && jok;
      if (print_all || j < 4 || j >= t.Tc - 4 || !jok)
        std::printf("%6lld | %10.3g %10.3g | %10.3g %10.3g | %10.3g %10.3g | %s\n", (long long)j,
                    eo.max_abs, eo.max_rel, el.max_abs, el.max_rel, em.max_abs, em.max_rel,
                    verdict(jok));
      else if (j == 4)
        std::printf("%6s | (rows for j = 4 .. %lld not printed; each within tolerance unless listed)\n",
                    "...", (long long)(t.Tc - 5));
    }
    std::printf("worst over j: O rel %.3g, l rel %.3g, m rel %.3g\n\n", worst[0], worst[1], worst[2]);
  }

  // Final state (core/verify.h's checks).
  const EngineOutput gpu_out{std::string("GPU ") + info.name, g.O.data(), g.lse.data()};
  const ForwardCheck final_state = final_check("GPU vs CPU tiled:", tr, gpu_out, o_tol, tiled_tol);
  ok = ok && final_state.pass();
  print_check("final      ", final_state);
  if (recorded && !g.l.empty()) {  // the final row statistics in HBM
    Cursor c(tr);
    c.run_to_end();
    const ErrorStats el = diff(to_mat(g.l, p.nq, 1), c.hbm(Tensor::l));
    const ErrorStats em = diff(to_mat(g.m, p.nq, 1), c.hbm(Tensor::m));
    const bool lm_ok = el.max_rel <= tiled_tol && em.max_rel <= tiled_tol;
    ok = ok && lm_ok;
    std::printf("           GPU vs CPU tiled:   l abs %.3g rel %.3g; m abs %.3g rel %.3g  %s\n",
                el.max_abs, el.max_rel, em.max_abs, em.max_rel, verdict(lm_ok));
  }
  if (reference_affordable(p.nq, p.nk, p.d)) {  // beside them, the standard baseline in float32
    gpu::ForwardOptions so_;
    so_.features = go.features;
    so_.features.dtype = Dtype::fp32;  // the standard baseline is float32 on the GPU
    const ScheduleInfo& base = baseline_schedule();
    const gpu::Result st = gpu::device_schedule(base.id).forward(p.Q.data(), p.K.data(), p.V.data(), s, p.scale, t, so_);
    const EngineOutput std_out{std::string("GPU ") + base.name + " (float32)", st.O.data(), st.lse.data(), true};
    const Float64Checks f64 = float64_checks(tr, std::string("CPU ") + info.name, 1, {gpu_out, std_out});
    ok = ok && f64.pass();
    print_float64_checks(f64);
  } else {
    std::printf("           float64 reference skipped (Nq*Nk*d over %.0e)\n", kMaxReferenceWork);
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL: a difference is over its tolerance");
  return ok ? 0 : 1;
}

}  // namespace

void add_verify_command(CLI::App& app, const SetAction& set_action) {
  // flashstep verify; its flags and the checks that need no GPU: app/gpu_requests.cpp
  static VerifyRequest r;
  auto* verify = add_verify_subcommand(app, r, "run the CPU engine and the GPU on the same inputs; "
                                               "compare O, l, m after every j (fa1) and O, lse at the end");
  verify->callback([&set_action] {
    set_action([] {
      check_verify_request(r);
      if (r.tensor_cores && r.bwd.backward)  // app/cmd_backward_tc.cpp
        return run_verify_backward_tensor_cores(r.rf, r.bwd, r.variant);
      if (r.tensor_cores) return run_verify_tensor_cores(r.rf, r.variant);  // app/cmd_tensor_cores.cpp
      return r.bwd.backward ? run_verify_backward(r.rf, r.bwd, r.variant) : run_verify(r.rf, r.variant, r.tol);
    });
  });
}

}  // namespace flashstep
