// `flashstep explain --pipeline`: the pipeline model's timeline and prediction
// (core/pipeline_model.h; with --backward, core/pipeline_backward.h), beside the H200's measured
// figures (app/pipeline_measured.h). Its flags are registered on explain by add_pipeline_flags;
// explain's callback hands over to run_pipeline_explain when --pipeline is given.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace flashstep {

struct PipelineFlags {
  bool on = false;        // --pipeline
  bool backward = false;  // --backward: the default tensor-core backward instead of the forward
  std::string technique;  // --technique: a forward row (pipeline::technique_keys()); default "default"
  int variant = 0;        // --variant: refused with --pipeline (a ladder rung; the rows are techniques)
  bool causal = false;    // --causal
  bool in_turn = false;   // --tensor-in-turn (pipeline::Rates::tensor_in_turn)
  double wait_clk = 0;    // --wait-clk: latency of each wait on a product (pipeline::Rates::wait_clk)
  int64_t heads = 0;      // --heads: B x H; 0: the benchmarks' (forward B x H x N = 131072 with H = 8, backward 256)
  std::string nq_flag = "--nq", nk_flag = "--nk";  // the flags that gave Nq and Nk, for messages
  std::vector<CLI::Option*> not_modelled;  // explain's flags the model has no use for (--M, --splits, ...)
  CLI::Option *variant_opt = nullptr, *causal_opt = nullptr, *heads_opt = nullptr, *wait_opt = nullptr,
              *turn_opt = nullptr, *technique_opt = nullptr, *backward_opt = nullptr;
};
void add_pipeline_flags(CLI::App* explain, PipelineFlags& f);
// Prints the model's explanation for (nq, nk, d); throws InputError on flags without --pipeline
// or a shape the model does not cover.
int run_pipeline_explain(const PipelineFlags& f, int64_t nq, int64_t nk, int64_t d);
// Throws InputError when a --pipeline-only flag was given without --pipeline, or a flag in
// not_modelled with it.
void check_pipeline_flags(const PipelineFlags& f);

}  // namespace flashstep
