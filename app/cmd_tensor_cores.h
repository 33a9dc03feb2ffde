// --tensor-cores on verify and bench-gpu (issue 10): the bf16/fp16 FlashAttention-2 kernels of
// gpu/tensor_core.h against the CPU engine's emulation of their rounding (--p-dtype), and timed
// next to the cuBLAS standard baseline. docs/tensor-cores.md, "Verified against the CPU emulation".
#pragma once
#include "app/commands.h"
#include "core/run.h"

#include <vector>

namespace flashstep {

// Every request the tensor-core kernels cannot take, as one InputError, before any GPU call
// (so a machine without a GPU gives the same errors): fp32, d not 64 or 128, a schedule other
// than fa2, --p-dtype other than the storage type, dropout, a sliding window.
void check_tensor_core_spec(const ProblemSpec& spec);

// The float32 kernels do not round P~: --p-dtype on verify or gpu without --tensor-cores would
// compare a rounded CPU run with an unrounded GPU run. One InputError.
void reject_p_dtype_on_float32_kernels(const ProblemSpec& spec);

// The CPU engine (no step log) on a kernel's Br x Bc blocks, so that both see the same running
// maxima; with dO, the backward after the forward.
Trace run_cpu_on_kernel_blocks(Problem p, int64_t Br, int64_t Bc, const Mat* dO = nullptr);

// verify --tensor-cores: returns 0 (PASS) or 1 (FAIL).
int run_verify_tensor_cores(const RunFlags& rf, int variant);

struct TcBenchRequest {
  std::string dtype = "bf16";
  bool causal = false;
  int64_t rows = 131072;  // B x H x N
  int warmup = 3, reps = 20;
  bool as_json = false;
  std::string json_file;
  int64_t sweep_n = 4096, sweep_d = 64;  // the Bc sweep (Figure 2 middle) at full speed
  bool no_sweep = false;
  std::vector<int64_t> sizes = {1024, 4096, 16384}, dims = {64, 128};  // the table's points (--n, --d)
};
// bench-gpu --tensor-cores: the table, then the Bc sweep (JSON key "sweep").
int run_bench_tensor_cores(const TcBenchRequest& r);

}  // namespace flashstep
