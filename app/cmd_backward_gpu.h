// The GPU backward on the command line (issue 9): `gpu --backward`, `verify --backward` and
// `bench-gpu --backward` on top of gpu/backward.h. The forward's commands (cmd_gpu_run.cpp,
// cmd_verify.cpp, cmd_bench_gpu.cpp) call in here when --backward is given.
//
// Every check of the user's input (flags, dO's shape and values, the storage type, output
// targets) runs before the first call that needs a GPU, so bad input gives its own error line
// on a machine without one.
#pragma once
#include <algorithm>
#include "app/cli_backward.h"
#include "app/commands.h"
#include "gpu/backend.h"
#include "gpu/backward.h"

#include <functional>
#include <string>
#include <vector>

namespace flashstep {

// The backward kernels of a schedule (gpu/backward.h), each after its own forward.
gpu::BackwardResult run_backward_on_gpu(Schedule sched, const float* Q, const float* K, const float* V,
                                        const float* dO, const gpu::Shape& s, float scale, const Tiling& t,
                                        const gpu::BackwardOptions& o);

// Checked before a GPU is looked for: the kernels of gpu/backward.h are float32 only.
void check_float32_storage(Dtype t);

// verify's --backward and --do (verify writes no files).
void add_verify_backward_flags(CLI::App* verify, BackwardFlags& f);

// The inputs `flashstep gpu` has loaded (from the run flags or from .npy files).
struct GpuInputs {
  gpu::Shape s;
  int rank = 2;  // 2: (N, d); 4: (B, H, N, d)
  const std::vector<float>*Q = nullptr, *K = nullptr, *V = nullptr;
  float scale = 1.0f;
  int64_t M = 0;
  gpu::Features features;
};
// gpu --backward: the forward then the backward of --schedule; O, lse, dQ, dK, dV written
// (those asked for) all or nothing.
int run_gpu_backward(const RunFlags& rf, const BackwardFlags& bf, const GpuInputs& in, int variant,
                     const std::string& out_o, const std::string& out_lse);

// verify --backward: dQ, dK, dV of the GPU against the CPU engine and both against float64;
// fa1 also per j. Returns 0 (PASS) or 1 (FAIL).
int run_verify_backward(const RunFlags& rf, const BackwardFlags& bf, int variant);

// bench-gpu --backward: forward, backward and their total for fa1, fa2 and standard.
struct BackwardBenchFlags {
  std::vector<int64_t> sizes, dims;
  int64_t M = 0;
  int reps = 20, warmup = 3, variant = 0;
  std::vector<std::string> skip;  // --no-NAME: schedules not timed
  bool as_json = false;
  bool skips(const std::string& name) const { return std::find(skip.begin(), skip.end(), name) != skip.end(); }
  std::string json_file;
  Dtype dtype = Dtype::fp32;  // refused unless fp32
  bool causal = false;        // refused
  std::function<gpu::Shape(int64_t n, int64_t d)> shape;  // bench-gpu's (B, H, N, d) at B x H x N fixed
};
int run_bench_backward(const BackwardBenchFlags& bf);

}  // namespace flashstep
