// The tensor-core backward on the command line: verify --backward --tensor-cores,
// gpu --backward --tensor-cores, bench-gpu --backward --tensor-cores (gpu/backward_tc.h).
//
// Tolerance rule of verify --backward --tensor-cores (derived in docs/backward.md, "On tensor
// cores: the error bound"; core/backward_bound.h computes it): every element of dQ, dK, dV has
// its own bound B, evaluated in float64 from the exact P, dP, dS. An engine that rounds P and dS
// to the type before its matmuls (the kernel; the CPU engine with --p-dtype) is within B of the
// float64 gradient; the kernel's dQ, summed in float32 and rounded once more, within
// B + u |dQ|. So the GPU and the CPU emulation are within 2 B (+ u |dQ|) of each other, each
// element. A row that keeps no key has B = 0: its dQ must be exactly 0.
#include "app/cmd_backward_tc.h"

#include "app/cmd_backward_gpu.h"
#include "app/cmd_tensor_cores.h"
#include "core/backward.h"
#include "core/backward_bound.h"
#include "core/npy.h"
#include "core/output_files.h"
#include "core/schedule_registry.h"
#include "core/verify.h"
#include "gpu/backward.h"
#include "gpu/backward_tc.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace flashstep {

namespace {

gpu::TcBackwardOptions tc_options(Dtype t, const Mask& m, int variant) {
  gpu::TcBackwardOptions o;
  o.forward.dtype = t;
  o.forward.causal = m.causal;
  o.forward.kv_len = m.kv_len;
  o.variant = variant;
  return o;
}

Mat head_mat(const std::vector<float>& v, int64_t rows, int64_t cols) {
  return Eigen::Map<const Mat>(v.data(), rows, cols);
}

}  // namespace

int run_verify_backward_tensor_cores(const RunFlags& rf, const BackwardFlags& bf, int variant) {
  const ProblemSpec spec = tensor_core_backward_spec(rf);
  validate_sizes(spec);
  Problem p = make_problem(spec);
  if (p.d != 64 && p.d != 128)
    throw InputError("--tensor-cores supports d = 64 and d = 128 (got d = " + std::to_string(p.d) + ")");
  // Inputs and dO as both sides store them, so the bound sees what the engines see.
  for (Mat* m : {&p.Q, &p.K, &p.V}) round_in_place(p.dtype, m->data(), m->size());
  Mat dO = backward_grad_output(bf, p, rf.pattern);
  round_in_place(p.dtype, dO.data(), dO.size());
  const gpu::Shape s = gpu::make_shape(1, 1, p.nq, p.nk, p.d);
  const gpu::TcBackwardOptions o = tc_options(p.dtype, p.mask, variant);
  gpu::check_tc_backward_request(s, p.scale, o);  // the GPU's own checks (device, shared memory)
  const gpu::TcBackwardVariant kv =
      gpu::tc_backward_variant(variant ? variant : gpu::tc_backward_default_variant(p.d), p.d);
  // The CPU engine on the backward kernel's blocks (the bound holds for any blocks; these make
  // the step log line up with the kernel's loop), computing dS as the variant does.
  p.ds_from_rounded_p = kv.ds_from_rounded_p;
  const Trace cpu = run_cpu_on_kernel_blocks(p, kv.Br, kv.Bc, &dO);
  const Tiling& t = cpu.tiling;
  const gpu::TcBackwardResult g = gpu::fa2_tc_backward(p.Q.data(), p.K.data(), p.V.data(), dO.data(), s, p.scale, o);
  const gpu::DeviceInfo info = gpu::device_info();

  std::printf("verify     FlashAttention-2's backward on tensor cores (%s, backward variant %d: %s; forward "
              "variant %d) vs the CPU engine emulating its rounding\n", info.name.c_str(), g.variant,
              kv.what.c_str(), g.forward_variant);
  std::printf("problem    Nq = %lld, Nk = %lld, d = %lld, tau = %.9g, inputs %s (seed %llu), dtype %s, P and dS "
              "rounded to %s%s, dO %s\n", (long long)p.nq, (long long)p.nk, (long long)p.d, p.scale,
              p.pattern.c_str(), (unsigned long long)p.seed, dtype_name(p.dtype), dtype_name(p.p_dtype),
              kv.ds_from_rounded_p ? " (dS from the rounded P, as this variant computes it)" : "",
              bf.do_path.empty() ? "from the seed" : bf.do_path.c_str());
  std::printf("options    mask %s\n", p.mask.describe().c_str());
  std::printf("tiling     the kernel's: Br = %lld, Bc = %lld, Tr = %lld, Tc = %lld\n", (long long)t.Br,
              (long long)t.Bc, (long long)t.Tr, (long long)t.Tc);
  std::printf("tolerance  each element: GPU vs float64 <= B (+ u|dQ| for dQ), CPU emulation vs float64 <= B, GPU "
              "vs CPU <= 2 B (+ u|dQ|); B from core/backward_bound.h (u = %.3g)\n\n", type_unit_roundoff(p.dtype));

  bool ok = true;
  for (const auto* v : {&g.dQ, &g.dK, &g.dV})
    if (std::any_of(v->begin(), v->end(), [](float x) { return !std::isfinite(x); })) ok = false;
  if (!ok) std::printf("GPU gradients have NaN or Inf elements (unwritten, or a masked row gone wrong)\n");
  const Mat gq = head_mat(g.dQ, p.nq, p.d), gk = head_mat(g.dK, p.nk, p.d), gv = head_mat(g.dV, p.nk, p.d);
  int64_t same_k = 0, same_v = 0;
  for (int64_t e = 0; e < gk.size(); ++e) {
    same_k += gk.data()[e] == cpu.dK.data()[e];
    same_v += gv.data()[e] == cpu.dV.data()[e];
  }
  if (!reference_affordable(p.nq, p.nk, p.d)) {
    std::printf("           the bound needs the float64 gradients: skipped (Nq*Nk*d over %.0e)\nFAIL: not "
                "verified (use a smaller problem)\n", kMaxReferenceWork);
    return 1;
  }
  const GradBound b = rounded_backward_bound(p.Q, p.K, p.V, dO, p.scale, p.mask, p.dtype, kv.ds_from_rounded_p);
  const MatD cq = cpu.dQ.cast<double>(), ck = cpu.dK.cast<double>(), cv = cpu.dV.cast<double>();
  struct Row {
    const char* what;
    BoundCheck q, k, v;
  };
  const Row rows[] = {
      {"GPU vs CPU emulation (2 B)", check_within(gq, cq, b.dQ, 2, &b.dQ_store), check_within(gk, ck, b.dK, 2),
       check_within(gv, cv, b.dV, 2)},
      {"GPU vs float64 (B)", check_within(gq, b.dQ_exact, b.dQ, 1, &b.dQ_store), check_within(gk, b.dK_exact, b.dK, 1),
       check_within(gv, b.dV_exact, b.dV, 1)},
      {"CPU emulation vs float64 (B)", check_within(cpu.dQ, b.dQ_exact, b.dQ, 1), check_within(cpu.dK, b.dK_exact, b.dK, 1),
       check_within(cpu.dV, b.dV_exact, b.dV, 1)}};
  std::printf("%-30s | %-23s | %-23s | %-23s |\n", "worst |x - ref| / allowed", "dQ (max abs)", "dK (max abs)",
              "dV (max abs)");
  for (const Row& r : rows) {
    const bool rok = r.q.over == 0 && r.k.over == 0 && r.v.over == 0;
    ok = ok && rok;
    std::printf("%-30s | %6.3f (%12.4g) | %6.3f (%12.4g) | %6.3f (%12.4g) | %s\n", r.what, r.q.worst_ratio,
                r.q.max_abs, r.k.worst_ratio, r.k.max_abs, r.v.worst_ratio, r.v.max_abs, rok ? "ok" : "OVER");
  }
  const GradNormwise nw = grad_normwise(cpu, gq, gk, gv);  // core/verify.h; affordable, checked above
  std::printf("normwise   GPU vs float64 max|x - ref| / max|ref|: dQ %.3g, dK %.3g, dV %.3g; CPU emulation: dQ "
              "%.3g, dK %.3g, dV %.3g\n", nw.gpu.dq, nw.gpu.dk, nw.gpu.dv, nw.cpu.dq, nw.cpu.dk, nw.cpu.dv);
  std::printf("identical  dK %lld of %lld, dV %lld of %lld elements bit-identical GPU vs CPU emulation\n",
              (long long)same_k, (long long)gk.size(), (long long)same_v, (long long)gv.size());
  std::printf("%s\n", ok ? "PASS" : "FAIL: a difference is over its tolerance");
  return ok ? 0 : 1;
}

int run_gpu_backward_tensor_cores(const RunFlags& rf, const BackwardFlags& bf, const GpuInputs& in, int variant,
                                  const std::string& out_o, const std::string& out_lse) {
  const gpu::Shape& s = in.s;
  const gpu::Features& f = in.features;
  if (!bf.backward)
    throw InputError("gpu --tensor-cores runs forward + backward: add --backward (the forward alone: verify or "
                     "bench-gpu --tensor-cores)");
  if (rf.schedule == "standard") throw InputError("--tensor-cores runs FlashAttention-2: drop --schedule standard");  // registry-exempt: tensor cores run FlashAttention-2
  if (f.dtype == Dtype::fp32)
    throw InputError("--tensor-cores takes bf16 or fp16 inputs: add --dtype bf16 or --dtype fp16");
  if (f.dropout > 0) throw InputError("--tensor-cores: the tensor-core kernels have no dropout");
  if (f.mask.window_left >= 0 || f.mask.window_right >= 0)
    throw InputError("--tensor-cores: the tensor-core kernels have no sliding window (causal and --kv-len only)");
  gpu::TcBackwardOptions o = tc_options(f.dtype, f.mask, variant);
  o.forward.kv_lens = f.kv_lens;
  if (s.d != 64 && s.d != 128)
    throw InputError("--tensor-cores supports d = 64 and d = 128 (got d = " + std::to_string(s.d) + ")");
  const std::vector<float> dO = grad_output(rf, bf, in);
  BackwardOutputs out(rf, bf, out_o, out_lse);
  gpu::check_tc_backward_request(s, in.scale, o);
  const gpu::DeviceInfo info = gpu::device_info();
  const gpu::TcBackwardResult r = gpu::fa2_tc_backward(in.Q->data(), in.K->data(), in.V->data(), dO.data(), s,
                                                       in.scale, o);
  out.stage(in, r.O, r.lse, r.dQ, r.dK, r.dV);
  out.finish([&] {  // printed once the files are written, before they are renamed into place
    std::printf("gpu        forward + backward, FlashAttention-2 on tensor cores (%s backward, inputs and gradients in "
                "%s, float32 accumulation) on %s\n", gpu::tc_backward_variant(r.variant, s.d).sm90_only ? "wgmma" : "mma.sync",
                dtype_name(f.dtype), info.name.c_str());
    std::printf("shape      B = %lld, H = %lld, Nq = %lld, Nk = %lld, d = %lld, tau = %.9g; mask %s\n", (long long)s.B,
                (long long)s.H, (long long)s.nq, (long long)s.nk, (long long)s.d, in.scale, f.mask.describe().c_str());
    std::printf("dO         %s\n", bf.do_path.empty() ? ("from seed " + std::to_string(rf.seed)).c_str() : bf.do_path.c_str());
    std::printf("kernels    forward variant %d, backward variant %d (%s)\n", r.forward_variant, r.variant,
                gpu::tc_backward_variant(r.variant, s.d).what.c_str());
    std::printf("device mem %.3f MiB allocated\n", r.device_bytes / 1048576.0);
  });
  return 0;
}

int run_bench_backward_tensor_cores(const TcBackwardBenchRequest& r) {
  check_tc_backward_bench_request(r);  // app/gpu_requests.cpp
  const Dtype dtype = parse_dtype(r.dtype);
  if (r.variant != 0)
    for (int64_t d : r.dims) gpu::tc_backward_variant(r.variant, d);
  const gpu::DeviceInfo info = gpu::device_info();
  nlohmann::json rows = nlohmann::json::array();
  if (!r.as_json) {
    std::printf("bench-gpu --backward --tensor-cores on %s (%d SMs), %s, %s, B = %lld, H = %lld, CUDA events, %d "
                "warm-up runs (at least %.0f ms), median of %d, %d calls back to back per sample\n", info.name.c_str(), info.sm_count, r.dtype.c_str(),
                r.causal ? "causal" : "no mask", (long long)r.B, (long long)r.H, r.warmup,
                gpu::timing_warmup_ms(r.warmup), r.reps, gpu::timing_batch());
    std::printf("TFLOP/s: forward 4 B H N^2 d, backward 2.5 x that, fwd + bwd 3.5 x (causal: the kept N(N+1)/2 "
                "scores); fwd+bwd ms = the sum of the two medians; fp32 = the float32 fa2 kernels "
                "(gpu/backward.h, N <= %lld, non-causal)\n\n", (long long)r.fp32_max_n);
    std::printf("%6s %4s %4s %4s | %8s %8s %9s | %7s %7s %7s | %9s | %8s %7s\n", "N", "d", "fwd v", "bwd v", "fwd ms",
                "bwd ms", "f+b ms", "fwd TF", "bwd TF", "f+b TF", "peak MiB", "fp32 bwd", "fp32 TF");
  }
  for (int64_t d : r.dims)
    for (int64_t n : r.sizes) {
      const gpu::Shape s = gpu::make_shape(r.B, r.H, n, n, d);
      const float scale = float(1.0 / std::sqrt(double(d)));
      const double pairs = r.causal ? double(n) * double(n + 1) / 2 : double(n) * double(n);
      const double fwd_flops = 4.0 * double(s.heads()) * pairs * double(d);
      gpu::TcBackwardOptions o;
      o.forward.dtype = dtype;
      o.forward.causal = r.causal;
      o.variant = r.variant;
      const gpu::TcBackwardTiming t = gpu::bench_fa2_tc_backward(s, scale, o, r.warmup, r.reps, 42);
      const double total_ms = t.forward.median_ms + t.backward.median_ms;
      // fa2_tc: the tensor-core kernels (the entry `flashstep plot` reads); fp32: the float32 fa2.
      const nlohmann::json tc = {{"forward_variant", t.forward.variant}, {"backward_variant", t.backward.variant},
                                 {"forward_ms", t.forward.median_ms}, {"backward_ms", t.backward.median_ms},
                                 {"backward_min_ms", t.backward.min_ms}, {"backward_max_ms", t.backward.max_ms},
                                 {"total_ms", total_ms}, {"reps", t.backward.reps},
                                 {"forward_tflops", fwd_flops / (t.forward.median_ms * 1e9)},
                                 {"backward_tflops", 2.5 * fwd_flops / (t.backward.median_ms * 1e9)},
                                 {"total_tflops", 3.5 * fwd_flops / (total_ms * 1e9)},
                                 {"peak_bytes", t.backward.peak_bytes}};
      nlohmann::json row = {{"n", n}, {"d", d}, {"B", s.B}, {"H", s.H}, {"forward_flops", fwd_flops},
                            {"backward_flops", 2.5 * fwd_flops}, {"fa2_tc", tc}};
      if (!r.causal && n <= r.fp32_max_n) {  // the same schedule's float32 CUDA-core backward, same shape
        const Tiling tt = make_tiling(n, n, d, 128 * 1024, 64, 64);
        const gpu::BackwardTiming b = gpu::bench_backward(kTensorCoreSchedule, s, scale, tt, gpu::BackwardOptions{},
                                                          r.warmup, r.reps, 7);
        row["fp32"] = {{"forward_ms", b.forward.median_ms}, {"backward_ms", b.backward.median_ms},
                       {"backward_tflops", 2.5 * fwd_flops / (b.backward.median_ms * 1e9)},
                       {"variant", b.backward.variant}, {"peak_bytes", b.total.peak_bytes}};
      }
      rows.push_back(row);
      if (!r.as_json) {
        std::printf("%6lld %4lld %4d %4d | %8.3f %8.3f %9.3f | %7.1f %7.1f %7.1f | %9.1f |", (long long)n, (long long)d,
                    t.forward.variant, t.backward.variant, t.forward.median_ms, t.backward.median_ms, total_ms,
                    tc["forward_tflops"].get<double>(), tc["backward_tflops"].get<double>(),
                    tc["total_tflops"].get<double>(), t.backward.peak_bytes / 1048576.0);
        if (row.contains("fp32"))
          std::printf(" %8.3f %7.2f\n", row["fp32"]["backward_ms"].get<double>(),
                      row["fp32"]["backward_tflops"].get<double>());
        else
          std::printf(" %8s %7s\n", "-", "-");
        std::fflush(stdout);
      }
    }
  if (r.as_json || !r.json_file.empty()) {
    const nlohmann::json out = {{"device", info.name}, {"sm_count", info.sm_count}, {"dtype", r.dtype},
                                {"tensor_cores", true}, {"backward", true}, {"causal", r.causal},
                                {"warmup", r.warmup}, {"reps", r.reps}, {"rows", rows}};
    if (r.as_json) std::printf("%s\n", out.dump(1).c_str());
    if (!r.json_file.empty()) write_file_atomic(r.json_file, out.dump(1) + "\n");
  }
  return 0;
}

}  // namespace flashstep
