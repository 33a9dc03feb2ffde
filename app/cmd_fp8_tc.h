// --tensor-cores --dtype fp8 on verify and bench-gpu: the FP8 forward on Hopper's tensor cores
// (gpu/fp8_tc.h) against the CPU engine's FP8 emulation and float64 (the checks: the top of
// app/cmd_fp8_tc.cpp; docs/fp8.md, "On the GPU: the forward").
#pragma once
#include "app/commands.h"
#include "app/gpu_requests.h"

namespace flashstep {

// verify --schedule fa2 --tensor-cores --dtype fp8 [--variant N]: returns 0 (PASS) or 1 (FAIL).
// variant 0 is the default kernel of d; 1-3 the ladder's rungs (gpu/ladder/fp8_rungs.cu).
int run_verify_fp8_tensor_cores(const RunFlags& rf, int variant);

// bench-gpu --tensor-cores --dtype fp8 [--variant N]: the FP8 kernel beside the bf16 default,
// TFLOP/s and ratio.
int run_bench_fp8_tensor_cores(const TcBenchRequest& r);

}  // namespace flashstep
