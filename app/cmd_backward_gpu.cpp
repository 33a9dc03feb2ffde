// The GPU backward on the command line: gpu --backward, verify --backward,
// bench-gpu --backward.
//
// Tolerance rule of verify --backward (docs/backward.md, "Tolerance of the GPU tests"):
//   errors are normwise, max|x - ref| / max|ref|, but for dQ and dK never relative to less than
//   a thousandth of one term of their sums, tau d max|dO| max|V| max|K| (resp. max|Q|), because
//   dS = P o (dP - D) cancels where softmax saturates.
//   each engine vs the float64 reference: 1e-5 (the CPU engine's own bound);
//   GPU vs CPU engine: 2e-5, since both are within 1e-5 of the same float64 values. dQ's
//     atomic adds make its order of summation over j nondeterministic: a rounding-level
//     difference that this bound covers;
//   fa1 after every j: 2e-5, relative to the final gradients' size (a partial sum over j' <= j
//     carries the rounding of the terms it holds and no more).
#include "app/cmd_backward_gpu.h"

#include "app/run_printer.h"

#include "core/backward.h"
#include "core/npy.h"
#include "core/output_files.h"
#include "core/verify.h"
#include "core/tolerance.h"
#include "core/schedule_registry.h"
#include "gpu/backward.h"
#include "gpu/schedules.h"
#include "gpu/trace_align.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace flashstep {

gpu::BackwardResult run_backward_on_gpu(Schedule sched, const float* Q, const float* K, const float* V,
                                        const float* dO, const gpu::Shape& s, float scale, const Tiling& t,
                                        const gpu::BackwardOptions& o) {
  const gpu::DeviceSchedule& dev = gpu::device_schedule(sched);
  if (!dev.backward)
    throw InputError(std::string("--schedule ") + schedule_name(sched) + " has no backward pass: drop --backward");
  return dev.backward(Q, K, V, dO, s, scale, t, o);
}

namespace {

const char* backward_title(Schedule s) { return schedule_info(s).backward_device_title; }

}  // namespace

// A gradient the kernels left unwritten (NaN: the outputs are poisoned) is a bug, not input;
// one that overflows float32 comes from the inputs.
void check_gradient(const std::vector<float>& g, const char* name) {
  for (float x : g) {
    if (std::isnan(x)) throw std::runtime_error(std::string("GPU gradient ") + name + " has NaN elements");
    if (std::isinf(x))
      throw InputError(std::string("the gradient ") + name + " overflows float32: the inputs or dO "
                       "are too large for this problem");
  }
}

// dO per head, (B, H, Nq, d) row-major, by run --backward's rules: from --do (Nq x d, or
// (B, H, Nq, d) for 4-D inputs) or from the seed (head k from seed + k), checked by
// check_grad_output (shape, NaN, Inf).
std::vector<float> grad_output(const RunFlags& rf, const BackwardFlags& bf, const GpuInputs& in) {
  const gpu::Shape& s = in.s;
  Problem p;  // what check_grad_output and make_grad_output read
  p.nq = s.nq;
  p.nk = s.nk;
  p.d = s.d;
  p.seed = rf.seed;
  p.pattern = rf.pattern;
  std::vector<float> dO;
  dO.reserve(size_t(s.heads() * s.nq * s.d));
  if (in.rank == 4 && !bf.do_path.empty()) return read_grad_output_4d(bf.do_path, s, p);  // app/gpu_requests.cpp
  for (int64_t k = 0; k < s.heads(); ++k) {  // 2-D: one head, run --backward's dO exactly
    p.seed = rf.seed + uint64_t(k);
    const Mat m = backward_grad_output(bf, p, rf.pattern);
    dO.insert(dO.end(), m.data(), m.data() + m.size());
  }
  return dO;
}

BackwardOutputs::BackwardOutputs(const RunFlags& rf, const BackwardFlags& bf, const std::string& out_o,
                                 const std::string& out_lse)
    : paths_{out_o, out_lse, bf.out_dq, bf.out_dk, bf.out_dv} {
  const char* flags[] = {"--out-o", "--out-lse", "--out-dq", "--out-dk", "--out-dv"};
  for (size_t k = 0; k < paths_.size(); ++k)
    if (!paths_[k].empty()) out_.add(paths_[k], flags[k]);
  const std::pair<const std::string*, const char*> inputs[] = {
      {&rf.q, "--q"}, {&rf.k, "--k"}, {&rf.v, "--v"}, {&bf.do_path, "--do"}};
  for (const auto& [path, what] : inputs)
    if (!path->empty()) out_.add_input(*path, what);
  out_.check();  // before the GPU work
}

void BackwardOutputs::stage(const GpuInputs& in, const std::vector<float>& O, const std::vector<float>& lse,
                            const std::vector<float>& dQ, const std::vector<float>& dK, const std::vector<float>& dV) {
  for (float x : O)
    if (std::isnan(x)) throw std::runtime_error("GPU output O has unwritten (NaN) elements");
  check_gradient(dQ, "dQ");
  check_gradient(dK, "dK");
  check_gradient(dV, "dV");
  const gpu::Shape& s = in.s;
  const bool r4 = in.rank == 4;
  const std::vector<int64_t> q_shape = r4 ? std::vector<int64_t>{s.B, s.H, s.nq, s.d} : std::vector<int64_t>{s.nq, s.d},
                             k_shape = r4 ? std::vector<int64_t>{s.B, s.H, s.nk, s.d} : std::vector<int64_t>{s.nk, s.d},
                             l_shape = r4 ? std::vector<int64_t>{s.B, s.H, s.nq} : std::vector<int64_t>{s.nq};
  const std::pair<const std::vector<float>*, const std::vector<int64_t>*> data[] = {
      {&O, &q_shape}, {&lse, &l_shape}, {&dQ, &q_shape}, {&dK, &k_shape}, {&dV, &k_shape}};
  for (size_t k = 0; k < paths_.size(); ++k)
    if (!paths_[k].empty()) out_.bytes(paths_[k]) = npy_bytes(data[k].first->data(), *data[k].second);
}

void BackwardOutputs::finish(const std::function<void()>& report) {
  out_.commit([&] {
    report();
    require_stdout_written();
  });
  for (const std::string& path : paths_)
    if (!path.empty()) std::printf("wrote      %s\n", path.c_str());
}

int run_gpu_backward(const RunFlags& rf, const BackwardFlags& bf, const GpuInputs& in, int variant,
                     const std::string& out_o, const std::string& out_lse) {
  const gpu::Shape& s = in.s;
  check_float32_storage(in.features.dtype);
  const Schedule sched = parse_schedule(rf.schedule);
  const std::vector<float> dO = grad_output(rf, bf, in);
  BackwardOutputs out(rf, bf, out_o, out_lse);
  const gpu::DeviceInfo info = gpu::device_info();

  Tiling t;
  if (schedule_info(sched).tiled) t = make_tiling(s.nq, s.nk, s.d, in.M, rf.br, rf.bc);
  gpu::BackwardOptions o;
  o.variant = variant;
  o.features = in.features;
  const gpu::BackwardResult r =
      run_backward_on_gpu(sched, in.Q->data(), in.K->data(), in.V->data(), dO.data(), s, in.scale, t, o);
  out.stage(in, r.O, r.lse, r.dQ, r.dK, r.dV);
  out.finish([&] {  // printed once the files are written, before they are renamed into place
    std::printf("gpu        forward + backward, %s on %s, float32\n", backward_title(sched), info.name.c_str());
    std::printf("shape      B = %lld, H = %lld, Nq = %lld, Nk = %lld, d = %lld, tau = %.9g\n", (long long)s.B,
                (long long)s.H, (long long)s.nq, (long long)s.nk, (long long)s.d, in.scale);
    std::printf("dO         %s\n", bf.do_path.empty() ? ("from seed " + std::to_string(rf.seed)).c_str() : bf.do_path.c_str());
    if (schedule_info(sched).tiled)
      std::printf("tiling     M = %lld, Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld, backward variant %d\n",
                  (long long)in.M, (long long)t.Br, (long long)t.Bc, (long long)t.Tr, (long long)t.Tc, r.variant);
    std::printf("device mem %.3f MiB allocated\n", r.device_bytes / 1048576.0);
  });
  return 0;
}

namespace {

Mat head_of(const std::vector<float>& v, int64_t rows, int64_t cols) {
  return Eigen::Map<const Mat>(v.data(), rows, cols);
}


void print_err(const char* what, const GradErr& e, double tol) {
  std::printf("%-26s dQ %10.3g   dK %10.3g   dV %10.3g   %s\n", what, e.dq, e.dk, e.dv, verdict(e.worst() <= tol));
}

}  // namespace

int run_verify_backward(const RunFlags& rf, const BackwardFlags& bf, int variant) {
  const Problem p = make_problem(rf.to_spec());
  check_float32_storage(p.dtype);
  const Tiling t = make_tiling(p);
  const Mat dO = backward_grad_output(bf, p, rf.pattern);
  const gpu::Shape s{1, 1, p.nq, p.nk, p.d};
  gpu::BackwardOptions o;
  o.variant = variant;
  o.features = gpu::features_of(p.options(), p.seed);
  gpu::check_features(o.features, s);
  const ScheduleInfo& sched = schedule_info(p.schedule);
  if (sched.tiled) o.variant = gpu::resolve_backward_variant(variant, t, p.d);  // fail fast
  const gpu::DeviceInfo info = gpu::device_info();  // no GPU: say so before the CPU run

  const bool per_j = gpu::device_schedule(p.schedule).verify_per_j;
  RunOptions opt;
  opt.record = per_j;  // the per-j comparison needs the trace
  opt.dO = &dO;
  Trace tr;
  try {
    tr = run_problem(p, t, opt);
  } catch (const InputError& e) {  // the trace would be too large: compare the final state only
    if (!opt.record) throw;
    opt.record = false;
    tr = run_problem(p, t, opt);
    std::printf("note: %s; comparing the final state only\n", e.what());
  }
  o.snapshots = per_j && opt.record;
  const gpu::BackwardResult g = run_backward_on_gpu(p.schedule, p.Q.data(), p.K.data(), p.V.data(), dO.data(), s,
                                             p.scale, t, o);

  std::printf("verify     %s backward, CPU engine vs GPU (%s%s)\n", backward_title(p.schedule), info.name.c_str(),
              !sched.tiled ? "" : (", backward variant " + std::to_string(g.variant)).c_str());
  std::printf("problem    Nq = %lld, Nk = %lld, d = %lld, tau = %.9g, inputs %s (seed %llu), dO %s\n",
              (long long)p.nq, (long long)p.nk, (long long)p.d, p.scale, p.pattern.c_str(),
              (unsigned long long)p.seed, bf.do_path.empty() ? "from the seed" : bf.do_path.c_str());
  if (sched.tiled)
    std::printf("tiling     M = %lld, Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld\n", (long long)p.M,
                (long long)t.Br, (long long)t.Bc, (long long)t.Tr, (long long)t.Tc);
  std::printf("options    mask %s; dropout %g\n", p.mask.describe().c_str(), p.dropout);
  std::printf("tolerance  max|x - ref| / max|ref| (dQ, dK: at least 1e-3 of one term of the sum); GPU vs CPU "
              "<= %.0e%s; each vs float64 <= %.0e\n\n", kGradTiledTol, per_j ? " (also after every j)" : "",
              kGradFloat64Tol);

  bool ok = true;
  for (const auto* v : {&g.dQ, &g.dK, &g.dV})
    for (float x : *v)
      if (!std::isfinite(x)) ok = false;
  if (!ok) std::printf("GPU gradients have NaN or Inf elements (unwritten, or a masked row gone wrong)\n");
  const MatD cq = tr.dQ.cast<double>(), ck = tr.dK.cast<double>(), cv = tr.dV.cast<double>();
  const GradScale cpu_scale = grad_scale(p, dO, cq, ck, cv);
  const Mat gq = head_of(g.dQ, p.nq, p.d), gk = head_of(g.dK, p.nk, p.d), gv = head_of(g.dV, p.nk, p.d);

  if (o.snapshots) {  // Algorithm 4's HBM after all Q blocks of each j (after Alg4 L24 of j)
    const std::vector<size_t> at = gpu::fa1_backward_steps_after_each_j(tr);
    Cursor c(tr);
    const bool print_all = t.Tc <= 64;
    double worst = 0;
    std::printf("%6s | %10s %10s %10s | (relative to the final gradients' size)\n", "j", "dQ", "dK", "dV");
    for (int64_t j = 0; j < t.Tc; ++j) {
      c.seek(at[size_t(j)]);
      const gpu::GradSnapshot& sn = g.snapshots[size_t(j)];
      const GradErr e = grad_err(head_of(sn.dQ, p.nq, p.d), head_of(sn.dK, p.nk, p.d), head_of(sn.dV, p.nk, p.d),
                                 c.hbm(Tensor::dQ).cast<double>(), c.hbm(Tensor::dK).cast<double>(),
                                 c.hbm(Tensor::dV).cast<double>(), cpu_scale);
      const bool jok = sn.j == j && e.worst() <= kGradTiledTol;
      ok = ok && jok;
      worst = std::max(worst, e.worst());
      if (print_all || j < 4 || j >= t.Tc - 4 || !jok)
        std::printf("%6lld | %10.3g %10.3g %10.3g | %s\n", (long long)j, e.dq, e.dk, e.dv, verdict(jok));
      else if (j == 4)
        std::printf("%6s | (rows for j = 4 .. %lld not printed; each within tolerance unless listed)\n", "...",
                    (long long)(t.Tc - 5));
    }
    std::printf("worst over j: %.3g\n\n", worst);
  }

  const GradErr gc = grad_err(gq, gk, gv, cq, ck, cv, cpu_scale);
  ok = ok && gc.worst() <= kGradTiledTol;
  print_err("final      GPU vs CPU", gc, kGradTiledTol);
  const GradFloat64Checks f64 = grad_float64_checks(tr, gq, gk, gv);  // core/verify.h
  if (f64.measured) {
    ok = ok && f64.pass();
    print_err("           GPU vs float64", f64.gpu, kGradFloat64Tol);
    print_err("           CPU vs float64", f64.cpu, kGradFloat64Tol);
  } else {
    std::printf("           float64 reference skipped (Nq*Nk*d over %.0e)\n", kMaxReferenceWork);
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL: a difference is over its tolerance");
  return ok ? 0 : 1;
}

int run_bench_backward(const BackwardBenchFlags& bf) {
  check_bench_backward_request(bf);  // app/gpu_requests.cpp
  const gpu::DeviceInfo info = gpu::device_info();
  std::vector<Schedule> scheds;  // every schedule with GPU kernels but those --no-NAME drops
  for (const gpu::DeviceSchedule* dev : gpu::device_schedules())
    if (!bf.skips(schedule_name(dev->id))) scheds.push_back(dev->id);
  const char* base = baseline_schedule().name;  // "x std": the baseline's total time over each
  nlohmann::json rows = nlohmann::json::array();
  if (!bf.as_json) {
    std::printf("bench-gpu --backward on %s (%d SMs), float32, CUDA events, %d warm-up runs (at least %.0f ms), median of %d\n",
                info.name.c_str(), info.sm_count, bf.warmup, gpu::timing_warmup_ms(bf.warmup), bf.reps);
    std::printf("backward TFLOP/s = 2.5 x 4 B H N^2 d / backward time; peak = device memory of forward + "
                "backward; x std = standard's total time / this total\n\n");
    std::printf("%6s %4s %4s %3s %-8s %4s %4s %2s | %9s %9s %9s | %8s | %9s | %6s\n", "N", "d", "B", "H", "schedule",
                "Br", "Bc", "v", "fwd ms", "bwd ms", "total ms", "bwd TF/s", "peak MiB", "x std");
  }
  for (int64_t d : bf.dims) {
    for (int64_t n : bf.sizes) {
      const gpu::Shape s = bf.shape(n, d);
      const float scale = float(1.0 / std::sqrt(double(d)));
      const double flops_bwd = 2.5 * 4.0 * double(s.heads()) * double(n) * double(n) * double(d);
      nlohmann::json row = {{"n", n}, {"d", d}, {"B", s.B}, {"H", s.H}, {"backward_flops", flops_bwd}};
      for (Schedule sched : scheds) {
        try {
          Tiling t = make_tiling(n, n, d, bf.M);
          if (bf.variant == 0) {
            // The paper's Br, Bc from M may have no register-tiled backward kernel (variants 2
            // and 3 are compiled for a few (Br, Bc, d) only): then time 64 x 64 where one is
            // compiled for this d, else 32 x 32.
            auto tiled = [d](const Tiling& x) {
              return gpu::backward_shared_bytes(3, x, d) > 0 || gpu::backward_shared_bytes(2, x, d) > 0;
            };
            if (!tiled(t)) t = make_tiling(n, n, d, bf.M, 64, 64);
            if (!tiled(t)) t = make_tiling(n, n, d, bf.M, 32, 32);
          }
          gpu::BackwardOptions o;
          o.variant = bf.variant;
          const gpu::BackwardTiming b = gpu::bench_backward(sched, s, scale, t, o, bf.warmup, bf.reps, 7);
          nlohmann::json r = {{"forward_ms", b.forward.median_ms}, {"backward_ms", b.backward.median_ms},
                              {"total_ms", b.total.median_ms}, {"backward_min_ms", b.backward.min_ms},
                              {"backward_max_ms", b.backward.max_ms}, {"reps", b.total.reps},
                              {"backward_tflops", flops_bwd / (b.backward.median_ms * 1e9)},
                              {"peak_bytes", b.total.peak_bytes}, {"variant", b.backward.variant}};
          if (schedule_info(sched).tiled) r.update({{"Br", t.Br}, {"Bc", t.Bc}});
          row[schedule_name(sched)] = r;
        } catch (const InputError& e) {
          row[schedule_name(sched)] = {{"skipped", e.what()}};
        }
      }
      const bool have_std = row.contains(base) && row[base].contains("total_ms");
      for (Schedule sched : scheds) {
        auto& r = row[schedule_name(sched)];
        if (have_std && r.contains("total_ms"))
          r["standard_over_this"] = row[base]["total_ms"].get<double>() / r["total_ms"].get<double>();
        if (bf.as_json) continue;
        std::printf("%6lld %4lld %4lld %3lld %-8s", (long long)n, (long long)d, (long long)s.B, (long long)s.H,
                    schedule_name(sched));
        if (r.contains("skipped")) {
          std::printf(" skipped: %s\n", r["skipped"].get<std::string>().c_str());
          continue;
        }
        if (!schedule_info(sched).tiled) std::printf(" %4s %4s %2s", "-", "-", "-");
        else
          std::printf(" %4lld %4lld %2d", (long long)r["Br"].get<int64_t>(), (long long)r["Bc"].get<int64_t>(),
                      r["variant"].get<int>());
        std::printf(" | %9.3f %9.3f %9.3f | %8.2f | %9.1f | %6s\n", r["forward_ms"].get<double>(),
                    r["backward_ms"].get<double>(), r["total_ms"].get<double>(), r["backward_tflops"].get<double>(),
                    r["peak_bytes"].get<int64_t>() / 1048576.0,
                    r.contains("standard_over_this")
                        ? std::to_string(r["standard_over_this"].get<double>()).substr(0, 5).c_str()
                        : "-");
      }
      if (!bf.as_json) std::fflush(stdout);
      rows.push_back(row);
    }
  }
  if (bf.as_json || !bf.json_file.empty()) {
    const nlohmann::json out = {{"device", info.name}, {"sm_count", info.sm_count}, {"dtype", "float32"},
                                {"backward", true}, {"warmup", bf.warmup}, {"reps", bf.reps}, {"rows", rows}};
    if (bf.as_json) std::printf("%s\n", out.dump(1).c_str());
    if (!bf.json_file.empty()) write_file_atomic(bf.json_file, out.dump(1) + "\n");
  }
  return 0;
}

}  // namespace flashstep
