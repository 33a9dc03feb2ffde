// verify --tensor-cores --dtype fp8 and bench-gpu --tensor-cores --dtype fp8: the FP8 forward on
// Hopper's tensor cores (gpu/fp8_tc.h) against the CPU engine's FP8 emulation and float64.
//
// The checks (docs/fp8-gpu.md, "On the GPU: the forward"; computed by core/verify.h's
// fp8_forward_check, printed here). Both sides quantise the same inputs to the
// same e4m3 values and scales (the kernel's Br x Bc blocks), keep S, m, l in float32, round P~ to
// e4m3 and O to bf16 once; they differ in the order and precision of the sums (the tensor cores'
// FP8 accumulation keeps about 14 bits, core/fp8_bound.h's Fp8Accumulation) and in exp (exp2 on
// the special-function unit), which can move a P~ across an e4m3 rounding boundary.
//   1. The format's bound, row by row (core/fp8_bound.h: fp8_row_bound, with the kernel's
//      accumulation steps for the GPU, none for the CPU): each O against float64 on the
//      unquantised inputs, worst error / bound <= 1 (so the GPU and CPU O differ by at most the
//      sum of the two bounds).
//   2. Sharp, as FlashAttention's rule for low precision (flash within twice standard's error):
//      max|O_gpu - O_64| <= 2 max|O_cpu - O_64| + the accumulation's share, Vmax (e^(2 dS) - 1 +
//      u_acc pv_steps), dS = tau u_acc (d / 32) max sum_k |q~_k| |k~_k| (u_acc = 2^-13).
//   3. lse: |lse_gpu - lse_cpu| <= 4 dS + 1e-5 max(1, max|lse|) (core/verify.cpp says why 4).
#include "app/cmd_fp8_tc.h"

#include "app/cmd_tensor_cores.h"
#include "core/fp8_bound.h"
#include "core/fp8_inputs.h"
#include "core/output_files.h"
#include "core/reference.h"  // kMaxReferenceWork
#include "core/verify.h"
#include "gpu/fp8_tc.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace flashstep {

namespace {


}  // namespace

int run_verify_fp8_tensor_cores(const RunFlags& rf, int variant) {
  ProblemSpec spec = rf.to_spec();
  check_tensor_core_spec(spec);
  validate_sizes(spec);
  Problem p = make_problem(spec);
  check_tensor_core_head_dim(p.d);
  const gpu::Shape s = gpu::make_shape(1, 1, p.nq, p.nk, p.d);
  gpu::Fp8TcOptions o = gpu::fp8_tc_options(p);
  o.variant = variant;
  gpu::check_fp8_tc_request(s, p.scale, o);  // the GPU's own checks (device, shared memory)
  const gpu::Fp8TcTiles kt = gpu::fp8_tc_tiles(p.d, variant);
  // The CPU engine on the kernel's blocks: the same per-block scales, the same running maxima.
  const Trace cpu = run_cpu_on_kernel_blocks(p, kt.Br, kt.Bc);
  const Tiling& t = cpu.tiling;
  const gpu::Fp8TcInputs in = gpu::fp8_tc_quantise(p.Q.data(), p.K.data(), p.V.data(), s, o);
  const gpu::TcResult g = gpu::fp8_tc_forward(in, s, p.scale, o);
  const gpu::DeviceInfo info = gpu::device_info();

  // The accumulation's steps (gpu/fp8_kernel.cuh) and its share of the error, from the quantised inputs.
  const gpu::Fp8TcAccumulationShare a = gpu::fp8_tc_accumulation_share(in, p.nq, p.nk, p.d, p.scale, variant);
  const Fp8Accumulation acc = a.acc;
  const double dS = a.dS, acc_share = a.share;

  std::printf("verify     the FP8 forward on tensor cores (%s: %s) vs the CPU engine's FP8 emulation\n", info.name.c_str(),
              kt.what.c_str());
  std::printf("problem    Nq = %lld, Nk = %lld, d = %lld, tau = %.9g, inputs %s (seed %llu), e4m3 Q, K, V with %s "
              "float32 scales%s; P~ in e4m3; O in bf16\n", (long long)p.nq, (long long)p.nk, (long long)p.d, p.scale,
              p.pattern.c_str(), (unsigned long long)p.seed, fp8_scale_name(p.fp8_scale),
              p.rotate ? " (Q, K rotated)" : "");
  std::printf("options    mask %s\n", p.mask.describe().c_str());
  std::printf("tiling     the kernel's: Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld (CPU engine and scale blocks on the "
              "same blocks; --M/--br/--bc ignored)\n", (long long)t.Br, (long long)t.Bc, (long long)t.Tr, (long long)t.Tc);
  std::printf("tolerance  each O vs float64 within the format's bound per row (docs/fp8.md; GPU with the FP8 "
              "accumulation, u_acc = 2^-13 per k32 step: %lld per score, %lld per row of O);\n"
              "           GPU error <= 2 x CPU emulation's + %.3g (the accumulation's share); lse <= 4 dS + 1e-5 "
              "max(1, |lse|), dS = %.3g\n\n", (long long)acc.s_steps, (long long)acc.pv_steps, acc_share, dS);

  const Fp8ForwardCheck c = fp8_forward_check(cpu, g.O.data(), g.lse.data(), acc, dS, acc_share);
  if (c.nan) std::printf("GPU output has NaN elements (unwritten, or a masked row gone wrong)\n");
  std::printf("final      GPU vs CPU emulation: O max abs %.3g, RMS %.3g, bit-identical %lld of %lld; lse max abs %.3g "
              "(tolerance %.3g)  %s\n", c.O.max_abs, c.O.rms, (long long)c.identical, (long long)(p.nq * p.d),
              c.lse.max_abs, c.lse_tol, verdict(c.lse_ok()));
  if (c.measured) {
    std::printf("           vs float64, O max abs: GPU %.3g, CPU emulation %.3g (RMS %.3g, %.3g); GPU <= 2 x CPU + "
                "%.3g = %.3g  %s\n", c.gpu_O.max_abs, c.cpu_O.max_abs, c.gpu_O.rms, c.cpu_O.rms, acc_share, c.allowed,
                verdict(c.sharp_ok()));
    std::printf("fp8 bound  O error / the format's bound, worst row: GPU %.3g, CPU %.3g  %s\n", c.gpu_ratio, c.cpu_ratio,
                verdict(c.bound_ok()));
  } else {
    std::printf("           float64 reference skipped (Nq*Nk*d over %.0e)\n", kMaxReferenceWork);
  }
  const bool ok = c.pass();
  std::printf("%s\n", ok ? "PASS" : "FAIL: a difference is over its tolerance");
  return ok ? 0 : 1;
}

int run_bench_fp8_tensor_cores(const TcBenchRequest& r) {
  check_tc_bench_request(r);  // app/gpu_requests.cpp
  for (int64_t d : r.dims) gpu::fp8_tc_tiles(d, r.variant);  // a variant with no kernel: refused before any run
  const gpu::DeviceInfo info = gpu::device_info();
  nlohmann::json rows = nlohmann::json::array();
  if (!r.as_json) {
    std::printf("bench-gpu --tensor-cores --dtype fp8 on %s (%d SMs), %s, CUDA events, %d warm-up runs, median of %d; "
                "e4m3 Q, K, V with per-block scales, O in bf16, beside the bf16 default; FP8 kernel: %s\n",
                info.name.c_str(), info.sm_count, r.causal ? "causal" : "no mask", r.warmup, r.reps,
                r.variant == 0 ? "the default" : ("ladder rung " + std::to_string(r.variant)).c_str());
    std::printf("TFLOP/s = 4 B H N^2 d / time (causal: the kept N(N+1)/2 scores)\n\n");
    std::printf("%6s %4s %4s %3s %4s %4s | %9s %8s | %9s %8s %2s | %6s\n", "N", "d", "B", "H", "Br", "Bc", "fp8 ms",
                "TFLOP/s", "bf16 ms", "TFLOP/s", "v", "fp8/bf16");
  }
  for (int64_t d : r.dims)
    for (int64_t n : r.sizes) {
      const TcBenchPoint pt = tc_bench_point(r.rows, n, d, r.causal);
      const gpu::Shape& s = pt.shape;
      const float scale = pt.scale;
      const double flops = pt.flops;
      gpu::Fp8TcOptions o;
      o.causal = r.causal;
      o.scale_mode = Fp8Scale::per_block;
      o.variant = r.variant;
      const gpu::Fp8TcTiles kt = gpu::fp8_tc_tiles(d, r.variant);
      const gpu::BenchTiming f = gpu::bench_fp8_tc(s, scale, o, r.warmup, r.reps, 42);
      gpu::TcOptions bo;
      bo.dtype = Dtype::bf16;
      bo.causal = r.causal;
      const gpu::BenchTiming b = gpu::bench_fa2_tc(s, scale, bo, r.warmup, r.reps, 42);
      auto entry = [&](const gpu::BenchTiming& t) {
        return nlohmann::json{{"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"max_ms", t.max_ms},
                              {"reps", t.reps}, {"tflops", flops / (t.median_ms * 1e9)}, {"peak_bytes", t.peak_bytes}};
      };
      nlohmann::json row = {{"n", n}, {"d", d}, {"B", s.B}, {"H", s.H}, {"flops", flops}, {"fp8_tc", entry(f)},
                            {"bf16_default", entry(b)}, {"speedup_over_bf16", b.median_ms / f.median_ms}};
      row["fp8_tc"]["Br"] = kt.Br;
      row["fp8_tc"]["Bc"] = kt.Bc;
      row["fp8_tc"]["variant"] = r.variant;
      row["bf16_default"]["variant"] = b.variant;
      rows.push_back(row);
      if (!r.as_json) {
        std::printf("%6lld %4lld %4lld %3lld %4d %4d | %9.4f %8.1f | %9.4f %8.1f %2d | %5.2fx\n", (long long)n,
                    (long long)d, (long long)s.B, (long long)s.H, kt.Br, kt.Bc, f.median_ms,
                    row["fp8_tc"]["tflops"].get<double>(), b.median_ms, row["bf16_default"]["tflops"].get<double>(),
                    b.variant, b.median_ms / f.median_ms);
        std::fflush(stdout);
      }
    }
  if (r.as_json || !r.json_file.empty()) {
    nlohmann::json out = {{"device", info.name}, {"sm_count", info.sm_count}, {"dtype", "fp8"}, {"tensor_cores", true},
                          {"causal", r.causal}, {"warmup", r.warmup}, {"reps", r.reps}, {"rows", rows}};
    if (r.as_json) std::printf("%s\n", out.dump(1).c_str());
    if (!r.json_file.empty()) write_file_atomic(r.json_file, out.dump(1) + "\n");
  }
  return 0;
}

}  // namespace flashstep
