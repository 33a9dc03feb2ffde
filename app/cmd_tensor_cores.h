// --tensor-cores on verify and bench-gpu (issue 10): the bf16/fp16 FlashAttention-2 kernels of
// gpu/tensor_core.h against the CPU engine's emulation of their rounding (--p-dtype), and timed
// next to the cuBLAS standard baseline. docs/tensor-cores.md, "Verified against the CPU emulation".
#pragma once
#include "app/commands.h"
#include "app/gpu_requests.h"  // check_tensor_core_spec, reject_p_dtype_on_float32_kernels, TcBenchRequest

namespace flashstep {

// verify --tensor-cores: returns 0 (PASS) or 1 (FAIL).
int run_verify_tensor_cores(const RunFlags& rf, int variant);

// bench-gpu --tensor-cores: the table, then the Bc sweep (JSON key "sweep").
int run_bench_tensor_cores(const TcBenchRequest& r);

}  // namespace flashstep
