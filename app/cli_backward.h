// The backward pass on the command line: `run --backward [--do F] [--out-dq/-dk/-dv F]` and
// the backward rows of `explain`. Kept apart from cli.cpp so the forward's printer stays short.
#pragma once
#include "core/output_files.h"
#include "core/trace.h"

#include <CLI/CLI.hpp>
#include <string>

namespace flashstep {

struct BackwardFlags {
  bool backward = false;
  std::string do_path, out_dq, out_dk, out_dv;
};
// --backward, --do, --out-dq, --out-dk, --out-dv (the last four need --backward).
void add_backward_flags(CLI::App* run, BackwardFlags& f);
// dO from --do (Nq x d, float32 or float64; checked) or generated from the seed.
Mat backward_grad_output(const BackwardFlags& f, const Problem& p, const std::string& pattern);
// Checks the gradients are finite (an InputError naming the tensor otherwise) and plans the
// ones asked for (.npy, float32) into `out`, which the caller commits with the run's others.
void add_backward_outputs(const BackwardFlags& f, const Trace& t, OutputFiles& out);
// The backward's traffic against its closed form, FLOPs, peak SRAM, and its errors against
// float64 from the run's accuracy (core/accuracy.h).
void print_backward_summary(const Trace& t, const Accuracy& a);
// explain: the backward closed forms, Theorem 5's order and (when affordable) the simulation.
void print_explain_backward(int64_t nq, int64_t nk, int64_t d, int64_t M, const Tiling& t);

}  // namespace flashstep
