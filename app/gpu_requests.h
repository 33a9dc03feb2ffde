// The requests of the GPU subcommands (verify, gpu, bench-gpu): their flags, and every check
// of them that needs no GPU. Built with and without CUDA: the real subcommands (cmd_verify.cpp,
// cmd_gpu_run.cpp, cmd_bench_gpu.cpp) and the stubs of a build without CUDA (gpu_stub.cpp)
// register the same flags and run the same checks first, so bad input gets its own one-line
// error on every build, and only a good request meets "no GPU backend" or "no usable GPU".
#pragma once
#include "app/cli_backward.h"
#include "app/commands.h"
#include "core/npy.h"
#include "core/tolerance.h"
#include "gpu/backend.h"  // gpu::Shape (plain structs; nothing here calls the backend)

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace flashstep {

// [SECTION] verify

struct VerifyRequest {
  RunFlags rf;
  int variant = 0;
  double tol = kTiledTol;
  BackwardFlags bwd;          // --backward, --do
  bool tensor_cores = false;  // --tensor-cores (app/cmd_tensor_cores.cpp)
};
CLI::App* add_verify_subcommand(CLI::App& app, VerifyRequest& r, const std::string& description);
void check_verify_request(const VerifyRequest& r);

// [SECTION] gpu

struct GpuRequest {
  RunFlags rf;
  int variant = 0;
  std::string out_o, out_lse;
  std::vector<int64_t> kv_lens;
  BackwardFlags bwd;      // --backward, --do, --out-dq/-dk/-dv
  bool tensor_cores = false;  // with --backward: app/cmd_backward_tc.cpp
  std::string snapshots;  // --snapshots DIR (app/cmd_gpu_snapshots.cpp)
};
CLI::App* add_gpu_subcommand(CLI::App& app, GpuRequest& r, const std::string& description);
void check_gpu_request(const GpuRequest& r);

// `flashstep gpu`'s input files, read and checked: each 2-D (N, d) or 4-D (B, H, N, d), all of
// one rank, Q (B, H, Nq, d) with K and V (B, H, Nk, d), no NaN or Inf.
struct GpuInputFiles {
  NpyArray q, k, v;
  int rank = 2;
  gpu::Shape s;
};
GpuInputFiles read_gpu_input_files(const ProblemSpec& spec);

// dO for 4-D inputs from --do: shape (B, H, Nq, d) like Q, every head checked as run --backward
// checks its dO (check_grad_output: NaN, Inf). `p` carries Nq, Nk, d, seed and pattern.
std::vector<float> read_grad_output_4d(const std::string& path, const gpu::Shape& s, const Problem& p);

// [SECTION] bench-gpu

struct BenchFlags {
  std::vector<int64_t> sizes = {1024, 2048, 4096, 8192, 16384};
  std::vector<int64_t> dims = {64, 128};
  std::string M = "128KiB";
  int64_t rows = 131072;  // B * H * N: the batch that fills the GPU
  int reps = 20, warmup = 3;
  // Calls back to back per timed sample (gpu/backend.h's set_timing_batch): 10, as PyTorch's side
  // is timed (gpu/tools/sdpa_timing.py), so that neither side's launch latency idles the GPU.
  int batch = 10;
  int64_t sweep_n = 4096, sweep_d = 64;
  bool no_sweep = false, as_json = false;
  std::vector<std::string> skip;  // --no-NAME: schedules not timed
  bool causal = false;          // fa2 with a causal mask (fully masked blocks skipped)
  std::string dtype = "fp32";   // fa2's storage type
  std::string json_file;  // also write the JSON here (the table still prints)
  int variant = 0;
  bool backward = false;  // forward + backward instead (app/cmd_backward_gpu.cpp)
};
// bench-gpu --decode (app/cmd_decode_gpu.cpp): flash-decoding at Nq = 1.
struct DecodeBenchRequest {
  std::vector<int64_t> nks = {4096, 16384, 65536, 262144};
  std::vector<int64_t> dims = {64, 128};
  std::vector<int64_t> heads = {32, 256};  // B x H (H = 8)
  std::string dtype = "bf16";
  std::string M = "128KiB";  // sets Bc by the paper's formula, so the splits are the CPU's
  int64_t splits = 0;        // 0: the default per shape
  int warmup = 3, reps = 20;
  std::string sdpa_json;     // PyTorch's times (gpu/tools/sdpa_decode_bench.py --json) to set beside
  int64_t page_size = 0;     // --page-size: a paged column beside the unpaged one (core/paged_kv.h)
  // --sweep-variants / --sweep-splits: instead of the table, every (variant, S) per shape
  std::vector<int> sweep_variants;
  std::vector<int64_t> sweep_splits;
  bool read_streams = false;  // --read-streams: instead of the table, the read-stream shapes' GB/s
  std::string json_file;
  bool as_json = false;
};

struct BenchGpuRequest {
  BenchFlags flags;
  bool tensor_cores = false;
  bool no_fp32 = false;              // --backward --tensor-cores without the float32 kernels beside it
  bool decode = false;               // --decode: flash-decoding at Nq = 1 (--nk, --heads, --splits, --sdpa)
  DecodeBenchRequest dr;
  CLI::Option* nk_opt = nullptr;
  CLI::Option* page_opt = nullptr;   // --page-size: 0 given is an error, not "unpaged"
  CLI::Option* dtype_opt = nullptr;  // --tensor-cores takes bf16 unless --dtype is given
  CLI::Option* n_opt = nullptr;      // --tensor-cores has its own default sizes unless --n/--d are given
  CLI::Option* d_opt = nullptr;
};
CLI::App* add_bench_gpu_subcommand(CLI::App& app, BenchGpuRequest& r, const std::string& description);
void check_bench_gpu_request(const BenchGpuRequest& r);

// bench-gpu --tensor-cores (app/cmd_tensor_cores.cpp).
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
  int variant = 0;  // --variant: 0 the default kernels; a rung (ladder build) or FP8 variant otherwise
  bool no_standard = false;  // --no-standard: standard attention (S and P in HBM) not timed beside it
};
TcBenchRequest tc_bench_request(const BenchGpuRequest& r);

// bench-gpu --backward --tensor-cores (app/cmd_backward_tc.cpp): forward, backward, their sum and
// TFLOP/s per (N, d) at B x H fixed, with the float32 fa2 kernels beside it (non-causal, N <= fp32_max_n).
struct TcBackwardBenchRequest {
  std::string dtype = "bf16";
  bool causal = false;
  std::vector<int64_t> sizes = {4096, 16384}, dims = {64, 128};
  int64_t B = 16, H = 16;
  int warmup = 3, reps = 20, variant = 0;
  bool as_json = false;
  std::string json_file;
  int64_t fp32_max_n = 4096;  // the float32 kernels take ~1 s per run at N = 16384
};
TcBackwardBenchRequest tc_backward_bench_request(const BenchGpuRequest& r);
DecodeBenchRequest decode_bench_request(const BenchGpuRequest& r);
// --page-size at least 1, the sweep's variants among 3, 4, 5 and its S at least 1.
void check_decode_bench_sweep(const DecodeBenchRequest& r);
// bench-gpu --decode --sdpa: PyTorch's fastest backend per shape from gpu/tools/
// sdpa_decode_bench.py --json, keyed "NK/D/HEADS/DTYPE". Read by the checked input reader (a
// regular file of at most 16 MiB, depth 64) and checked field by field; every problem is an
// InputError naming the file and the field. An empty path gives no points.
struct SdpaPoint {
  std::string key;
  double ms = 0;
  std::string backend;
};
std::vector<SdpaPoint> read_sdpa_times(const std::string& path);
std::vector<SdpaPoint> parse_sdpa_times(const std::string& text, const std::string& name);

// bench-gpu --backward (app/cmd_backward_gpu.cpp).
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

// [SECTION] the checks, one per rule, also called by the runs themselves

// The benchmark's repetitions: at least 20 timed runs (their median) and one warm-up.
void check_bench_repetitions(int reps, int warmup);
void check_bench_request(const BenchFlags& bf);  // bench-gpu without --backward or --tensor-cores
void check_tc_bench_request(const TcBenchRequest& r);
void check_tc_backward_bench_request(const TcBackwardBenchRequest& r);

// The tensor-core backward's problem: --dtype defaults to bf16; --p-dtype, if given, must be the
// same type (the kernel rounds P and dS to its storage type, which the CPU engine emulates);
// FlashAttention-2 only, d = 64 or 128, no dropout or sliding window.
ProblemSpec tensor_core_backward_spec(const RunFlags& rf);
void check_bench_backward_request(const BackwardBenchFlags& bf);

// Every request the tensor-core kernels cannot take, as one InputError, before any GPU call
// (so a machine without a GPU gives the same errors): fp32, d not 64 or 128, a schedule other
// than fa2, --p-dtype other than the storage type, dropout, a sliding window.
void check_tensor_core_spec(const ProblemSpec& spec);
void check_tensor_core_head_dim(int64_t d);

// The float32 kernels do not round P~: --p-dtype on verify or gpu without --tensor-cores would
// compare a rounded CPU run with an unrounded GPU run. One InputError.
void reject_p_dtype_on_float32_kernels(const ProblemSpec& spec);

// The GPU's standard-attention baseline runs in float32 only (fa1 and fa2 take 16-bit storage).
void check_standard_float32(Schedule s, Dtype t);

// --dtype fp8 on the GPU is flash-decoding from an FP8 KV cache (gpu/decode.cu): d = 64 or 128,
// the split kernel's variant 9 unpaged or 5 paged (0 picks it). Checked before any GPU is looked for.
void check_fp8_decode(int64_t d, int variant);

// The backward kernels of gpu/backward.h are float32 only.
void check_float32_storage(Dtype t);

}  // namespace flashstep
