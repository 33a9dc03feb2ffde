// `flashstep explain --pipeline`: the pipeline model's timeline and prediction
// (core/pipeline_model.h). Its flags are registered on explain by add_pipeline_flags; explain's
// callback hands over to run_pipeline_explain when --pipeline is given.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace flashstep {

struct PipelineFlags {
  bool on = false;      // --pipeline
  int variant = 0;      // --variant: a Hopper rung 13-22 or 26-29, 0 the one the model predicts fastest
  bool causal = false;  // --causal
  bool in_turn = false;  // --tensor-in-turn (pipeline::Rates::tensor_in_turn)
  double wait_clk = 0;  // --wait-clk: latency of each wait on a product (pipeline::Rates::wait_clk)
  int64_t heads = 0;    // --heads: B x H; 0: B x H x N = 131072 rows with H = 8, as bench-gpu
  std::string nq_flag = "--nq", nk_flag = "--nk";  // the flags that gave Nq and Nk, for messages
  std::vector<CLI::Option*> not_modelled;  // explain's flags the model has no use for (--M, --splits, ...)
  CLI::Option *variant_opt = nullptr, *causal_opt = nullptr, *heads_opt = nullptr, *wait_opt = nullptr, *turn_opt = nullptr;
};
void add_pipeline_flags(CLI::App* explain, PipelineFlags& f);
// Prints the model's explanation for (nq, nk, d); throws InputError on flags without --pipeline
// or a shape the model does not cover.
int run_pipeline_explain(const PipelineFlags& f, int64_t nq, int64_t nk, int64_t d);
// Throws InputError when a --pipeline-only flag was given without --pipeline, or a flag in
// not_modelled with it.
void check_pipeline_flags(const PipelineFlags& f);

}  // namespace flashstep
