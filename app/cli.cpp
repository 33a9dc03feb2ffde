// The run flags that run, compare, verify and gpu share (--n, --nq, --nk, --d, --M, ...) and the
// ProblemSpec they make. The subcommands: app/cmd_run.cpp, app/cmd_explain.cpp,
// app/cmd_lesson.cpp (the headless ones), app/cmd_*.cpp.
#include "app/commands.h"
#include "app/flag_checks.h"
#include "core/checked.h"
#include "core/input_files.h"

#include <cstdio>
#include <string>

namespace flashstep {

ProblemSpec RunFlags::to_spec() const {
  const bool have_files = !q.empty() || !k.empty() || !v.empty();
  if (n_opt->count() && (nq_opt->count() || nk_opt->count()))
    throw InputError("give either --n or --nq/--nk, not both");
  if (have_files && (n_opt->count() || nq_opt->count() || nk_opt->count() || d_opt->count()))
    throw InputError("sizes come from the .npy files: drop --n/--nq/--nk/--d");
  if (have_files && pattern_opt && pattern_opt->count())  // it would shape nothing but a generated dO
    throw InputError("--pattern generates the inputs, and Q, K, V come from the .npy files: drop --pattern");
  const int64_t nq_asked = nq_opt->count() ? nq : (n_opt->count() ? n : 64);
  const int64_t nk_asked = nk_opt->count() ? nk : (n_opt->count() ? n : (nq_opt->count() ? nq : 64));
  ProblemSpec s = sizes_spec(nq_asked, nk_asked, d, parse_sram_size(M), br, bc);
  if (scale_opt->count()) s.scale = scale;
  s.schedule = parse_schedule(schedule);
  s.splits = splits;
  if (page_opt && page_opt->count()) s.page_size = page_size;
  s.seed = seed;
  s.pattern = pattern;
  s.q_path = q;
  s.k_path = k;
  s.v_path = v;
  s.options = options;
  s.options.dtype = parse_dtype(excerpt(dtype));  // quoted cut if refused
  s.options.p_dtype = parse_dtype(excerpt(p_dtype));
  if (!fp8_scale.empty()) s.options.fp8_scale = parse_fp8_scale(fp8_scale);
  if (!window.empty()) {
    // Two decimal whole numbers and one comma, nothing else ("1, 2" and "0x10,0" are refused).
    const size_t comma = window.find(',');
    int64_t side[2] = {0, 0};
    try {
      if (comma == std::string::npos) throw InputError("");
      side[0] = checked::parse_int(window.substr(0, comma), "--window");
      side[1] = checked::parse_int(window.substr(comma + 1), "--window");
    } catch (const InputError&) {
      throw InputError("--window must be LEFT,RIGHT (e.g. 64,0; -1 for no limit), got '" + excerpt(window) + "'");
    }
    s.options.mask.window_left = side[0];
    s.options.mask.window_right = side[1];
  }
  return s;
}

void add_run_flags(CLI::App* c, RunFlags& f) {
  f.n_opt = c->add_option("--n", f.n, "sequence length, Nq = Nk = N (default 64)")->check(whole_number("N"));
  f.nq_opt = c->add_option("--nq", f.nq, "number of queries Nq")->check(whole_number("Nq"));
  f.nk_opt = c->add_option("--nk", f.nk, "number of keys/values Nk")->check(whole_number("Nk"));
  f.d_opt = c->add_option("--d", f.d, "head dimension d (default 16)")->check(whole_number("d"));
  c->add_option("--M", f.M, "SRAM size: elements (float32 words), or KiB as in 64KiB (default 1024)");
  c->add_option("--br", f.br, "override the Q block size Br")->check(whole_number("Br"));
  c->add_option("--bc", f.bc, "override the K/V block size Bc")->check(whole_number("Bc"));
  f.scale_opt = c->add_option("--scale", f.scale, "softmax scale tau (default 1/sqrt(d); 1 = Algorithm 1 as printed)")
                    ->check(real_number("scale"));
  std::string schedule_help;  // "fa1 (Algorithm 1), fa2 (FlashAttention-2) or standard (Algorithm 0)"
  const auto& all = schedules();
  for (size_t k = 0; k < all.size(); ++k)
    schedule_help += std::string(k == 0 ? "" : k + 1 == all.size() ? " or " : ", ") + all[k]->name + " (" +
                     all[k]->paper_name + ")";
  c->add_option("--schedule", f.schedule, schedule_help);
  c->add_option("--splits", f.splits, "decode's number of K/V splits S, 1 <= S <= Tc (default: enough to fill "
                                      "132 SMs, FlashAttention's heuristic; docs/decode.md)")
      ->check(at_least_one("splits"));
  f.page_opt = c->add_option("--page-size", f.page_size, "decode: the KV cache in pages of P tokens at shuffled places "
                                                         "(seeded by --seed), read through a block table (docs/decode.md)")
                   ->check(whole_number("page-size"));
  c->add_flag("--causal", f.options.mask.causal, "causal mask (bottom-right aligned when Nq != Nk)");
  c->add_option("--window", f.window, "sliding window LEFT,RIGHT around the aligned key (-1 = no limit)");
  c->add_option("--kv-len", f.options.mask.kv_len, "key padding: only the first KV_LEN keys are valid")->check(whole_number("kv-len"));
  c->add_option("--dtype", f.dtype, "storage precision of Q, K, V, O in HBM: fp32, fp16, bf16, or fp8 (e4m3 Q, K, V with scales, O in bf16; "
                                   "the forward of fa1, fa2, decode on the CPU) (arithmetic is float32)");
  c->add_option("--fp8-scale", f.fp8_scale, "with --dtype fp8: one float32 scale per-tensor (default) or per-block "
                                             "(a Q block of Br rows, a K/V block of Bc rows; docs/fp8.md)");
  c->add_flag("--rotate", f.options.rotate, "with --dtype fp8: rotate Q and K by a seeded random Hadamard matrix "
                                           "before quantisation (incoherent processing; d a power of two)");
  c->add_option("--p-dtype", f.p_dtype, "round P~ to fp16 or bf16 before the P V product, as a tensor-core kernel does (default fp32: not rounded)");
  c->add_option("--dropout", f.options.dropout, "dropout probability p in [0, 1) (Philox 4x32-10 keyed by --seed)")
      ->check(real_number("dropout"));
  c->add_option("--seed", f.seed, "seed for generated inputs (default 1)")->check(strict("seed", checked::parse_uint));
  f.pattern_opt = c->add_option("--pattern", f.pattern, "generated inputs: random, uniform, large, ramp, outliers (a few entries "
                                         "of magnitude 10-30 per row)");
  c->add_option("--q", f.q, "Q from a .npy file (Nq x d, float32 or float64)");
  c->add_option("--k", f.k, "K from a .npy file (Nk x d)");
  c->add_option("--v", f.v, "V from a .npy file (Nk x d)");
}

void refuse_fp8_on_gpu(const CLI::App& app) {
  for (const char* name : {"verify", "gpu", "bench-gpu"}) {
    const CLI::App* sub = nullptr;
    try {
      sub = app.get_subcommand(name);
    } catch (const CLI::OptionNotFound&) {
      continue;  // a build without that subcommand
    }
    if (!sub->parsed()) continue;
    bool fp8 = false, decode = false, tensor_cores = false, backward = false;
    for (const CLI::Option* o : sub->get_options()) {
      if (o->count() == 0) continue;
      const std::string& opt = o->get_name();
      if (opt == "--dtype" && o->results().back() == "fp8") fp8 = true;
      if (opt == "--schedule" && std::string(name) == "verify" && o->results().back() == "decode") decode = true;  // registry-exempt: the GPU reads FP8 in the decode kernel only
      if (opt == "--decode" && std::string(name) == "bench-gpu") decode = true;
      if (opt == "--tensor-cores") tensor_cores = true;
      if (opt == "--backward") backward = true;
    }
    // The GPU's FP8 paths: flash-decoding from an FP8 KV cache (gpu/decode.cu) and the forward on
    // Hopper's tensor cores (gpu/fp8_kernel.cuh), verify and bench-gpu only (docs/fp8.md).
    const bool fp8_decode = decode && !tensor_cores && !backward;
    const bool fp8_forward = tensor_cores && !backward && !decode && std::string(name) != "gpu";
    if (fp8 && !fp8_decode && !fp8_forward)
      throw InputError(std::string(name) + " --dtype fp8: on the GPU FP8 runs in flash-decoding (verify --schedule "
                       "decode --dtype fp8, bench-gpu --decode --dtype fp8) and in the forward on tensor cores (verify "
                       "--schedule fa2 --tensor-cores --dtype fp8, bench-gpu --tensor-cores --dtype fp8); the CPU "
                       "engine's FP8 forward (" + fp8_schedule_names() + "): flashstep run --dtype fp8");
  }
}

}  // namespace flashstep
