// --tensor-cores on verify and bench-gpu: the bf16/fp16 FlashAttention-2 kernels of
// gpu/tensor_core.h against the CPU engine's emulation of their rounding (--p-dtype), and timed
// next to the cuBLAS standard baseline. docs/tensor-cores.md, "Verified against the CPU emulation".
#pragma once
#include "app/commands.h"
#include "core/run.h"
#include "app/gpu_requests.h"  // check_tensor_core_spec, reject_p_dtype_on_float32_kernels, TcBenchRequest

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

}  // namespace flashstep
