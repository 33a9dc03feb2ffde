// A benchmark file read into plain records: what `flashstep bench-gpu --json` wrote (one run:
// the forward table with the Bc sweep, --tensor-cores, --backward, or --backward --tensor-cores),
// or several such runs
// combined as {"flashstep_bench": 1, "runs": [run, ...]} (assets/bench/h200.json). Nothing here
// knows about drawing; app/plot/figures.h turns these records into figures.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace flashstep::plot {

// One schedule timed at one (N, d) by one run.
struct Timing {
  std::string series;     // "fa2 TC bf16, causal": schedule, tensor cores, precision, mask, pass
                          // ("backward", or "forward + backward")
  std::string schedule;   // fa1, fa2, standard
  std::string precision;  // fp32, fp16, bf16
  bool tensor_cores = false, causal = false, backward = false;
  bool with_forward = false;  // a tensor-core backward run's forward + backward (its total_tflops)
  int64_t n = 0, d = 0;
  double median_ms = 0;   // backward runs: the backward pass alone
  double tflops = 0;      // the file's TFLOP/s (backward runs: the backward's)
  int64_t peak_bytes = 0; // device memory allocated
  int run = 0;            // index of the run in the file
};

// One block size of a Bc sweep (the paper's Figure 2, middle): Algorithm 1 in the forward
// table's run, FlashAttention-2 on tensor cores in a --tensor-cores run.
struct SweepPoint {
  std::string series;       // "fa1 fp32", "fa2 TC bf16, causal"
  int64_t Bc = 0, Br = 0, n = 0, d = 0;
  double hbm_bytes = 0;     // the simulator's prediction, there even when the point was not timed
  bool timed = false;
  double median_ms = 0, tflops = 0;
  std::string skipped;      // why it was not timed (shared memory too small)
};

struct BenchData {
  std::string name;                 // the file, for messages
  std::string device;               // "NVIDIA H200"
  std::vector<std::string> sources; // per run: its "source" field, or "run K"
  std::vector<Timing> timings;      // timed entries only; skipped ones are counted in `skipped`
  int skipped = 0;
  std::vector<SweepPoint> sweep;
  std::vector<int64_t> dims;        // the head dimensions with timings, ascending
};

// Throws InputError naming the file and the field (rows[3].fa1.tflops) that is wrong.
BenchData parse_bench(const nlohmann::json& j, const std::string& name);
// The same from a file's text (the fuzz target feeds this); `name` is for messages.
BenchData parse_bench_text(const std::string& text, const std::string& name);
// Reads a bench file (a regular file of at most 16 MiB: core/input_files.h) and parses it.
BenchData load_bench(const std::string& path);

// The bench file as the roofline takes its measured points (course::add_measured): checked as
// every bench file (parse_bench's rules and limits), then every field the roofline reads: a
// row's "flops" and, in its fa1, standard, fa2_tc and standard_tc entries, "hbm_bytes_predicted"
// and "tflops" must be positive numbers where present. Returns the JSON to take the points from.
nlohmann::json parse_roofline_bench(const std::string& text, const std::string& name);
nlohmann::json load_roofline_bench(const std::string& path);

}  // namespace flashstep::plot
