// flashstep bench-gpu: Algorithm 1, FlashAttention-2 and standard attention timed on the GPU,
// and the Bc sweep of the paper's Figure 2 (middle).
#include "app/cmd_backward_gpu.h"
#include "app/cmd_backward_tc.h"
#include "app/cmd_decode_gpu.h"
#include "app/cmd_tensor_cores.h"
#include "app/commands.h"
#include "core/closed_form.h"
#include "core/export.h"
#include "core/schedule_registry.h"
#include "gpu/backend.h"
#include "gpu/schedules.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace flashstep {

namespace {

// The benchmark's (B, H, N, d): B x H x N = rows (at least one head), up to 8 heads per batch.
gpu::Shape bench_shape(int64_t n, int64_t d, int64_t rows) {
  const int64_t heads = std::max<int64_t>(1, rows / n);
  gpu::Shape s;
  s.H = std::min<int64_t>(heads, 8);
  s.B = heads / s.H;
  s.nq = s.nk = n;
  s.d = d;
  return s;
}

// flashstep bench-gpu
// float32 HBM bytes of every head by the schedule's closed form (N = Nq = Nk).
int64_t bytes_predicted(const ScheduleInfo& info, int64_t heads, int64_t n, int64_t d, const Tiling& t) {
  const TrafficForm f = info.forward_traffic(n, n, d, t);
  return 4 * heads * (f.read_elems + f.write_elems);
}

bool skipped(const BenchFlags& bf, const ScheduleInfo& info) {
  return std::find(bf.skip.begin(), bf.skip.end(), info.name) != bf.skip.end();
}

// Fraction of the N x N scores a mask keeps (for FLOP counts of masked runs).
double kept_fraction(const gpu::Features& f, int64_t n) {
  const Mask& m = f.mask;  // Nq = Nk: offset 0
  double kept = 0;
  for (int64_t r = 0; r < n; ++r) kept += double(std::max<int64_t>(0, m.hi(r, n) - m.lo(r) + 1));
  return kept / (double(n) * double(n));
}

int run_bench(const BenchFlags& bf) {
  check_bench_request(bf);  // app/gpu_requests.cpp
  gpu::Features f2;  // fa2's options
  f2.mask.causal = bf.causal;
  f2.dtype = parse_dtype(bf.dtype);
  const gpu::DeviceInfo info = gpu::device_info();
  const int64_t M = parse_sram_size(bf.M);
  nlohmann::json rows = nlohmann::json::array(), sweep = nlohmann::json::array();
  if (!bf.as_json) {
    std::printf("bench-gpu on %s (%d SMs, %.0f GiB), float32, CUDA events, %d warm-up runs (at least %.0f ms), median of %d, %d calls back to back per sample\n",
                info.name.c_str(), info.sm_count, info.total_bytes / 1073741824.0, bf.warmup,
                gpu::timing_warmup_ms(bf.warmup), bf.reps, gpu::timing_batch());
    std::printf("TFLOP/s = 4 B H N^2 d / time; GB/s = HBM bytes the simulator predicts / time; "
                "peak = device memory allocated\n");
    std::printf("fa2: %s storage, %s; its TFLOP/s count the kept scores only\n\n", bf.dtype.c_str(),
                bf.causal ? "causal (fully masked blocks skipped)" : "no mask");
    // One group of columns per schedule (the registry's order), then the baseline's time over
    // the first schedule's.
    std::printf("%6s %4s %4s %3s %4s %4s", "N", "d", "B", "H", "Br", "Bc");
    for (const gpu::DeviceSchedule* dev : gpu::device_schedules())
      std::printf(" | %2s %9s %8s %9s %9s", "v", (std::string(schedule_name(dev->id)) + " ms").c_str(), "TFLOP/s",
                  "GB/s", "peak MiB");
    std::printf(" | %7s\n", (std::string(baseline_schedule().name).substr(0, 3) + "/" + schedules().front()->name).c_str());
  }
  const ScheduleInfo& first = *schedules().front();
  const ScheduleInfo& base = baseline_schedule();
  const std::string ratio_key = std::string(base.name) + "_over_" + first.name;  // "standard_over_fa1"
  for (int64_t d : bf.dims) {
    for (int64_t n : bf.sizes) {
      const gpu::Shape s = bench_shape(n, d, bf.rows);
      const float scale = float(1.0 / std::sqrt(double(d)));
      const double flops = 4.0 * double(s.heads()) * double(n) * double(n) * double(d);
      nlohmann::json row = {{"n", n}, {"d", d}, {"B", s.B}, {"H", s.H}, {"flops", flops}};
      const Tiling t = make_tiling(n, n, d, M);
      for (const gpu::DeviceSchedule* dev : gpu::device_schedules()) {
        const ScheduleInfo& info = schedule_info(dev->id);
        if (skipped(bf, info)) {  // the baseline leaves no entry, the others say why
          if (!info.baseline) row[info.name] = {{"skipped", std::string("--no-") + info.name}};
          continue;
        }
        try {
          // --dtype and --causal are the options of the schedules that take them (bench_options);
          // the others time float32 without a mask.
          const gpu::Features f = dev->bench_options ? f2 : gpu::Features{};
          const gpu::BenchTiming b = dev->bench(s, scale, t, bf.variant, f, bf.warmup, bf.reps, 7);
          nlohmann::json r = {{"median_ms", b.median_ms}, {"min_ms", b.min_ms}, {"max_ms", b.max_ms},
                              {"reps", b.reps}, {"peak_bytes", b.peak_bytes}};
          if (info.tiled) r.update({{"Br", t.Br}, {"Bc", t.Bc}, {"variant", b.variant}});
          if (dev->bench_options) {  // its TFLOP/s count the kept scores only
            r.update({{"dtype", bf.dtype}, {"causal", bf.causal},
                      {"tflops", flops * kept_fraction(f2, n) / (b.median_ms * 1e9)}});
          } else {
            const int64_t bytes = bytes_predicted(info, s.heads(), n, d, t);
            r.update({{"tflops", flops / (b.median_ms * 1e9)}, {"hbm_bytes_predicted", bytes},
                      {"gbps", bytes / (b.median_ms * 1e6)}});
          }
          row[info.name] = r;
        } catch (const InputError& e) {
          row[info.name] = {{"skipped", e.what()}};
        }
      }
      auto ms = [&](const ScheduleInfo& info) {
        return row.contains(info.name) && row[info.name].contains("median_ms") ? row[info.name]["median_ms"].get<double>() : 0.0;
      };
      if (ms(first) > 0 && ms(base) > 0) row[ratio_key] = ms(base) / ms(first);
      rows.push_back(row);
      if (!bf.as_json) {
        std::printf("%6lld %4lld %4lld %3lld %4lld %4lld", (long long)n, (long long)d, (long long)s.B, (long long)s.H,
                    (long long)t.Br, (long long)t.Bc);
        for (const gpu::DeviceSchedule* dev : gpu::device_schedules()) {
          const char* name = schedule_name(dev->id);
          if (!row.contains(name)) {
            std::printf(" | %2s %9s %8s %9s %9s", "-", "-", "-", "-", "-");
            continue;
          }
          const auto& r = row[name];
          if (r.contains("skipped")) {
            std::printf(" | %s skipped: %s", name, r["skipped"].get<std::string>().c_str());
            continue;
          }
          std::printf(" | %2s %9.3f %8.2f %9s %9.1f",
                      r.contains("variant") ? std::to_string(r["variant"].get<int>()).c_str() : "-",
                      r["median_ms"].get<double>(), r["tflops"].get<double>(),
                      r.contains("gbps") ? std::to_string(int64_t(r["gbps"].get<double>())).c_str() : "-",
                      r["peak_bytes"].get<int64_t>() / 1048576.0);
        }
        std::printf(" | %7s\n", row.contains(ratio_key) ? std::to_string(row[ratio_key].get<double>()).substr(0, 5).c_str() : "-");
        std::fflush(stdout);
      }
    }
  }

  if (!bf.no_sweep) {
    // Figure 2 (middle) of the paper: Bc from 16 up to what shared memory allows, d = 64
    // (--sweep-d), Br = 64, N = sweep_n. M for each point is 4d max(Br, Bc), so the CPU tiling accepts it.
    const int64_t n = bf.sweep_n, d = bf.sweep_d, br = 64;
    const gpu::Shape s = bench_shape(n, d, bf.rows);
    const ScheduleInfo& sweep_info = *schedules().front();  // Algorithm 1, as in the paper's figure
    const gpu::DeviceSchedule& sweep_dev = gpu::device_schedule(sweep_info.id);
    const float scale = float(1.0 / std::sqrt(double(d)));
    if (!bf.as_json)
      std::printf("\nBc sweep (Figure 2 middle): N = %lld, d = %lld, Br = %lld, B x H = %lld\n"
                  "%6s %6s %5s %2s | %14s %9s %8s\n", (long long)n, (long long)d, (long long)br,
                  (long long)s.heads(), "Bc", "Tc", "smem", "v", "HBM GB (sim)", "fa1 ms", "TFLOP/s");
    for (int64_t bc = 16; bc <= 1024; bc *= 2) {
      nlohmann::json pt = {{"Bc", bc}, {"Br", br}, {"n", n}, {"d", d}};
      const Tiling t = make_tiling(n, n, d, 4 * d * std::max(br, bc), br, bc);
      const double bytes = double(bytes_predicted(sweep_info, s.heads(), n, d, t));
      pt["hbm_bytes_predicted"] = bytes;
      pt["Tc"] = t.Tc;
      try {
        const gpu::BenchTiming b = sweep_dev.bench(s, scale, t, 0, gpu::Features{}, bf.warmup, bf.reps, 11);
        const double flops = 4.0 * double(s.heads()) * double(n) * double(n) * double(d);
        pt["variant"] = b.variant;
        pt["smem_bytes"] = sweep_dev.shared_bytes(b.variant, t, d);
        pt["median_ms"] = b.median_ms;
        pt["tflops"] = flops / (b.median_ms * 1e9);
        if (!bf.as_json)
          std::printf("%6lld %6lld %4lldK %2d | %14.3f %9.3f %8.2f\n", (long long)bc, (long long)t.Tc,
                      (long long)(pt["smem_bytes"].get<int64_t>() / 1024), b.variant, bytes / 1e9, b.median_ms,
                      pt["tflops"].get<double>());
        sweep.push_back(pt);
      } catch (const InputError& e) {
        pt["skipped"] = e.what();
        sweep.push_back(pt);
        if (!bf.as_json)
          std::printf("%6lld %6lld %5s %2s | %14.3f  stop: %s\n", (long long)bc, (long long)t.Tc, "-", "-",
                      bytes / 1e9, e.what());
        break;  // larger Bc only needs more shared memory
      }
    }
    // fa2 variant 2 at each block size it is compiled for at this d (the sweep's N and B x H): the
    // schedule that takes --dtype and --causal.
    const gpu::DeviceSchedule* blocks = nullptr;
    for (const gpu::DeviceSchedule* dev : gpu::device_schedules())
      if (dev->bench_options && !blocks) blocks = dev;
    const gpu::DeviceSchedule& blocks_dev = *blocks;
    if (!bf.as_json)
      std::printf("\nfa2 blocks: N = %lld, d = %lld, B x H = %lld, %s\n%5s %5s | %9s %8s\n", (long long)n,
                  (long long)d, (long long)s.heads(), bf.dtype.c_str(), "Br", "Bc", "fa2 ms", "TFLOP/s");
    for (const auto& [br2, bc2] : {std::pair<int64_t, int64_t>{64, 128}, {64, 64}, {128, 64}}) {
      const Tiling t = make_tiling(n, n, d, 4 * d * std::max(br2, bc2), br2, bc2);
      nlohmann::json pt = {{"schedule", schedule_name(blocks_dev.id)}, {"Br", br2}, {"Bc", bc2}, {"n", n}, {"d", d}};
      try {
        const gpu::BenchTiming b = blocks_dev.bench(s, scale, t, 2, f2, bf.warmup, bf.reps, 11);
        const double flops = 4.0 * double(s.heads()) * double(n) * double(n) * double(d) * kept_fraction(f2, n);
        pt["median_ms"] = b.median_ms;
        pt["tflops"] = flops / (b.median_ms * 1e9);
        if (!bf.as_json)
          std::printf("%5lld %5lld | %9.3f %8.2f\n", (long long)br2, (long long)bc2, b.median_ms,
                      pt["tflops"].get<double>());
      } catch (const InputError& e) {
        pt["skipped"] = e.what();
        if (!bf.as_json) std::printf("%5lld %5lld | skipped: %s\n", (long long)br2, (long long)bc2, e.what());
      }
      sweep.push_back(pt);
    }
  }
  if (bf.as_json || !bf.json_file.empty()) {
    const nlohmann::json out = {{"device", info.name}, {"sm_count", info.sm_count},
                                {"dtype", "float32"}, {"warmup", bf.warmup}, {"reps", bf.reps},
                                {"rows", rows}, {"sweep", sweep}};
    if (bf.as_json) std::printf("%s\n", out.dump(1).c_str());
    if (!bf.json_file.empty()) write_file_atomic(bf.json_file, out.dump(1) + "\n");
  }
  return 0;
}

}  // namespace

void add_bench_gpu_command(CLI::App& app, const SetAction& set_action) {
  // flashstep bench-gpu; its flags and the checks that need no GPU: app/gpu_requests.cpp
  static BenchGpuRequest r;
  add_bench_gpu_subcommand(app, r, "Algorithm 1, FlashAttention-2 and standard attention on the GPU, "
                                   "and the Bc sweep of the paper's Figure 2 (middle)")
      ->callback([&set_action] {
        set_action([] {
          check_bench_gpu_request(r);
          const BenchFlags& bf = r.flags;
          gpu::set_timing_batch(bf.batch);
          if (r.decode) return run_bench_decode(decode_bench_request(r));  // app/cmd_decode_gpu.cpp
          if (r.tensor_cores && bf.backward)  // app/cmd_backward_tc.cpp
            return run_bench_backward_tensor_cores(tc_backward_bench_request(r));
          if (r.tensor_cores) return run_bench_tensor_cores(tc_bench_request(r));  // app/cmd_tensor_cores.cpp
          if (!bf.backward) return run_bench(bf);
          return run_bench_backward({bf.sizes, bf.dims, parse_sram_size(bf.M), bf.reps, bf.warmup, bf.variant,
                                     bf.skip, bf.as_json, bf.json_file, parse_dtype(bf.dtype),
                                     bf.causal, [](int64_t n, int64_t d) { return bench_shape(n, d, r.flags.rows); }});
        });
      });
}

}  // namespace flashstep
