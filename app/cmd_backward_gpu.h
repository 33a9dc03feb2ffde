// The GPU backward on the command line: `gpu --backward`, `verify --backward` and
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
#include "app/gpu_requests.h"  // check_float32_storage, BackwardBenchFlags, read_grad_output_4d
#include "core/output_files.h"
#include "gpu/backend.h"
#include "gpu/backward.h"

#include <array>
#include <functional>
#include <string>
#include <vector>

namespace flashstep {

// The backward kernels of a schedule (gpu/backward.h), each after its own forward.
gpu::BackwardResult run_backward_on_gpu(Schedule sched, const float* Q, const float* K, const float* V,
                                        const float* dO, const gpu::Shape& s, float scale, const Tiling& t,
                                        const gpu::BackwardOptions& o);

// The inputs `flashstep gpu` has loaded (from the run flags or from .npy files).
struct GpuInputs {
  gpu::Shape s;
  int rank = 2;  // 2: (N, d); 4: (B, H, N, d)
  const std::vector<float>*Q = nullptr, *K = nullptr, *V = nullptr;
  float scale = 1.0f;
  int64_t M = 0;
  gpu::Features features;
};
// A gradient with NaN (unwritten: std::runtime_error) or Inf (overflow from the inputs: InputError).
void check_gradient(const std::vector<float>& g, const char* name);

// dO per head, (B, H, Nq, d) row-major: from --do (Nq x d, or (B, H, Nq, d) for 4-D inputs) or
// from the seed as run --backward draws it (head k from seed + k); checked (shape, NaN, Inf).
std::vector<float> grad_output(const RunFlags& rf, const BackwardFlags& bf, const GpuInputs& in);

// The files gpu --backward writes (--out-o, --out-lse, --out-dq, --out-dk, --out-dv): planned and
// checked on construction (before the GPU work); stage() checks the results (NaN: a bug; Inf:
// InputError) and serialises them; finish() writes all of them or none, prints the report once
// they are written and before they are renamed into place (none if standard output failed), then
// their names.
class BackwardOutputs {
 public:
  BackwardOutputs(const RunFlags& rf, const BackwardFlags& bf, const std::string& out_o, const std::string& out_lse);
  void stage(const GpuInputs& in, const std::vector<float>& O, const std::vector<float>& lse,
             const std::vector<float>& dQ, const std::vector<float>& dK, const std::vector<float>& dV);
  void finish(const std::function<void()>& report);

 private:
  OutputFiles out_;
  std::array<std::string, 5> paths_;
};

// gpu --backward: the forward then the backward of --schedule; O, lse, dQ, dK, dV written
// (those asked for) all or nothing.
int run_gpu_backward(const RunFlags& rf, const BackwardFlags& bf, const GpuInputs& in, int variant,
                     const std::string& out_o, const std::string& out_lse);

// verify --backward: dQ, dK, dV of the GPU against the CPU engine and both against float64;
// fa1 also per j. Returns 0 (PASS) or 1 (FAIL).
int run_verify_backward(const RunFlags& rf, const BackwardFlags& bf, int variant);

// bench-gpu --backward: forward, backward and their total for fa1, fa2 and standard.
int run_bench_backward(const BackwardBenchFlags& bf);

}  // namespace flashstep
