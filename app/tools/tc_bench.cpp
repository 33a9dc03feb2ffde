// flashstep_tc_bench: the driver of the tensor-core ladder. Verifies every variant
// against the float64 reference with gpu/tc_check.h's rule on ragged shapes (Nq != Nk, causal,
// key padding per batch entry), then times each variant and the cuBLAS standard baseline at
// B x H x N fixed, and prints one table (last, so a device call's output tail holds it).
//
//   flashstep_tc_bench [--variants 1,2,3,4] [--dtypes bf16,fp16] [--ds 64,128]
//                      [--ns 1024,4096,16384] [--causal both|on|off] [--rows 131072] [--H 8]
//                      [--reps 20] [--warmup 3] [--no-verify] [--no-time] [--no-standard]
//                      [--csv FILE]
// FLOPs: 4 B H Nq Nk d per pass; causal counts only the kept scores, 4 B H d N(N+1)/2.
#include "gpu/tc_check.h"
#include "gpu/tensor_core.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using namespace flashstep;
using namespace flashstep::gpu;

namespace {

struct Row {
  std::string dtype, what;
  int64_t d, n;
  bool causal;
  int variant;
  double ms, tflops, speedup;
};

double flops(const Shape& s, bool causal) {
  const double pairs = causal ? double(s.nq) * double(s.nq + 1) / 2.0 : double(s.nq) * double(s.nk);
  return 4.0 * double(s.heads()) * pairs * double(s.d);
}

int verify_all(const std::vector<int>& variants, const std::vector<Dtype>& dtypes,
               const std::vector<int64_t>& ds) {
  std::random_device rd;
  int failures = 0;
  struct Case {
    int64_t B, H, nq, nk;
    bool causal;
    std::vector<int64_t> kv_lens;
    const char* name;
  };
  const std::vector<Case> cases = {
      {2, 3, 300, 517, false, {}, "300x517"},
      {2, 3, 517, 300, true, {}, "517x300 causal"},
      {2, 2, 257, 513, true, {400, 0}, "257x513 causal kv_lens 400,0"},
      {1, 2, 17, 3, false, {}, "17x3"},
  };
  for (Dtype t : dtypes)
    for (int64_t d : ds)
      for (int v : variants)
        for (const Case& c : cases) {
          const Shape s = make_shape(c.B, c.H, c.nq, c.nk, d);
          TcOptions o;
          o.dtype = t;
          o.variant = v;
          o.causal = c.causal;
          o.kv_lens = c.kv_lens;
          const TcAccuracy a = tc_accuracy(s, o, (uint64_t(rd()) << 32) ^ rd());
          failures += !a.ok();
          std::printf("verify v%d %s d=%lld %-30s %s  %s\n", v, dtype_name(t), (long long)d, c.name,
                      a.ok() ? "PASS" : "FAIL", a.describe().c_str());
        }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"flashstep_tc_bench: verify and time the tensor-core FlashAttention-2 ladder"};
  std::vector<int> variants;
  for (int v = 1; v <= tc_variant_count(); ++v) variants.push_back(v);
  std::vector<std::string> dtype_names = {"bf16"};
  std::vector<int64_t> ds = {64, 128}, ns = {1024, 4096, 16384};
  std::string causal_mode = "off", csv;
  int64_t rows = 131072, H = 8;
  int reps = 20, warmup = 3, batch = 1;
  bool no_verify = false, no_time = false, no_standard = false;
  app.add_option("--variants", variants)->delimiter(',');
  app.add_option("--dtypes", dtype_names)->delimiter(',');
  app.add_option("--ds", ds)->delimiter(',');
  app.add_option("--ns", ns)->delimiter(',');
  app.add_option("--causal", causal_mode)->check(CLI::IsMember({"off", "on", "both"}));
  app.add_option("--rows", rows, "B x H x N, fixed as N varies");
  app.add_option("--H", H, "heads per batch entry");
  app.add_option("--reps", reps);
  app.add_option("--warmup", warmup);
  app.add_option("--back-to-back", batch, "calls back to back per timed sample (gpu/backend.h's set_timing_batch)");
  app.add_flag("--no-verify", no_verify);
  app.add_flag("--no-time", no_time);
  app.add_flag("--no-standard", no_standard);
  app.add_option("--csv", csv, "also write the table as CSV");
  CLI11_PARSE(app, argc, argv);

  try {
    std::vector<Dtype> dtypes;
    for (const auto& n : dtype_names) dtypes.push_back(parse_dtype(n));
    set_timing_batch(batch);
    const DeviceInfo info = device_info();
    std::printf("device: %s, sm_%d%d, %d SMs\n", info.name.c_str(), info.cc_major, info.cc_minor,
                info.sm_count);
    int failures = no_verify ? 0 : verify_all(variants, dtypes, ds);

    std::vector<Row> table;
    std::vector<bool> causals;
    if (causal_mode != "on") causals.push_back(false);
    if (causal_mode != "off") causals.push_back(true);
    if (!no_time)
      for (Dtype t : dtypes)
        for (bool causal : causals)
          for (int64_t d : ds)
            for (int64_t n : ns) {
              const Shape s = make_shape(std::max<int64_t>(1, rows / (n * H)), H, n, n, d);
              TcOptions o;
              o.dtype = t;
              o.causal = causal;
              const float scale = 1.0f / std::sqrt(float(d));
              const double f = flops(s, causal);
              double std_ms = 0;
              if (!no_standard) {
                const BenchTiming b = bench_standard_tc(s, scale, o, warmup, reps, 42);
                std_ms = b.median_ms;
                table.push_back({dtype_name(t), "standard (cuBLAS)", d, n, causal, 0, b.median_ms,
                                 f / b.median_ms * 1e-9, 1.0});
              }
              for (int v : variants) {
                o.variant = v;
                const BenchTiming b = bench_fa2_tc(s, scale, o, warmup, reps, 42);
                table.push_back({dtype_name(t), "fa2 tc", d, n, causal, v, b.median_ms,
                                 f / b.median_ms * 1e-9, std_ms > 0 ? std_ms / b.median_ms : 0.0});
              }
            }

    std::ofstream out;
    if (!csv.empty()) {
      out.open(csv);
      out << "dtype,kernel,variant,d,N,causal,ms,tflops,speedup_vs_standard\n";
    }
    std::printf("\n%-5s %-4s %-6s %-6s %-18s %-3s %9s %8s %8s\n", "dtype", "d", "N", "causal", "kernel",
                "v", "ms", "TFLOP/s", "x std");
    for (const Row& r : table) {
      std::printf("%-5s %-4lld %-6lld %-6s %-18s %-3d %9.3f %8.1f %8.2f\n", r.dtype.c_str(),
                  (long long)r.d, (long long)r.n, r.causal ? "yes" : "no", r.what.c_str(), r.variant,
                  r.ms, r.tflops, r.speedup);
      if (out)
        out << r.dtype << "," << r.what << "," << r.variant << "," << r.d << "," << r.n << ","
            << r.causal << "," << r.ms << "," << r.tflops << "," << r.speedup << "\n";
    }
    if (!no_verify) std::printf("verify failures: %d\n", failures);
    return failures ? 1 : 0;
  } catch (const InputError& e) {
    std::fprintf(stderr, "flashstep: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashstep_tc_bench: %s\n", e.what());
    return 1;
  }
}
