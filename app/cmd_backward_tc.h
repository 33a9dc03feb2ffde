// The tensor-core backward (gpu/backward_tc.h) on the command line: verify, gpu and bench-gpu
// with --backward --tensor-cores. docs/tensor-cores.md, "The backward on tensor cores".
// Every check of the user's input runs before the first call that needs a GPU.
#pragma once
#include "app/cli_backward.h"
#include "app/cmd_backward_gpu.h"
#include "app/commands.h"
#include "app/gpu_requests.h"

#include <string>
#include <vector>

namespace flashstep {

// verify --backward --tensor-cores: dQ, dK, dV of the kernel against the CPU engine emulating its
// rounding (--p-dtype = --dtype, default bf16) and both against float64, each element within the
// bound of core/backward_bound.h. --variant picks the backward kernel. 0 PASS, 1 FAIL.
int run_verify_backward_tensor_cores(const RunFlags& rf, const BackwardFlags& bf, int variant);

// gpu --backward --tensor-cores: forward + backward in --dtype bf16|fp16; O, lse, dQ, dK, dV
// written (those asked for) all or nothing.
int run_gpu_backward_tensor_cores(const RunFlags& rf, const BackwardFlags& bf, const GpuInputs& in, int variant,
                                  const std::string& out_o, const std::string& out_lse);

// bench-gpu --backward --tensor-cores (the request and its checks: app/gpu_requests.h).
int run_bench_backward_tensor_cores(const TcBackwardBenchRequest& r);

}  // namespace flashstep
