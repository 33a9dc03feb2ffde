// The Pipeline view's state: the pipeline model (core/pipeline_model.h) for one technique of the
// Hopper forward and one shape, its Gantt timeline and every technique's prediction beside its
// TFLOP/s measured on the H200 (gpu/results/, app/pipeline_measured.h); or, with `backward`, the
// default tensor-core backward (core/pipeline_backward.h): what each warpgroup does, the
// throughput bounds and the measured time. PyTorch's kernels measured in the same device calls
// come from assets/bench/h200_hopper.json. Rebuilt on a change only.
#pragma once
#include "app/pipeline_measured.h"
#include "core/pipeline_backward.h"
#include "core/pipeline_model.h"

#include <string>
#include <vector>

namespace flashstep::gui {

struct PipelineState {
  bool backward = false;             // the backward's model instead of the forward's
  std::string technique = "default";  // the forward's kernel (pipeline::technique_keys())
  int d = 128;
  int n = 4096;
  bool causal = false;
  bool in_turn = false;  // pipeline::Rates::tensor_in_turn (the forward's)
  float wait_clk = 0;
  // Built by rebuild():
  pipeline::Timeline timeline;  // one SM: the first kShownBlocks K/V blocks (backward: Q blocks)
  pipeline::Kernel kernel;      // the forward's kernel drawn
  int warpgroups = 2, ctas = 1;  // the timeline's lanes
  struct Row {
    pipeline::Kernel kernel;
    double predicted = 0;  // TFLOP/s
    MeasuredFigure measured;
  };
  std::vector<Row> rows;  // every technique at this shape (the forward)
  pipeline::Prediction prediction;
  pipeline::BackwardPrediction backward_prediction;
  MeasuredFigure backward_measured;
  // Drawn: the narrowest gap between two of the time axis's labels in the last frame, in pixels
  // (--dump-state; below 0 they overlapped).
  float axis_label_gap_px = 0;
  // How far the chart's widest text ran past its column or the view's edge in the last frame, in
  // pixels (0 or less: none cut or drawn over the bars; --dump-state).
  float chart_clip_px = 0;
  float chart_bar_room_px = 0;  // the narrowest width the chart's bars have to run in (the Gantt's, the bars')
  uint32_t lane_colours[2] = {0, 0};  // the chart's alternating lane fills as last drawn (IM_COL32 packing)
  struct Reference {  // a PyTorch kernel measured in the same device call (h200_hopper.json)
    int64_t d = 0, n = 0;
    bool causal = false;
    double tflops = 0;
    std::string kernel;
  };
  std::vector<Reference> measured;    // the reference file's points
  std::vector<Reference> references;  // those at this shape (cuDNN, flash), the later point of a kernel wins
  bool measured_loaded = false;
  std::string measured_error;
  static constexpr int kShownBlocks = 4;

  // Reads PyTorch's reference points (assets/bench/h200_hopper.json); keeps going without them
  // when the file is bad.
  void load_measured(const std::string& path);
  // Runs the model for the current settings.
  void rebuild();
};

}  // namespace flashstep::gui
