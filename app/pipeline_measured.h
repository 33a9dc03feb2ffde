// The measured figures set beside the pipeline model's rows (`explain --pipeline`, the app's
// Pipeline view): read from the H200's results files under gpu/results/, never typed in code.
//
// The forward: each technique row is the kernel of the ladder that first measured it (the
// results files name kernels by their configuration number), at bf16, B x H x N = 131072 with
// H = 8 (flashstep_tc_bench's shapes). The backward: the default backward's time from
// `bench-gpu --backward --tensor-cores` (bf16, B = 16, H = 16). Paths are relative to the data
// root (core/data_dir.h).
#pragma once
#include <cstdint>
#include <string>

namespace flashstep {

struct MeasuredFigure {
  bool found = false;
  double value = 0;    // forward: TFLOP/s; backward: ms
  double tflops = 0;   // backward: its TFLOP/s as the file gives it
  std::string source;  // the file (and the configuration it names) or why there is none
};

// Where the forward technique `key` (core/pipeline_model.h's techniques) was measured: the results
// file and the configuration number that file gives the kernel at head dimension d. Throws
// std::logic_error for a key the table lacks (a test checks every technique has one).
struct TechniqueSource {
  std::string file;
  int config = 0;
};
TechniqueSource technique_source(const std::string& key, int64_t d);

// The technique's TFLOP/s at (d, N x N, causal) in its results file; found = false (with the
// reason in source) when the file is missing or unreadable or has no such line.
MeasuredFigure measured_forward(const std::string& key, int64_t d, int64_t n, bool causal);
// The default backward's time at (B x H = heads, N x N, d, causal); found = false likewise.
MeasuredFigure measured_backward(int64_t heads, int64_t n, int64_t d, bool causal);

// The results files themselves (relative to the data root), for install rules and tests.
extern const char* const kBackwardResultsFiles[2];  // non-causal, causal

// The heads of the forward's measured shapes (B x H x N = 131072 with H = 8) and the backward's
// (B = 16, H = 16): a model shape with other heads has no measured figure.
int64_t forward_bench_heads(int64_t n);
constexpr int64_t kBackwardBenchHeads = 256;

}  // namespace flashstep
