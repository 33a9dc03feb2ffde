// The roofline: the device's compute and bandwidth ceilings, and where attention's kernels sit
// against them. Standard attention is three kernels (S = QK^T, softmax, O = PV), each reading its
// inputs from HBM and writing its result back; FlashAttention is one fused kernel. Each kernel's
// arithmetic intensity is its FLOPs over its HBM bytes, both from the simulator: the standard
// kernels' from the recorded steps of their pseudocode lines, the fused kernels' from their
// totals. The measured points are the bench file's (assets/bench/h200.json): FLOPs over the
// bytes it predicts, against the TFLOP/s it measured.
#pragma once
#include "app/course/device.h"
#include "app/plot/figures.h"
#include "core/trace.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace flashstep::course {

struct RooflineKernel {
  std::string label;       // "S = QK^T (standard)"
  double flops = 0, bytes = 0;
  std::string flops_source, bytes_source;  // source names (docs/course.md)
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }
  std::string intensity_source() const { return flops_source + " / " + bytes_source; }
};

struct MeasuredPoint {
  std::string label;          // "fa1 fp32", "fa2 TC bf16"
  int64_t n = 0, d = 0;
  double intensity = 0, tflops = 0;
  std::string intensity_source, tflops_source;  // bench:/runs/0/rows/2/... pointers
};

struct Roofline {
  DeviceCeilings device = kH200;
  int64_t n = 0, d = 0;
  std::vector<RooflineKernel> kernels;  // S = QK^T, softmax, PV, fused fa1, fused fa2
  std::vector<MeasuredPoint> measured;  // at head dimension d
  std::string bench_name;
};

// `standard` is a recorded run of standard attention, fa1 and fa2 runs of the same problem
// (their totals are enough); their names are the runs' names in the sources.
Roofline make_roofline(const Trace& standard, const std::string& standard_name, const Trace& fa1,
                       const std::string& fa1_name, const Trace& fa2, const std::string& fa2_name);
// Adds the bench file's measured points at the roofline's d (unforced: a file without them adds none).
void add_measured(Roofline& r, const nlohmann::json& bench, const std::string& bench_name);
// Runs the three schedules at N, d, M itself (the `plot --figure roofline` path).
Roofline simulate_roofline(int64_t n, int64_t d, int64_t M);

// The figure: both ceilings, the simulated kernels on the float32 roof, the measured points.
plot::Figure roofline_figure(const Roofline& r);

// The shipped bench file (assets/bench/h200.json) found from the source tree or the install.
std::string default_bench_path();
nlohmann::json load_json_file(const std::string& path);  // throws InputError naming the file

}  // namespace flashstep::course
