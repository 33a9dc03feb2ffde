// --tensor-cores on verify and bench-gpu: the bf16/fp16 FlashAttention-2 kernels of
// gpu/tensor_core.h against the CPU engine's emulation of their rounding (--p-dtype), and timed
// next to the cuBLAS standard baseline. docs/tensor-cores.md, "Verified against the CPU emulation".
#pragma once
#include "app/commands.h"
#include "core/run.h"
#include "app/gpu_requests.h"  // check_tensor_core_spec, reject_p_dtype_on_float32_kernels, TcBenchRequest
#include "gpu/tensor_core.h"    // gpu::Shape, gpu::make_shape

#include <algorithm>
#include <cmath>
#include <vector>

namespace flashstep {

// verify --tensor-cores: returns 0 (PASS) or 1 (FAIL).
// The CPU engine (no step log) on a kernel's Br x Bc blocks, so that both see the same running
// maxima; with dO, the backward after the forward.
Trace run_cpu_on_kernel_blocks(Problem p, int64_t Br, int64_t Bc, const Mat* dO = nullptr);

int run_verify_tensor_cores(const RunFlags& rf, int variant);

// bench-gpu --tensor-cores: the table, then the Bc sweep (JSON key "sweep").
int run_bench_tensor_cores(const TcBenchRequest& r);

// Whether a kernel's output holds a NaN (reported as a failure, never passed off as a result).
inline bool has_nan(const std::vector<float>& v) {
  return std::any_of(v.begin(), v.end(), [](float x) { return std::isnan(x); });
}

// One point of the forward benches (bench-gpu --tensor-cores, with or without --dtype fp8): B x H x
// N = rows with H = 8, the softmax scale 1 / sqrt(d), and the FLOPs that TFLOP/s divides: 4 B H N^2
// d, causal the kept N (N + 1) / 2 scores.
struct TcBenchPoint {
  gpu::Shape shape;
  float scale;
  double flops;
};
inline TcBenchPoint tc_bench_point(int64_t rows, int64_t n, int64_t d, bool causal) {
  constexpr int64_t H = 8;
  const gpu::Shape s = gpu::make_shape(std::max<int64_t>(1, rows / (n * H)), H, n, n, d);
  const double pairs = causal ? double(n) * double(n + 1) / 2 : double(n) * double(n);
  return TcBenchPoint{s, float(1.0 / std::sqrt(double(d))), 4.0 * double(s.heads()) * pairs * double(d)};
}

}  // namespace flashstep
