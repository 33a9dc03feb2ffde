// `flashstep explain --pipeline` (app/cmd_pipeline.h): the model's text comes from core/, the
// measured figures from the results files (app/pipeline_measured.h).
#include "app/cmd_pipeline.h"

#include "app/pipeline_measured.h"
#include "core/pipeline_backward.h"
#include "core/pipeline_model.h"
#include "core/types.h"

#include <algorithm>
#include <cstdio>

namespace flashstep {

void add_pipeline_flags(CLI::App* ex, PipelineFlags& f) {
  ex->add_flag("--pipeline", f.on,
               "time inside the Hopper kernel instead: the pipeline model's timeline and TFLOP/s, one row per technique "
               "beside the H200's measured figure");
  f.technique_opt = ex->add_option("--technique", f.technique,
                                   "with --pipeline: the forward kernel to draw: " + pipeline::technique_keys() +
                                       " (default: default)");
  f.backward_opt = ex->add_flag("--backward", f.backward,
                                "with --pipeline: the default tensor-core backward: what each warpgroup does, the five "
                                "products' throughput bounds, the measured time");
  f.variant_opt = ex->add_option("--variant", f.variant,
                                 "with --pipeline: the ladder's number of a technique's kernel (the configuration its "
                                 "measured figure names), instead of --technique");
  f.causal_opt = ex->add_flag("--causal", f.causal, "with --pipeline: causal mask, bottom-right aligned");
  f.wait_opt = ex->add_option("--wait-clk", f.wait_clk,
                              "with --pipeline: clocks of latency before each softmax starts (default 0)");
  f.turn_opt = ex->add_flag("--tensor-in-turn", f.in_turn,
                            "with --pipeline: warpgroups' products take the tensor cores in turn, first ready first "
                            "(default: they share them evenly)");
  // --heads is explain's own option (also the parallelism section's); the caller sets heads_opt.
}

void check_pipeline_flags(const PipelineFlags& f) {
  if (f.on) {
    // The model times the Hopper kernels at their own tiles, in bf16 on an H200: explain's
    // other flags would change nothing in its answer, so they are refused, not ignored.
    for (CLI::Option* o : f.not_modelled)
      if (o && o->count())
        throw InputError(o->get_name() + " is not an input of the pipeline model (--pipeline times the Hopper "
                                         "kernels at their own tiles, in bf16 on an H200): leave it out");
    if (f.variant_opt && f.variant_opt->count() && f.technique_opt && f.technique_opt->count())
      throw InputError("--variant and --technique both name the kernel: give one");
    if (f.backward && f.variant_opt && f.variant_opt->count())
      throw InputError("--variant names a forward kernel: --backward models the default backward alone");
    if (f.backward && f.technique_opt && f.technique_opt->count())
      throw InputError("--technique names a forward kernel: --backward models the default backward alone");
    if (f.backward && f.turn_opt && f.turn_opt->count())
      throw InputError("--tensor-in-turn is the forward's: the backward's two warpgroups share the tensor cores in step");
    return;
  }
  for (CLI::Option* o : {f.variant_opt, f.causal_opt, f.wait_opt, f.turn_opt, f.technique_opt, f.backward_opt})
    if (o && o->count()) throw InputError(o->get_name() + " needs --pipeline");
}

namespace {

// --variant N: the technique whose measured kernel is configuration N of the ladder at this d.
std::string technique_of_config(int config, int64_t d) {
  if (d != 64 && d != 128) pipeline::techniques(d);  // throws the model's message for this d
  std::string known;
  for (const pipeline::Kernel& k : pipeline::techniques(d)) {
    const int c = technique_source(k.key, d).config;
    if (c == config) return k.key;
    known += (known.empty() ? "" : ", ") + std::to_string(c) + " " + k.key;
  }
  throw InputError("--variant " + std::to_string(config) + " has no row in the pipeline model, whose rows are techniques (" +
                   known + " at d = " + std::to_string(d) + "); the ladder's other rungs are modelled in "
                   "gpu/ladder/pipeline_rungs.h (a -DFLASHSTEP_LADDER=ON build's tests)");
}

// The forward's rows: every technique at this shape, the model beside the measured TFLOP/s.
void print_techniques(const pipeline::Shape& s, const pipeline::Rates& rates, bool bench_shape) {
  std::printf("\nevery technique at this shape (each the one before it with one change; measured: bf16 on the H200, "
              "gpu/results/):\n");
  std::printf("  %-22s %4s %4s %8s %9s %6s %10s %10s %9s %9s\n", "technique", "Br", "Bc", "producer", "ping-pong",
              "intra", "persistent", "clk/block", "model TF", "H200 TF");
  std::string sources;
  for (const pipeline::Kernel& k : pipeline::techniques(s.d)) {
    const pipeline::Prediction p = pipeline::predict(k, s, rates);
    std::string measured = "-";
    if (bench_shape) {
      const MeasuredFigure m = measured_forward(k.key, s.d, s.nq, s.causal);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f", m.value);
      if (m.found) measured = buf;
      sources += "  " + k.key + ": " + m.source + "\n";
    }
    std::printf("  %-22s %4d %4d %8s %9s %6s %10s %10.0f %9.1f %9s\n", k.key.c_str(), k.Br(), k.Bc,
                k.producer ? "yes" : "no", k.pingpong ? "yes" : "no", k.intra ? "yes" : "no",
                k.persistent ? "yes" : "no", p.clk_per_kv_block, p.tflops, measured.c_str());
  }
  if (bench_shape) std::printf("measured in:\n%s", sources.c_str());
  else
    std::printf("(measured figures exist at N = 4096 and 16384, Nq = Nk, d = 64 and 128, with the benchmarks' "
                "number of heads)\n");
}

}  // namespace

int run_pipeline_explain(const PipelineFlags& f, int64_t nq, int64_t nk, int64_t d) {
  // The sizes first: the default grid below divides by Nq.
  const int64_t kMaxModelSeq = int64_t(1) << 22;  // the model's own limit (pipeline::predict)
  for (const auto& [v, flag] : {std::pair<int64_t, const std::string&>{nq, f.nq_flag}, {nk, f.nk_flag}})
    if (v < 1 || v > kMaxModelSeq)
      throw InputError(flag + " must be from 1 to " + std::to_string(kMaxModelSeq) + " for the pipeline model (got " +
                       std::to_string(v) + ")");
  pipeline::Shape s;
  s.nq = nq;
  s.nk = nk;
  s.d = d;
  s.causal = f.causal;
  // The benchmarks' grids: the forward's B x H x N = 131072 with H = 8 (bench-gpu --tensor-cores,
  // flashstep_tc_bench), the backward's B = 16, H = 16 (bench-gpu --backward --tensor-cores).
  const bool heads_given = f.heads_opt && f.heads_opt->count();
  const int64_t bench_heads = f.backward ? kBackwardBenchHeads : forward_bench_heads(nq);
  s.heads = heads_given ? f.heads : bench_heads;
  if (heads_given && (s.heads < 1 || s.heads > 65535)) throw InputError("--heads must be in [1, 65535]");
  if (!(f.wait_clk >= 0 && f.wait_clk <= 1e6)) throw InputError("--wait-clk must be in [0, 1e6]");
  pipeline::Rates rates;
  rates.wait_clk = f.wait_clk;
  rates.tensor_in_turn = f.in_turn;
  const bool bench_shape = nq == nk && (nq == 4096 || nq == 16384) && (d == 64 || d == 128) && s.heads == bench_heads;
  if (f.backward) {
    const std::string text = pipeline::explain_pipeline_backward(s, rates);
    std::fputs(text.c_str(), stdout);
    const pipeline::BackwardPrediction p = pipeline::predict_backward(s, rates);
    if (!bench_shape) {
      std::printf("measured: none at this shape (the H200's backward was timed at N = 4096 and 16384, Nq = Nk, "
                  "d = 64 and 128, 256 heads)\n");
      return 0;
    }
    const MeasuredFigure m = measured_backward(s.heads, nq, d, s.causal);
    if (!m.found) {
      std::printf("measured: none (%s)\n", m.source.c_str());
      return 0;
    }
    std::printf("measured on the H200: %.3f ms, %.1f TFLOP/s (%s)\n", m.value, m.tflops, m.source.c_str());
    std::printf("  the model's %.3f ms is %.2fx of it; the five products' tensor-core bound %.3f ms is %.0f%% of it: "
                "the rest is time the tensor cores wait (softmax, barriers, dQ's adds, latencies the model lacks)\n",
                p.ms, p.ms / m.value, p.tensor_ms, 100 * p.tensor_ms / m.value);
    return 0;
  }
  std::string key = f.technique.empty() ? "default" : f.technique;
  if (f.variant_opt && f.variant_opt->count()) key = technique_of_config(f.variant, d);
  const pipeline::Kernel k = pipeline::technique(key, d);
  std::fputs(pipeline::explain_pipeline(k, s, rates).c_str(), stdout);
  print_techniques(s, rates, bench_shape);
  return 0;
}

}  // namespace flashstep
