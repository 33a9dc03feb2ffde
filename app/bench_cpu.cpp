// flashstep bench-cpu: how fast the step engine records, how much memory a trace takes, and
// the unrecorded Algorithm 1 path against standard attention with Eigen, on one CPU core.
// A benchmark that prints figures, not a test: machines here are shared and noisy.
#include "app/commands.h"
#include "core/checked.h"
#include "core/schedule_registry.h"
#include "core/work.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

namespace flashstep {
namespace {

// The recorded run's trace (RunOptions::max_trace_bytes), refused up front past this.
constexpr size_t kMaxBenchTraceBytes = size_t(4) << 30;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <typename F>
double median_seconds(int64_t reps, F&& f) {
  std::vector<double> times;
  for (int64_t r = 0; r < reps; ++r) {
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

constexpr int64_t kMaxBenchReps = 1000;  // --reps; the work estimate caps reps x sizes too

struct BenchCpuCommand {
  std::vector<int64_t> sizes = {1024, 2048, 4096};
  int64_t d = 64, reps = 5;
  mutable int64_t M = 16384;  // from M_text by check_limits, which every run starts with
  std::string M_text;  // --M as typed: elements, or KiB as in 64KiB (parse_sram_size, as run reads it)
  bool as_json = false;

  void add_flags(CLI::App* b) {
    b->add_option("--n", sizes, "sequence lengths (default 1024 2048 4096)");
    b->add_option("--d", d, "head dimension (default 64)");
    b->add_option("--M", M_text, "SRAM size: elements (float32 words), or KiB as in 64KiB (default 16384)");
    b->add_option("--reps", reps, "repetitions per timing, 1 to 1000; the median is reported (default 5)");
    b->add_flag("--json", as_json, "print JSON instead of a table");
  }

  // Every size checked, then the whole benchmark's work and each size's memory estimated, as
  // run does (core/work.h), before anything is printed: each size runs fa1 recorded
  // max(1, reps / 2) times, then fa1 unrecorded, standard attention with Eigen (S, P in memory)
  // and standard attention through the simulator reps times each.
  void check_limits() const {
    if (!M_text.empty()) M = parse_sram_size(M_text);
    checked::in_range(reps, 1, kMaxBenchReps, "--reps");
    const WorkLimits lim;
    const double rec_reps = double(std::max<int64_t>(1, reps / 2));
    double gflop = 0;
    for (int64_t n : sizes) {
      const ProblemSpec spec = sizes_spec(n, n, d, M);  // the default schedule: Algorithm 1
      validate_sizes(spec);
      const Tiling t = make_tiling(n, n, d, M);
      const WorkEstimate fa1 = estimate_work(n, n, d, t, spec.schedule, 4);
      const WorkEstimate standard = estimate_work(n, n, d, t, baseline_schedule().id, 4);
      gflop += fa1.gflop * (rec_reps + double(reps)) + standard.gflop * 2 * double(reps);
    }
    std::ostringstream os;
    os.precision(3);
    if (gflop > lim.max_gflop) {
      os << "bench-cpu: these sizes and repetitions are about " << gflop << " GFLOP of simulated work (limit "
         << int64_t(lim.max_gflop) << " GFLOP, several minutes or more); use smaller --n or --d, or fewer --reps";
      throw InputError(os.str());
    }
    for (int64_t n : sizes) {
      const Tiling t = make_tiling(n, n, d, M);
      const double nn = double(n) * double(n) * 4;  // Eigen's S = tau Q K^T, float32
      const double hbm = estimate_work(n, n, d, t, baseline_schedule().id, 4).hbm_bytes + nn;
      if (hbm > lim.max_hbm_bytes) {
        os << "bench-cpu --n " << n << ": standard attention would need about " << hbm / double(1 << 20)
           << " MiB for S and P (limit " << int64_t(lim.max_hbm_bytes) / (1 << 20) << " MiB); use a smaller --n";
        throw InputError(os.str());
      }
      Problem sizes_only;  // the trace estimate reads the sizes alone
      sizes_only.nq = sizes_only.nk = n;
      sizes_only.d = d;
      sizes_only.M = M;
      const size_t trace = estimate_trace_bytes(sizes_only, t);
      if (trace > kMaxBenchTraceBytes) {
        os << "bench-cpu --n " << n << ": the recorded run's trace would take about " << trace / double(1 << 20)
           << " MiB (limit " << (kMaxBenchTraceBytes >> 20) << " MiB); use a smaller --n or a larger --M";
        throw InputError(os.str());
      }
    }
  }

  int execute() const {
    check_limits();
    nlohmann::json rows = nlohmann::json::array();
    if (!as_json)
      std::printf("%6s %4s %6s | %10s %12s %10s | %12s %12s %12s %8s\n", "N", "d", "M", "record s", "steps/s",
                  "trace MiB", "fa1 fast s", "std(Eigen) s", "std(sim) s", "fa1/std");
    for (int64_t n : sizes) {
      Problem p = make_problem(sizes_spec(n, n, d, M));
      const Tiling t = make_tiling(n, n, d, M);
      RunOptions rec;
      rec.max_trace_bytes = kMaxBenchTraceBytes;
      size_t trace_bytes = 0, steps = 0;
      const double t_rec = median_seconds(std::max<int64_t>(1, reps / 2), [&] {
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
        std::printf("%6lld %4lld %6lld | %10.3f %12.0f %10.1f | %12.4f %12.4f %12.4f %8.2f\n", (long long)n,
                    (long long)d, (long long)M, t_rec, steps / t_rec, trace_bytes / 1048576.0, t_fast, t_eigen, t_std,
                    ratio);
    }
    if (as_json) std::printf("%s\n", rows.dump(1).c_str());
    else
      std::printf("record s: full recording of Algorithm 1 (median); fa1 fast: unrecorded "
                  "Algorithm 1; std(Eigen): S = QK^T, softmax, PV with Eigen; std(sim): "
                  "Algorithm 0 through the memory model. Targets: record N=4096 < 2 s and "
                  "< 512 MiB; fa1/std <= 1.5.\n");
    return 0;
  }
};

}  // namespace

void add_bench_cpu_command(CLI::App& app, const SetAction& set_action) {
  add_command<BenchCpuCommand>(app, set_action, "bench-cpu", "benchmark the CPU step engine (prints a table)");
}

}  // namespace flashstep
