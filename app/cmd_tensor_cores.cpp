// verify --tensor-cores and bench-gpu --tensor-cores.
//
// Tolerance rule (derived in docs/tensor-cores.md, "Verified against the CPU emulation"):
//   GPU kernel vs CPU engine with --p-dtype = --dtype, on the kernel's own Br, Bc: both round
//   the same inputs, keep S, m, l in float32, round P~_ij once before P V and O once at the end.
//   Rounding P~ costs each side at most u sum_j p_j |v_j| / l <= u max|V|, rounding O at most
//   u |O| <= u max|V| (u = 2^-8 bf16, 2^-11 fp16), so |O_gpu - O_cpu| <= 4 u max|V|: two ulps
//   of the largest |V| in the 16-bit type. lse (float32 throughout): max |lse_gpu - lse_cpu| <=
//   1e-5 max(1, max|lse|).
//   Against float64 (inputs rounded first, so the reference sees what the kernels see):
//   FlashAttention's rule, max|O_flash - O_64| <= 2 max|O_standard - O_64| + 1e-6 max|V|, with
//   standard attention on tensor cores in the same precision on the same inputs.
#include "app/cmd_tensor_cores.h"

#include "app/cmd_fp8_tc.h"
#include "core/closed_form.h"
#include "core/output_files.h"
#include "core/schedules/fa2/fa2.h"
#include "core/schedules/standard/standard.h"
#include "core/verify.h"
#include "gpu/tensor_core.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace flashstep {

namespace {

double unit_roundoff(Dtype t) { return t == Dtype::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11); }

Mat rows_of(const std::vector<float>& v, int64_t rows, int64_t cols) {
  return Eigen::Map<const Mat>(v.data(), rows, cols);
}
Vec vec_of(const std::vector<float>& v) { return Eigen::Map<const Vec>(v.data(), int64_t(v.size())); }


}  // namespace

Trace run_cpu_on_kernel_blocks(Problem p, int64_t Br, int64_t Bc, const Mat* dO) {
  p.br = Br;
  p.bc = Bc;
  p.M = 4 * p.d * std::max(Br, Bc);  // room for the blocks: --M/--br/--bc are ignored
  RunOptions opt;
  opt.record = false;
  opt.dO = dO;
  return run_problem(p, make_tiling(p), opt);
}

int run_verify_tensor_cores(const RunFlags& rf, int variant) {
  ProblemSpec spec = rf.to_spec();
  if (spec.options.dtype == Dtype::fp8) return run_verify_fp8_tensor_cores(rf, variant);  // app/cmd_fp8_tc.cpp
  check_tensor_core_spec(spec);
  validate_sizes(spec);
  Problem p = make_problem(spec);
  check_tensor_core_head_dim(p.d);
  // The inputs as both sides store them, so the float64 reference sees what the kernels see.
  for (Mat* m : {&p.Q, &p.K, &p.V}) round_in_place(p.dtype, m->data(), m->size());

  const gpu::Shape s = gpu::make_shape(1, 1, p.nq, p.nk, p.d);
  gpu::TcOptions o;
  o.dtype = p.dtype;
  o.variant = variant;
  o.causal = p.mask.causal;
  o.kv_len = p.mask.kv_len;
  gpu::check_tc_request(s, p.scale, o);  // the GPU's own checks (device, shared memory)
  const gpu::TcVariant kv = gpu::tc_variant(variant ? variant : gpu::tc_default_variant(p.d, p.mask.causal), p.d);
  // The CPU engine on the kernel's blocks: the same running maxima, so the same P~ to round.
  const Trace cpu = run_cpu_on_kernel_blocks(p, kv.Br, kv.Bc);
  const Tiling& t = cpu.tiling;
  const gpu::TcResult g = gpu::fa2_tc_forward(p.Q.data(), p.K.data(), p.V.data(), s, p.scale, o);
  const gpu::TcResult st = gpu::standard_tc_forward(p.Q.data(), p.K.data(), p.V.data(), s, p.scale, o);
  const gpu::DeviceInfo info = gpu::device_info();

  const double u = unit_roundoff(p.dtype), max_v = p.V.cwiseAbs().maxCoeff();
  const double o_bound = 4 * u * max_v;
  std::printf("verify     FlashAttention-2 on tensor cores (%s, variant %d: %s) vs the CPU engine "
              "emulating its rounding\n", info.name.c_str(), g.variant, kv.what.c_str());
  std::printf("problem    Nq = %lld, Nk = %lld, d = %lld, tau = %.9g, inputs %s (seed %llu), dtype %s, "
              "P~ rounded to %s\n", (long long)p.nq, (long long)p.nk, (long long)p.d, p.scale,
              p.pattern.c_str(), (unsigned long long)p.seed, dtype_name(p.dtype), dtype_name(p.p_dtype));
  std::printf("options    mask %s\n", p.mask.describe().c_str());
  std::printf("tiling     the kernel's: Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld (CPU engine run on "
              "the same blocks; --M/--br/--bc ignored)\n", (long long)t.Br, (long long)t.Bc,
              (long long)t.Tr, (long long)t.Tc);
  std::printf("tolerance  GPU vs CPU: O max abs <= 4 u max|V| = %.3g (u = %.3g, max|V| = %.3g), "
              "lse max abs <= 1e-5 max(1, max|lse|);\n           vs float64: flash error <= 2 x "
              "standard's (same precision, same inputs) + 1e-6 max|V|\n\n", o_bound, u, max_v);

  bool ok = true;
  if (has_nan(g.O) || has_nan(g.lse) || has_nan(st.O) || has_nan(st.lse)) {
    std::printf("GPU output has NaN elements (unwritten, or a masked row gone wrong)\n");
    ok = false;
  }
  const Vec cpu_lse = cpu.lse;
  const ErrorStats eo = compare(rows_of(g.O, p.nq, p.d), cpu.O.cast<double>().eval());
  const ErrorStats el = compare(vec_of(g.lse), cpu_lse.cast<double>().eval());
  double lse_scale = 1;
  for (int64_t r = 0; r < cpu_lse.size(); ++r)
    if (std::isfinite(cpu_lse(r))) lse_scale = std::max(lse_scale, double(std::abs(cpu_lse(r))));
  const bool cpu_ok = eo.max_abs <= o_bound && el.max_abs <= 1e-5 * lse_scale;
  ok = ok && cpu_ok;
  int64_t same = 0;
  for (int64_t k = 0; k < p.nq * p.d; ++k) same += g.O[size_t(k)] == cpu.O.data()[k];
  std::printf("final      GPU vs CPU emulation: O abs %.3g (%.2f of the bound); lse abs %.3g (%.3g of "
              "max(1,|lse|))  %s\n", eo.max_abs, o_bound > 0 ? eo.max_abs / o_bound : 0.0, el.max_abs,
              el.max_abs / lse_scale, cpu_ok ? "ok" : "OVER");
  std::printf("           O elements bit-identical: %lld of %lld\n", (long long)same, (long long)(p.nq * p.d));
  // Against float64 (core/verify.h): flash at most twice standard's error in the same precision.
  const TensorCoreFloat64Check f = tensor_core_float64_check(cpu, g.O.data(), g.lse.data(), st.O.data(), st.lse.data());
  if (f.measured) {
    ok = ok && f.pass();
    std::printf("           vs float64, O max abs: GPU flash %.3g, CPU emulation %.3g, GPU standard "
                "(cuBLAS, S and P in %s) %.3g; flash / standard = %.2f (rule: <= 2)  %s\n",
                f.flash_O.max_abs, f.cpu_O.max_abs, dtype_name(p.dtype), f.standard_O.max_abs,
                f.standard_O.max_abs > 0 ? f.flash_O.max_abs / f.standard_O.max_abs : 0.0, f.pass() ? "ok" : "OVER");
    std::printf("           vs float64, lse max abs: GPU flash %.3g, GPU standard %.3g (reported)\n",
                f.flash_lse.max_abs, f.standard_lse.max_abs);
  } else {
    std::printf("           float64 reference skipped (Nq*Nk*d over %.0e)\n", kMaxReferenceWork);
  }
  std::printf("%s\n", ok ? "PASS" : "FAIL: a difference is over its tolerance");
  return ok ? 0 : 1;
}

// Figure 2 (middle) at full speed: one kernel family (gpu::tc_bc_sweep_variants(): Br = 128,
// Bc = 16 .. 128) at N = sweep_n, d = sweep_d. In FlashAttention-2's loop order K_j and V_j are
// read once per Q block, so the HBM bytes depend on Br, not Bc: the same prediction for every
// point, and what moves the time is on chip (MMAs per barrier, registers).
static nlohmann::json bc_sweep(const TcBenchRequest& r, Dtype dtype, int64_t H) {
  const int64_t n = r.sweep_n, d = r.sweep_d;
  const gpu::Shape s = gpu::make_shape(std::max<int64_t>(1, r.rows / (n * H)), H, n, n, d);
  const float scale = float(1.0 / std::sqrt(double(d)));
  const double pairs = r.causal ? double(n) * double(n + 1) / 2 : double(n) * double(n);
  const double flops = 4.0 * double(s.heads()) * pairs * double(d);
  if (!r.as_json)
    std::printf("\nBc sweep (Figure 2 middle) on tensor cores: N = %lld, d = %lld, B x H = %lld, %s%s\n"
                "%5s %5s %4s %7s | %14s %9s %8s %8s\n", (long long)n, (long long)d, (long long)s.heads(),
                r.dtype.c_str(), r.causal ? ", causal" : "", "Br", "Bc", "v", "smem", "HBM GB (sim)", "ms",
                "TFLOP/s", "GB/s");
  nlohmann::json sweep = nlohmann::json::array();
  for (int v : gpu::tc_bc_sweep_variants()) {
    const gpu::TcVariant kv = gpu::tc_variant(v, d);
    const TrafficForm tf = fa2_traffic(n, n, d, (n + kv.Br - 1) / kv.Br);
    const int64_t hbm = s.heads() * (tf.read_bytes(2) + tf.write_bytes(2));
    gpu::TcOptions o;
    o.dtype = dtype;
    o.causal = r.causal;
    o.variant = v;
    const gpu::BenchTiming t = gpu::bench_fa2_tc(s, scale, o, r.warmup, r.reps, 42);
    const nlohmann::json pt = {{"variant", v}, {"Br", kv.Br}, {"Bc", kv.Bc}, {"n", n}, {"d", d},
                               {"smem_bytes", kv.smem_bytes}, {"hbm_bytes_predicted", hbm},
                               {"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"max_ms", t.max_ms},
                               {"tflops", flops / (t.median_ms * 1e9)}, {"gbps", double(hbm) / (t.median_ms * 1e6)}};
    sweep.push_back(pt);
    if (!r.as_json) {
      std::printf("%5d %5d %4d %6.1fK | %14.3f %9.3f %8.1f %8.0f\n", kv.Br, kv.Bc, v, kv.smem_bytes / 1024.0,
                  double(hbm) / 1e9, t.median_ms, pt["tflops"].get<double>(), pt["gbps"].get<double>());
      std::fflush(stdout);
    }
  }
  return sweep;
}

int run_bench_tensor_cores(const TcBenchRequest& r) {
  if (r.dtype == "fp8") return run_bench_fp8_tensor_cores(r);  // app/cmd_fp8_tc.cpp
  check_tc_bench_request(r);  // app/gpu_requests.cpp
  if (r.variant != 0)
    for (int64_t d : r.dims) gpu::tc_variant(r.variant, d);  // a variant with no kernel: refused before any run
  const Dtype dtype = parse_dtype(r.dtype);
  const gpu::DeviceInfo info = gpu::device_info();
  const int64_t H = 8;
  nlohmann::json rows = nlohmann::json::array();
  if (!r.as_json) {
    std::printf("bench-gpu --tensor-cores on %s (%d SMs), %s, %s, CUDA events, %d warm-up runs (at least %.0f ms), median of %d, %d calls back to back per sample\n",
                info.name.c_str(), info.sm_count, r.dtype.c_str(), r.causal ? "causal" : "no mask",
                r.warmup, gpu::timing_warmup_ms(r.warmup), r.reps, gpu::timing_batch());
    std::printf("TFLOP/s = 4 B H N^2 d / time (causal: the kept N(N+1)/2 scores, for both); GB/s = HBM "
                "bytes the simulator's closed form predicts / time%s\n\n",
                r.causal ? " (unmasked form: an upper bound with causal block skipping)" : "");
    std::printf("%6s %4s %4s %3s %4s %4s %2s | %9s %8s %12s %8s %9s | %9s %8s %12s %8s %9s | %6s\n", "N", "d",
                "B", "H", "Br", "Bc", "v", "fa2 ms", "TFLOP/s", "HBM bytes", "GB/s", "peak MiB", "std ms",
                "TFLOP/s", "HBM bytes", "GB/s", "peak MiB", "speed-up");
  }
  for (int64_t d : r.dims)
    for (int64_t n : r.sizes) {
      const TcBenchPoint pt = tc_bench_point(r.rows, n, d, r.causal);
      const gpu::Shape& s = pt.shape;
      const float scale = pt.scale;
      const double flops = pt.flops;
      gpu::TcOptions o;
      o.dtype = dtype;
      o.causal = r.causal;
      o.variant = r.variant;
      const gpu::BenchTiming f = gpu::bench_fa2_tc(s, scale, o, r.warmup, r.reps, 42);
      o.variant = 0;
      const gpu::BenchTiming b = r.no_standard ? gpu::BenchTiming{} : gpu::bench_standard_tc(s, scale, o, r.warmup, r.reps, 42);
      const gpu::TcVariant v = gpu::tc_variant(f.variant ? f.variant : gpu::tc_default_variant(d, r.causal), d);
      const int64_t Tr = (n + v.Br - 1) / v.Br;
      auto bytes = [&](const TrafficForm& tf) { return s.heads() * (tf.read_bytes(2) + tf.write_bytes(2)); };
      const int64_t fa2_bytes = bytes(fa2_traffic(n, n, d, Tr)), std_bytes = bytes(standard_traffic(n, n, d));
      auto entry = [&](const gpu::BenchTiming& t, int64_t hbm) {
        return nlohmann::json{{"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"max_ms", t.max_ms},
                              {"reps", t.reps}, {"tflops", flops / (t.median_ms * 1e9)},
                              {"hbm_bytes_predicted", hbm}, {"gbps", double(hbm) / (t.median_ms * 1e6)},
                              {"peak_bytes", t.peak_bytes}};
      };
      nlohmann::json row = {{"n", n}, {"d", d}, {"B", s.B}, {"H", s.H}, {"flops", flops}, {"fa2_tc", entry(f, fa2_bytes)}};
      if (!r.no_standard) {
        row["standard_tc"] = entry(b, std_bytes);
        row["speedup_over_standard"] = b.median_ms / f.median_ms;
      }
      row["fa2_tc"]["variant"] = f.variant;
      row["fa2_tc"]["Br"] = v.Br;
      row["fa2_tc"]["Bc"] = v.Bc;
      rows.push_back(row);
      if (!r.as_json) {
        std::printf("%6lld %4lld %4lld %3lld %4d %4d %2d", (long long)n, (long long)d, (long long)s.B,
                    (long long)s.H, v.Br, v.Bc, f.variant);
        for (const char* k : {"fa2_tc", "standard_tc"}) {
          if (!row.contains(k)) {  // --no-standard
            std::printf(" | %9s %8s %12s %8s %9s", "-", "-", "-", "-", "-");
            continue;
          }
          const auto& e = row[k];
          std::printf(" | %9.3f %8.1f %12lld %8.0f %9.1f", e["median_ms"].get<double>(), e["tflops"].get<double>(),
                      (long long)e["hbm_bytes_predicted"].get<int64_t>(), e["gbps"].get<double>(),
                      e["peak_bytes"].get<int64_t>() / 1048576.0);
        }
        if (r.no_standard) std::printf(" | %6s\n", "-");
        else std::printf(" | %5.2fx\n", b.median_ms / f.median_ms);
        std::fflush(stdout);
      }
    }
  const nlohmann::json sweep = r.no_sweep ? nlohmann::json::array() : bc_sweep(r, dtype, H);
  if (r.as_json || !r.json_file.empty()) {
    nlohmann::json out = {{"device", info.name}, {"sm_count", info.sm_count}, {"dtype", r.dtype},
                          {"tensor_cores", true}, {"causal", r.causal}, {"warmup", r.warmup},
                          {"reps", r.reps}, {"rows", rows}};
    if (!r.no_sweep) out["sweep"] = sweep;
    if (r.as_json) std::printf("%s\n", out.dump(1).c_str());
    if (!r.json_file.empty()) write_file_atomic(r.json_file, out.dump(1) + "\n");
  }
  return 0;
}

}  // namespace flashstep
