// `flashstep explain --pipeline` (app/cmd_pipeline.h): the text comes from core/pipeline_model.
#include "app/cmd_pipeline.h"

#include "core/pipeline_model.h"
#include "core/types.h"

#include <algorithm>
#include <cstdio>

namespace flashstep {

void add_pipeline_flags(CLI::App* ex, PipelineFlags& f) {
  ex->add_flag("--pipeline", f.on,
               "time inside the Hopper kernel instead: the pipeline model's timeline and TFLOP/s (variants 13-22, 26-29, 33-39, 43)");
  f.variant_opt = ex->add_option("--variant", f.variant,
                                 "with --pipeline: the rung, 13-22, 26-29, 33-39 or 43 (default: the one the model predicts fastest)");
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
    return;
  }
  for (CLI::Option* o : {f.variant_opt, f.causal_opt, f.wait_opt, f.turn_opt})
    if (o && o->count()) throw InputError(o->get_name() + " needs --pipeline");
}

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
  // As bench-gpu --tensor-cores and gpu/tools/sdpa_bench.py: B = max(1, 131072 / (8 N)), H = 8,
  // so B x H x Nq = 131072 rows (Nq = 1: 131072 heads). Only a given --heads has a range.
  const bool heads_given = f.heads_opt && f.heads_opt->count();
  s.heads = heads_given ? f.heads : 8 * std::max<int64_t>(1, 131072 / (8 * nq));
  if (heads_given && (s.heads < 1 || s.heads > 65535)) throw InputError("--heads must be in [1, 65535]");
  if (!(f.wait_clk >= 0 && f.wait_clk <= 1e6)) throw InputError("--wait-clk must be in [0, 1e6]");
  pipeline::Rates rates;
  rates.wait_clk = f.wait_clk;
  rates.tensor_in_turn = f.in_turn;
  // --variant 0 is not a rung: pipeline::rung refuses it below. Without --variant, the fastest.
  int v = f.variant;
  if (!(f.variant_opt && f.variant_opt->count())) {
    double best = -1;
    for (const pipeline::Rung& r : pipeline::rungs(d)) {
      const double t = pipeline::predict(r, s, rates).tflops;
      if (r.built && t > best) best = t, v = r.variant;
    }
  }
  std::fputs(pipeline::explain_pipeline(v, s, rates).c_str(), stdout);
  return 0;
}

}  // namespace flashstep
