// The Pipeline view's state: the pipeline model (core/pipeline_model.h) for one rung and shape,
// its Gantt timeline and every rung's prediction, next to the TFLOP/s measured on the H200
// (assets/bench/h200_hopper.json: the ladder's bench and PyTorch's sdpa in the same device call).
// Rebuilt on a change only.
#pragma once
#include "core/pipeline_model.h"

#include <string>
#include <vector>

namespace flashstep::gui {

struct PipelineState {
  int variant = 15;  // the default kernel on the H200
  int d = 128;
  int n = 4096;
  bool causal = false;
  bool in_turn = false;  // pipeline::Rates::tensor_in_turn
  float wait_clk = 0;
  // Built by rebuild():
  pipeline::Timeline timeline;   // one SM, the first kShownBlocks K/V blocks
  pipeline::Rung rung;
  struct Row {
    pipeline::Rung rung;
    double predicted = 0;
    double measured = 0;         // 0: no measurement in the file
    std::string measured_source;
  };
  std::vector<Row> rows;         // every modelled rung at this shape
  pipeline::Prediction prediction;
  struct Measured {
    int variant = 0;             // 0: a reference kernel, named by `kernel`
    int64_t d = 0, n = 0;
    bool causal = false;
    double tflops = 0;
    std::string source, kernel;
  };
  std::vector<Measured> measured;    // the file of measurements
  std::vector<Measured> references;  // its reference kernels at this shape (cuDNN, flash)
  bool measured_loaded = false;
  std::string measured_error;
  static constexpr int kShownBlocks = 4;

  // Reads the measurements (a bench JSON); keeps going without them when the file is bad.
  void load_measured(const std::string& path);
  // Runs the model for the current settings.
  void rebuild();
};

}  // namespace flashstep::gui
