// flashstep bench-cpu: how fast the step engine records, how much memory a trace takes, and
// the unrecorded Algorithm 1 path against standard attention with Eigen, on one CPU core.
// A benchmark that prints figures, not a test: machines here are shared and noisy.
#include "app/commands.h"
#include "core/schedule_registry.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

namespace flashstep {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <typename F>
double median_seconds(int reps, F&& f) {
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    times.push_back(seconds_since(t0));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Standard attention as one would write it with Eigen: S = tau Q K^T, row softmax, O = P V.
Mat eigen_standard_attention(const Problem& p) {
  Mat S = (p.Q * p.K.transpose()) * p.scale;
  for (int64_t r = 0; r < S.rows(); ++r) {
    const float mx = S.row(r).maxCoeff();
    S.row(r) = (S.row(r).array() - mx).exp().matrix();
    S.row(r) /= S.row(r).sum();
  }
  return S * p.V;
}

}  // namespace

void add_bench_cpu_command(CLI::App& app, const SetAction& set_action) {
  static std::vector<int64_t> sizes = {1024, 2048, 4096};
  static int64_t d = 64, M = 16384;
  static int reps = 5;
  static bool as_json = false;
  auto* b = app.add_subcommand("bench-cpu", "benchmark the CPU step engine (prints a table)");
  b->add_option("--n", sizes, "sequence lengths (default 1024 2048 4096)");
  b->add_option("--d", d, "head dimension (default 64)");
  b->add_option("--M", M, "SRAM size in elements (default 16384)");
  b->add_option("--reps", reps, "repetitions per timing; the median is reported (default 5)");
  b->add_flag("--json", as_json, "print JSON instead of a table");
  b->callback([&set_action] {
    set_action([] {
      if (reps < 1) throw InputError("--reps must be at least 1");
      nlohmann::json rows = nlohmann::json::array();
      if (!as_json)
        std::printf("%6s %4s %6s | %10s %12s %10s | %12s %12s %12s %8s\n", "N", "d", "M",
                    "record s", "steps/s", "trace MiB", "fa1 fast s", "std(Eigen) s",
                    "std(sim) s", "fa1/std");
      for (int64_t n : sizes) {
        Problem p = make_problem(sizes_spec(n, n, d, M));
        const Tiling t = make_tiling(n, n, d, M);
        RunOptions rec;
        rec.max_trace_bytes = size_t(4) << 30;
        size_t trace_bytes = 0, steps = 0;
        const double t_rec = median_seconds(std::max(1, reps / 2), [&] {
          Trace tr = run_problem(p, t, rec);
          trace_bytes = tr.approx_bytes();
          steps = tr.steps.size();
        });
        RunOptions fast;
        fast.record = false;
        const double t_fast = median_seconds(reps, [&] { run_problem(p, t, fast); });
        Mat sink;
        const double t_eigen = median_seconds(reps, [&] { sink = eigen_standard_attention(p); });
        Problem ps = p;
        ps.schedule = baseline_schedule().id;
        const double t_std = median_seconds(reps, [&] { run_problem(ps, t, fast); });
        const double ratio = t_fast / t_eigen;
        rows.push_back({{"n", n}, {"d", d}, {"M", M}, {"record_s", t_rec},
                        {"steps", steps}, {"steps_per_s", steps / t_rec},
                        {"trace_bytes", trace_bytes}, {"fa1_fast_s", t_fast},
                        {"standard_eigen_s", t_eigen}, {"standard_sim_s", t_std},
                        {"fa1_over_standard", ratio}});
        if (!as_json)
          std::printf("%6lld %4lld %6lld | %10.3f %12.0f %10.1f | %12.4f %12.4f %12.4f %8.2f\n",
                      (long long)n, (long long)d, (long long)M, t_rec, steps / t_rec,
                      trace_bytes / 1048576.0, t_fast, t_eigen, t_std, ratio);
      }
      if (as_json) std::printf("%s\n", rows.dump(1).c_str());
      else
        std::printf("record s: full recording of Algorithm 1 (median); fa1 fast: unrecorded "
                    "Algorithm 1; std(Eigen): S = QK^T, softmax, PV with Eigen; std(sim): "
                    "Algorithm 0 through the memory model. Targets: record N=4096 < 2 s and "
                    "< 512 MiB; fa1/std <= 1.5.\n");
      return 0;
    });
  });
}

}  // namespace flashstep
