// The GPU subcommands' flags and the checks that need no GPU (gpu_requests.h). Nothing here
// calls the CUDA backend: this file is built with and without it.
#include "app/gpu_requests.h"

#include "app/flag_checks.h"
#include "core/backward.h"
#include "core/input_files.h"
#include "core/schedule_registry.h"
#include "core/npy.h"
#include "core/output_files.h"
#include "core/snapshot.h"
#include "gpu/decode.h"
#include "gpu/variant_list.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

namespace flashstep {

// [SECTION] the checks

void check_bench_repetitions(int reps, int warmup) {
  if (reps < 20) throw InputError("--reps must be at least 20 (the median of 20 or more runs)");
  if (warmup < 1) throw InputError("--warmup must be at least 1");
}

void check_bench_request(const BenchFlags& bf) {
  check_bench_repetitions(bf.reps, bf.warmup);
  parse_dtype(bf.dtype);
  parse_sram_size(bf.M);
}

void check_tc_bench_request(const TcBenchRequest& r) {
  if (parse_dtype(r.dtype) == Dtype::fp32)
    throw InputError("--tensor-cores takes bf16, fp16 or fp8 inputs: use --dtype bf16, fp16 or fp8");
  check_bench_repetitions(r.reps, r.warmup);
  if (r.rows < 1) throw InputError("--rows must be at least 1");
  if (!r.no_sweep) {
    if (r.sweep_d != 64 && r.sweep_d != 128)
      throw InputError("--sweep-d with --tensor-cores must be 64 or 128 (got " + std::to_string(r.sweep_d) + ")");
    if (r.sweep_n < 1) throw InputError("--sweep-n must be at least 1");
  }
  for (int64_t d : r.dims)
    if (d != 64 && d != 128)
      throw InputError("bench-gpu --tensor-cores takes --d 64 and/or 128 (got " + std::to_string(d) + ")");
  for (int64_t n : r.sizes)
    if (n < 1) throw InputError("--n values must be at least 1 (got " + std::to_string(n) + ")");
  if (r.variant < 0) throw InputError("--variant must be 0 (the default) or a kernel variant (got " + std::to_string(r.variant) + ")");
}

void check_tc_backward_bench_request(const TcBackwardBenchRequest& r) {
  if (parse_dtype(r.dtype) == Dtype::fp32)
    throw InputError("--tensor-cores takes bf16 or fp16 inputs: use --dtype bf16 or --dtype fp16");
  check_bench_repetitions(r.reps, r.warmup);
  if (r.B < 1 || r.H < 1) throw InputError("--batch and --heads must be at least 1");
  for (int64_t d : r.dims)
    if (d != 64 && d != 128)
      throw InputError("bench-gpu --backward --tensor-cores takes --d 64 and/or 128 (got " + std::to_string(d) + ")");
  for (int64_t n : r.sizes)
    if (n < 1) throw InputError("--n values must be at least 1 (got " + std::to_string(n) + ")");
}

ProblemSpec tensor_core_backward_spec(const RunFlags& rf) {
  ProblemSpec spec = rf.to_spec();
  if (spec.schedule == baseline_schedule().id)
    throw InputError("--tensor-cores runs FlashAttention-2's backward: drop --schedule standard");
  spec.schedule = kTensorCoreSchedule;
  if (spec.options.dtype == Dtype::fp32) spec.options.dtype = Dtype::bf16;
  if (spec.options.p_dtype == Dtype::fp32) spec.options.p_dtype = spec.options.dtype;
  check_tensor_core_spec(spec);
  return spec;
}

void check_bench_backward_request(const BackwardBenchFlags& bf) {
  check_bench_repetitions(bf.reps, bf.warmup);
  check_float32_storage(bf.dtype);
  if (bf.causal) throw InputError("bench-gpu --backward times unmasked attention: drop --causal");
}

void check_tensor_core_head_dim(int64_t d) {
  if (d != 64 && d != 128)
    throw InputError("--tensor-cores supports d = 64 and d = 128 (got d = " + std::to_string(d) + ")");
}

void check_tensor_core_spec(const ProblemSpec& s) {
  if (s.schedule != kTensorCoreSchedule)
    throw InputError(std::string("--tensor-cores runs FlashAttention-2: use --schedule fa2 (got ") +
                     schedule_name(s.schedule) + ")");
  const AttentionOptions& o = s.options;
  if (o.dtype == Dtype::fp32)
    throw InputError("--tensor-cores takes bf16, fp16 or fp8 inputs: add --dtype bf16, fp16 or fp8");
  if (o.dtype != Dtype::fp8 && o.p_dtype != o.dtype)  // fp8 rounds P~ to e4m3 by itself (docs/fp8.md)
    throw InputError(std::string("--tensor-cores rounds P~ to the input type: add --p-dtype ") +
                     dtype_name(o.dtype) + " so the CPU engine does the same arithmetic");
  if (s.q_path.empty()) check_tensor_core_head_dim(s.d);  // from the files: checked once they are read
  if (o.dropout > 0) throw InputError("--tensor-cores: the tensor-core kernels have no dropout");
  if (o.mask.window_left >= 0 || o.mask.window_right >= 0)
    throw InputError("--tensor-cores: the tensor-core kernels have no sliding window (causal and --kv-len only)");
}

void reject_p_dtype_on_float32_kernels(const ProblemSpec& spec) {
  if (spec.options.p_dtype != Dtype::fp32)
    throw InputError("--p-dtype on the GPU needs --tensor-cores (the float32 CUDA-core kernels do not round P~)");
}

void check_standard_float32(Schedule s, Dtype t) {
  if (schedule_info(s).baseline && t != Dtype::fp32)
    throw InputError("--dtype fp16/bf16 on the GPU is implemented for the tiled schedules; the "
                     "standard-attention baseline runs in float32 (use --dtype fp32)");
}

void check_fp8_decode(int64_t d, int variant) {
  if (d != 64 && d != 128)
    throw InputError("the FP8 KV-cache decode takes d = 64 or 128 (got d = " + std::to_string(d) + ")");
  if (variant != 0 && variant != 9 && (variant < 10 || variant > 12))
    throw InputError("the FP8 KV-cache decode runs split-kernel variants 9 and 10, paged or not (0 picks the "
                     "default; 11 and 12 in a ladder build), not " + std::to_string(variant));
}

void check_float32_storage(Dtype t) {
  if (t != Dtype::fp32)
    throw InputError(std::string("the GPU backward runs in float32 only: --dtype ") + dtype_name(t) +
                     " with --backward is not supported on the GPU yet (use --dtype fp32, or "
                     "`flashstep run --backward` for 16-bit storage on the CPU)");
}

// [SECTION] verify

CLI::App* add_verify_subcommand(CLI::App& app, VerifyRequest& r, const std::string& description) {
  auto* verify = app.add_subcommand("verify", description);
  add_run_flags(verify, r.rf);
  verify->add_option("--variant", r.variant,
                     std::string(kFloat32VariantHelp) +
                         "; with --tensor-cores: the defaults (gpu/README.md), and with -DFLASHSTEP_LADDER=ON every rung 1-" + std::to_string(gpu::tc::kLastLadderRung) + " of gpu/ladder/ (13-" + std::to_string(gpu::tc::kLastLadderRung) + " on sm_90 only), 101-104 the Bc sweep"
                         "; with --backward --tensor-cores: 2, and on sm_90 (wgmma) 26 at d = 64, 46 at d = 128; with the ladder 1-" +
                         std::to_string(gpu::tc::kBwdWgmmaLast) + " (" + gpu::bwd_variants_of_one_d(64) + ": d = 64 only; " +
                         gpu::bwd_variants_of_one_d(128) + ": d = 128 only)" +
                         "; with --tensor-cores --dtype fp8: 0 the default, with the ladder 1-" +
                         std::to_string(gpu::tc::kFp8LadderLast) + " (" + gpu::fp8_rungs_at(true, false) + ": d = 64; " +
                         gpu::fp8_rungs_at(false, true) + ": d = 128)" +
                         "; with --schedule decode: the split kernel, 3 (every d), 5 and 9 (d = 64, 128 in fp16/bf16; 9: bulk "
                         "copies with an L2 evict_first policy); --dtype fp8: 9 and 10 (batched keys); with the ladder also 4, 6, 7, 8, "
                         "and for fp8 11 and 12 (10 with V of a paged stage by cp.async: all, or its second half)");
  verify->add_option("--tol", r.tol, "max rel difference CPU tiled vs GPU tiled (default 5e-6)");
  auto* b = verify->add_flag("--backward", r.bwd.backward,
                             "compare the backward pass's dQ, dK, dV (and fa1's dQ after every j) instead");
  verify->add_option("--do", r.bwd.do_path, "dO, the loss gradient w.r.t. O, from a .npy file (Nq x d; default: from --seed)")
      ->needs(b);
  verify->add_flag("--tensor-cores", r.tensor_cores, "the bf16/fp16 tensor-core FlashAttention-2 kernel vs the CPU engine "
                                                     "emulating its rounding (--schedule fa2 --dtype bf16 --p-dtype bf16)");
  return verify;
}

void check_verify_request(const VerifyRequest& r) {
  if (r.tensor_cores && r.bwd.backward) {  // app/cmd_backward_tc.cpp
    const ProblemSpec spec = tensor_core_backward_spec(r.rf);
    validate_sizes(spec);
    const Problem p = make_problem(spec);  // sizes, options, input files
    check_tensor_core_head_dim(p.d);
    if (!r.bwd.do_path.empty()) backward_grad_output(r.bwd, p, r.rf.pattern);
    return;
  }
  ProblemSpec spec = r.rf.to_spec();
  if (r.tensor_cores) {
    check_tensor_core_spec(spec);
    validate_sizes(spec);
    return;
  }
  reject_p_dtype_on_float32_kernels(spec);
  if (r.bwd.backward) check_float32_storage(spec.options.dtype);
  else check_standard_float32(spec.schedule, spec.options.dtype);
  const Problem p = make_problem(spec);  // sizes, options, input files
  if (p.dtype == Dtype::fp8) check_fp8_decode(p.d, r.variant);  // only decode gets here (main.cpp)
  if (r.bwd.backward && !r.bwd.do_path.empty()) backward_grad_output(r.bwd, p, r.rf.pattern);  // dO's shape and values
}

// [SECTION] gpu

CLI::App* add_gpu_subcommand(CLI::App& app, GpuRequest& r, const std::string& description) {
  auto* g = app.add_subcommand("gpu", description);
  add_run_flags(g, r.rf);
  g->add_option("--variant", r.variant, kFloat32VariantHelp);
  g->add_option("--kv-lens", r.kv_lens, "valid key length per batch entry (B values, 4-D inputs): key padding");
  g->add_option("--out-o", r.out_o, "write O (float32; (Nq, d) or (B, H, Nq, d)) to a .npy file");
  g->add_option("--out-lse", r.out_lse, "write lse = m + log l (float32; (Nq) or (B, H, Nq))");
  add_backward_flags(g, r.bwd);  // --backward, --do, --out-dq/-dk/-dv: app/cli_backward.cpp
  g->add_flag("--tensor-cores", r.tensor_cores, "with --backward: forward + backward on tensor cores in --dtype bf16 or "
                                                "fp16 (FlashAttention-2; --variant picks the backward kernel)");
  g->add_option("--snapshots", r.snapshots, "write the state after every j (fa1: O, l, m in HBM; fa2: O_i, l_i, m_i on "
                                            "chip; with --backward dQ) and the final O, lse to a folder for compare");
  return g;
}

namespace {

void shape_of(const NpyArray& a, const char* name, int64_t& B, int64_t& H, int64_t& N, int64_t& d) {
  if (a.shape.size() == 2) {
    B = H = 1;
    N = a.shape[0];
    d = a.shape[1];
  } else if (a.shape.size() == 4) {
    B = a.shape[0];
    H = a.shape[1];
    N = a.shape[2];
    d = a.shape[3];
  } else {
    throw InputError(std::string(name) + " must be 2-D (N, d) or 4-D (B, H, N, d); it has " +
                     std::to_string(a.shape.size()) + " dimensions");
  }
  for (float x : a.data)
    if (!std::isfinite(x)) throw InputError(std::string(name) + " contains NaN or Inf");
}

// The snapshot folder's checks (app/cmd_gpu_snapshots.cpp runs the same before its GPU work).
void check_gpu_snapshots_request(const GpuRequest& r, const ProblemSpec& spec) {
  if (!r.kv_lens.empty()) throw InputError("--snapshots takes one head: drop --kv-lens (use --kv-len)");
  if (!r.out_o.empty() || !r.out_lse.empty() || !r.bwd.out_dq.empty() || !r.bwd.out_dk.empty() || !r.bwd.out_dv.empty())
    throw InputError("--snapshots writes the final O, lse (and dQ) into its folder: drop --out-o/--out-lse/--out-d*");
  const Problem p = make_problem(spec);
  check_standard_float32(p.schedule, p.dtype);
  Mat dO;
  if (r.bwd.backward) {
    check_float32_storage(p.dtype);
    dO = backward_grad_output(r.bwd, p, r.rf.pattern);
  }
  check_snapshot_size(snapshot_problem(p, make_tiling(p), r.bwd.backward ? &dO : nullptr));
  check_snapshot_target(r.snapshots);
}

}  // namespace

GpuInputFiles read_gpu_input_files(const ProblemSpec& spec) {
  if (spec.k_path.empty() || spec.v_path.empty()) throw InputError("give all three of --q, --k and --v, or none");
  GpuInputFiles in;
  in.q = read_npy(spec.q_path);
  in.k = read_npy(spec.k_path);
  in.v = read_npy(spec.v_path);
  int64_t qb, qh, qn, qd, kb, kh, kn, kd, vb, vh, vn, vd;
  shape_of(in.q, "Q", qb, qh, qn, qd);
  shape_of(in.k, "K", kb, kh, kn, kd);
  shape_of(in.v, "V", vb, vh, vn, vd);
  if (in.q.shape.size() != in.k.shape.size() || in.q.shape.size() != in.v.shape.size() || kb != qb ||
      vb != qb || kh != qh || vh != qh || kd != qd || vd != qd || vn != kn)
    throw InputError("mismatched shapes: need Q (B, H, Nq, d), K and V (B, H, Nk, d), all 2-D or all 4-D");
  in.rank = int(in.q.shape.size());
  in.s = {qb, qh, qn, kn, qd};
  return in;
}

std::vector<float> read_grad_output_4d(const std::string& path, const gpu::Shape& s, const Problem& p) {
  const NpyArray a = read_npy(path);
  const std::vector<int64_t> want = {s.B, s.H, s.nq, s.d};
  if (a.shape != want) {
    std::string got;
    for (int64_t x : a.shape) got += (got.empty() ? "" : ", ") + std::to_string(x);
    throw InputError("dO has shape (" + got + ") but must be (B, H, Nq, d) = (" + std::to_string(s.B) + ", " +
                     std::to_string(s.H) + ", " + std::to_string(s.nq) + ", " + std::to_string(s.d) + "), like Q");
  }
  for (int64_t k = 0; k < s.heads(); ++k)
    check_grad_output(p, Eigen::Map<const Mat>(a.data.data() + k * s.nq * s.d, s.nq, s.d));
  return a.data;
}

void check_gpu_request(const GpuRequest& r) {
  ProblemSpec spec = r.rf.to_spec();
  if (r.tensor_cores) {  // forward + backward on tensor cores: app/cmd_backward_tc.cpp
    if (!r.snapshots.empty()) throw InputError("--snapshots is for the float32 kernels: drop --tensor-cores");
    if (!r.bwd.backward)
      throw InputError("gpu --tensor-cores runs forward + backward: add --backward (the forward alone: verify or "
                       "bench-gpu --tensor-cores)");
    if (spec.schedule == baseline_schedule().id)
      throw InputError("--tensor-cores runs FlashAttention-2: drop --schedule standard");
    if (spec.options.dtype == Dtype::fp32)
      throw InputError("--tensor-cores takes bf16 or fp16 inputs: add --dtype bf16 or --dtype fp16");
    if (spec.options.dropout > 0) throw InputError("--tensor-cores: the tensor-core kernels have no dropout");
    if (spec.options.mask.window_left >= 0 || spec.options.mask.window_right >= 0)
      throw InputError("--tensor-cores: the tensor-core kernels have no sliding window (causal and --kv-len only)");
  }
  if (!r.snapshots.empty()) return check_gpu_snapshots_request(r, spec);
  if (!r.tensor_cores) reject_p_dtype_on_float32_kernels(spec);
  if (!r.kv_lens.empty() && spec.options.mask.kv_len >= 0)
    throw InputError("give --kv-len (one length) or --kv-lens (one per batch entry), not both");
  // The problem's sizes: from the run flags, or from the input files.
  gpu::Shape s{1, 1, spec.nq, spec.nk, spec.d};
  int rank = 2;
  if (!spec.q_path.empty()) {
    const GpuInputFiles in = read_gpu_input_files(spec);
    s = in.s;
    rank = in.rank;
    spec.q_path = spec.k_path = spec.v_path = "";
    spec.nq = s.nq;
    spec.nk = s.nk;
    spec.d = s.d;
  }
  validate_sizes(spec);
  if (r.tensor_cores) check_tensor_core_head_dim(s.d);
  if (!r.bwd.backward) return;
  if (!r.tensor_cores) check_float32_storage(spec.options.dtype);
  Problem p;  // what check_grad_output and backward_grad_output read
  p.nq = s.nq;
  p.nk = s.nk;
  p.d = s.d;
  p.seed = r.rf.seed;
  p.pattern = r.rf.pattern;
  if (!r.bwd.do_path.empty()) {
    if (rank == 4) read_grad_output_4d(r.bwd.do_path, s, p);
    else backward_grad_output(r.bwd, p, r.rf.pattern);
  }
  // The outputs: distinct files, none of them an input (app/cmd_backward_gpu.cpp plans the same).
  OutputFiles out;
  const std::pair<const std::string*, const char*> targets[] = {
      {&r.out_o, "--out-o"}, {&r.out_lse, "--out-lse"}, {&r.bwd.out_dq, "--out-dq"}, {&r.bwd.out_dk, "--out-dk"},
      {&r.bwd.out_dv, "--out-dv"}};
  for (const auto& [path, what] : targets)
    if (!path->empty()) out.add(*path, what);
  const std::pair<const std::string*, const char*> inputs[] = {
      {&r.rf.q, "--q"}, {&r.rf.k, "--k"}, {&r.rf.v, "--v"}, {&r.bwd.do_path, "--do"}};
  for (const auto& [path, what] : inputs)
    if (!path->empty()) out.add_input(*path, what);
  out.check();
}

// [SECTION] bench-gpu

CLI::App* add_bench_gpu_subcommand(CLI::App& app, BenchGpuRequest& r, const std::string& description) {
  BenchFlags& bf = r.flags;
  auto* b = app.add_subcommand("bench-gpu", description);
  r.n_opt = b->add_option("--n", bf.sizes, "sequence lengths (default 1024 2048 4096 8192 16384)");
  r.d_opt = b->add_option("--d", bf.dims, "head dimensions (default 64 128)");
  b->add_option("--M", bf.M, "SRAM size that sets Br, Bc by the paper's formulas (default 128KiB)");
  b->add_option("--rows", bf.rows, "B x H x N: batch x heads fill the GPU with this many rows (default 131072)");
  b->add_option("--reps", bf.reps, "timed runs per point, median reported (default 20, minimum 20)");
  b->add_option("--warmup", bf.warmup, "untimed runs first (default 3)");
  b->add_option("--back-to-back", bf.batch,
                "calls issued back to back per timed sample, the time per call reported (default 10; 1-1000): "
                "the host's work before each launch runs under the previous call, as for PyTorch's side");
  b->add_option("--variant", bf.variant,
                "kernel variant (default 0: automatic); with --tensor-cores a rung as for verify, with --dtype fp8 0-" +
                    std::to_string(gpu::tc::kFp8LadderLast));
  b->add_option("--sweep-n", bf.sweep_n, "N for the Bc sweep (default 4096)");
  b->add_option("--sweep-d", bf.sweep_d, "d for the Bc sweep (default 64, as in the paper)");
  b->add_flag("--no-sweep", bf.no_sweep, "skip the Bc sweep");
  for (const ScheduleInfo* info : schedules()) {  // --no-fa1, --no-fa2, --no-standard
    const std::string name = info->name;
    b->add_flag_callback("--no-" + name, [&bf, name] { bf.skip.push_back(name); },
                         std::string("skip ") + info->device_title);
  }
  b->add_flag("--causal", bf.causal, "fa2 with a causal mask (fully masked blocks skipped)");
  r.dtype_opt = b->add_option("--dtype", bf.dtype, "fa2's storage type: fp32 (default), fp16, bf16");
  b->add_flag("--json", bf.as_json, "print JSON instead of tables");
  b->add_option("--json-file", bf.json_file, "also write the JSON to this file");
  b->add_flag("--backward", bf.backward, "time forward + backward of fa1, fa2 and standard instead (no sweep)");
  b->add_flag("--decode", r.decode, "flash-decoding at Nq = 1 over --nk, --d, --heads (bf16 default): split-KV vs "
                                    "no splits vs fa2, K/V bandwidth against the measured copy bandwidth");
  r.nk_opt = b->add_option("--nk", r.dr.nks, "--decode: key lengths (default 4096 16384 65536 262144)");
  b->add_option("--heads", r.dr.heads, "--decode: B x H values (default 32 256; H = 8)");
  b->add_option("--splits", r.dr.splits, "--decode: S for every point (default: the device's default for the shape, "
                                      "gpu/decode_backend.cpp)")
      ->check(at_least_one("splits"));
  b->add_option("--sdpa", r.dr.sdpa_json, "--decode: PyTorch's times from gpu/tools/sdpa_decode_bench.py --json, set beside");
  r.page_opt = b->add_option("--page-size", r.dr.page_size, "--decode: also time the K/V cache in pages of P tokens through a block table");
  b->add_option("--sweep-variants", r.dr.sweep_variants, "--decode: instead of the table, time these split-kernel variants "
                                                         "(gpu/decode.cu: 3-10) x --sweep-splits per shape");
  b->add_option("--sweep-splits", r.dr.sweep_splits, "--decode: the S values of the sweep (default 1 2 4 8 16 32)");
  b->add_flag("--read-streams", r.dr.read_streams, "--decode: instead of the table, the read bandwidth of several "
                                                   "ways of streaming 2 GiB (bulk copies, register loads; a ladder build: gpu/ladder/read_streams.cu)");
  b->add_flag("--no-fp32", r.no_fp32, "with --backward --tensor-cores: skip the float32 kernels beside it");
  b->add_flag("--tensor-cores", r.tensor_cores, "FlashAttention-2 on tensor cores (bf16 default, or --dtype fp16) vs cuBLAS "
                                                "standard attention, N = 1024, 4096, 16384 (or --n), d = 64, 128 (or --d), "
                                                "then the Bc sweep (Br 128, Bc 16-128; --sweep-d 64 or 128); with "
                                                "--backward: forward + backward at B = 16, H = 16, N = 4096, 16384, beside "
                                                "the float32 kernels");
  return b;
}

TcBenchRequest tc_bench_request(const BenchGpuRequest& r) {
  const BenchFlags& bf = r.flags;
  TcBenchRequest t{r.dtype_opt && r.dtype_opt->count() ? bf.dtype : "bf16", bf.causal, bf.rows, bf.warmup, bf.reps,
                   bf.as_json, bf.json_file, bf.sweep_n, bf.sweep_d, bf.no_sweep};
  if (r.n_opt && r.n_opt->count()) t.sizes = bf.sizes;  // else N = 1024, 4096, 16384
  if (r.d_opt && r.d_opt->count()) t.dims = bf.dims;
  t.variant = bf.variant;
  // --no-standard leaves standard attention out (at 256 heads of N = 16384 its S and P alone need
  // 264 GB); the other --no-NAME flags name schedules this table does not time.
  for (const std::string& name : bf.skip) {
    if (name != baseline_schedule().name)
      throw InputError("bench-gpu --tensor-cores times fa2 on tensor cores with standard attention beside it: --no-" + name +
                       " does not apply (--no-standard leaves standard attention out)");
    if (t.dtype == "fp8") throw InputError("bench-gpu --tensor-cores --dtype fp8 times no standard attention: --no-standard does not apply");
    t.no_standard = true;
  }
  return t;
}

DecodeBenchRequest decode_bench_request(const BenchGpuRequest& r) {
  const BenchFlags& bf = r.flags;
  DecodeBenchRequest dr = r.dr;  // --nk, --heads, --splits, --sdpa; the rest from bench-gpu's flags
  dr.dims = bf.dims;
  if (r.dtype_opt && r.dtype_opt->count()) dr.dtype = bf.dtype;
  dr.M = bf.M;
  dr.warmup = bf.warmup;
  dr.reps = bf.reps;
  dr.as_json = bf.as_json;
  dr.json_file = bf.json_file;
  return dr;
}

TcBackwardBenchRequest tc_backward_bench_request(const BenchGpuRequest& r) {
  const BenchFlags& bf = r.flags;
  TcBackwardBenchRequest t;  // B = 16, H = 16, N = 4096, 16384 unless --n
  t.dtype = r.dtype_opt && r.dtype_opt->count() ? bf.dtype : "bf16";
  t.causal = bf.causal;
  if (r.n_opt && r.n_opt->count()) t.sizes = bf.sizes;
  if (r.d_opt && r.d_opt->count()) t.dims = bf.dims;
  t.warmup = bf.warmup;
  t.reps = bf.reps;
  t.variant = bf.variant;
  t.as_json = bf.as_json;
  t.json_file = bf.json_file;
  if (r.no_fp32) t.fp32_max_n = 0;
  return t;
}

void check_decode_bench_sweep(const DecodeBenchRequest& r) {
  if (r.page_size < 0) throw InputError("--page-size must be at least 1 (tokens per page)");
  for (int v : r.sweep_variants)
    if (v < gpu::kFirstDecodeVariant || v > gpu::kLastDecodeVariant)
      throw InputError("--sweep-variants: " + std::to_string(v) + " is not a decode kernel variant (" +
                       std::to_string(gpu::kFirstDecodeVariant) + "-" + std::to_string(gpu::kLastDecodeVariant) + ")");
  for (int64_t S : r.sweep_splits)
    if (S < 1 || S > 8192) throw InputError("--sweep-splits: " + std::to_string(S) + " is out of range 1..8192");
  if (!r.sweep_splits.empty() && r.sweep_variants.empty())
    throw InputError("--sweep-splits goes with --sweep-variants");
  if (r.read_streams && !r.sweep_variants.empty())
    throw InputError("--read-streams and --sweep-variants are two different runs: pick one");
}

std::vector<SdpaPoint> parse_sdpa_times(const std::string& text, const std::string& name) {
  constexpr size_t kMaxRows = 4096, kMaxWord = 64;  // the script writes tens of rows
  const nlohmann::json j = parse_json_input(text, name);
  auto fail = [&name](const std::string& field, const std::string& what) -> void {
    throw InputError(name + ": " + field + " " + what);
  };
  if (!j.is_object() || !j.contains("rows") || !j["rows"].is_array())
    fail("rows", "must be an array (the top level an object, as sdpa_decode_bench.py --json writes)");
  const nlohmann::json& rows = j["rows"];
  if (rows.size() > kMaxRows) fail("rows", "has " + std::to_string(rows.size()) + " entries; at most " + std::to_string(kMaxRows));
  std::vector<SdpaPoint> out;
  for (size_t k = 0; k < rows.size(); ++k) {
    const std::string at = "rows[" + std::to_string(k) + "].";
    const nlohmann::json& r = rows[k];
    if (!r.is_object()) fail("rows[" + std::to_string(k) + "]", "must be an object, not " + json_excerpt(r));
    auto size = [&](const char* key) {
      if (!r.contains(key) || !r[key].is_number_integer() || r[key].get<int64_t>() < 1 || r[key].get<int64_t>() > kMaxSeq)
        fail(at + key, "must be a whole number from 1 to 2^28");
      return std::to_string(r[key].get<int64_t>());
    };
    auto word = [&](const char* key) {
      if (!r.contains(key) || !r[key].is_string() || r[key].get_ref<const std::string&>().size() > kMaxWord)
        fail(at + key, "must be a string of at most " + std::to_string(kMaxWord) + " characters");
      return r[key].get<std::string>();
    };
    SdpaPoint p;
    p.key = size("nk") + "/" + size("d") + "/" + size("heads") + "/" + word("dtype");
    if (!r.contains("best_ms") || r["best_ms"].is_null()) continue;  // no backend ran this shape
    const nlohmann::json& ms = r["best_ms"];
    if (!ms.is_number() || !(ms.get<double>() > 0) || !std::isfinite(ms.get<double>()))
      fail(at + "best_ms", "must be a positive number of milliseconds, or null");
    p.ms = ms.get<double>();
    p.backend = word("best_backend");
    out.push_back(p);
  }
  return out;
}

std::vector<SdpaPoint> read_sdpa_times(const std::string& path) {
  if (path.empty()) return {};
  return parse_sdpa_times(read_input_file(path, "--sdpa file", int64_t(16) << 20), "--sdpa file " + path);
}

void check_bench_gpu_request(const BenchGpuRequest& r) {
  const BenchFlags& bf = r.flags;
  if (bf.batch < 1 || bf.batch > 1000)
    throw InputError("--back-to-back must be between 1 and 1000 (calls per timed sample), not " + std::to_string(bf.batch));
  if (!r.decode && ((r.nk_opt && r.nk_opt->count()) || !r.dr.sdpa_json.empty() || r.dr.splits != 0 ||
                    r.dr.page_size != 0 || !r.dr.sweep_variants.empty() || !r.dr.sweep_splits.empty() ||
                    r.dr.read_streams))
    throw InputError("--nk, --splits, --sdpa, --page-size, --sweep-* and --read-streams belong to --decode");
  if (r.page_opt && r.page_opt->count() && r.dr.page_size < 1)
    throw InputError("--page-size " + std::to_string(r.dr.page_size) + " must be at least 1 (tokens per page)");
  if (r.decode) check_decode_bench_sweep(r.dr);
  if (r.decode) read_sdpa_times(r.dr.sdpa_json);  // a bad file is refused before any GPU work
  if (r.decode && (r.tensor_cores || bf.backward))
    throw InputError("--decode times the forward on CUDA cores: drop --tensor-cores/--backward");
  if (r.decode && r.dtype_opt && r.dtype_opt->count() && bf.dtype == "fp8") {
    for (int64_t d : bf.dims) {
      check_fp8_decode(d, 0);
      for (int v : r.dr.sweep_variants) check_fp8_decode(d, v);  // 9, paged or not
    }
  }
  if (r.decode) return check_bench_repetitions(bf.reps, bf.warmup);
  if (r.tensor_cores && bf.backward) return check_tc_backward_bench_request(tc_backward_bench_request(r));
  if (r.tensor_cores) return check_tc_bench_request(tc_bench_request(r));
  if (!bf.backward) return check_bench_request(bf);
  BackwardBenchFlags b;
  b.reps = bf.reps;
  b.warmup = bf.warmup;
  b.dtype = parse_dtype(bf.dtype);
  b.causal = bf.causal;
  check_bench_backward_request(b);
}

}  // namespace flashstep
