// The Bench view's state: a bench-gpu JSON file (app/plot/bench_data.h), the chosen figure and
// head dimension, and the figure built from them (rebuilt on a change, not per frame).
#pragma once
#include "app/gui/text_field.h"
#include "app/plot/figures.h"

#include <cstdint>
#include <string>

namespace flashstep::gui {

struct BenchState {
  char path[kPathField] = "";
  bool loaded = false;
  float plot_h = 0;  // the last frame's plot area height in pixels (0: too small to draw); for the state dump
  float y_labels_gap = 0;         // the y axes' labels' room on one line, and whether they were
  bool y_labels_stacked = false;  // drawn on two instead (plot::FigureLayout); for the state dump
  uint32_t figure_background = 0;  // the figure's background colour as last drawn (IM_COL32 packing: R lowest)
  plot::BenchData data;
  plot::FigureKind figure = plot::FigureKind::bc;
  int64_t d = 0;            // head dimension of the tflops and memory figures
  plot::Figure shown;
  std::string error;        // why the last load failed (the previous file stays)
  char hover[256] = "";     // the tooltip of the point under the mouse

  // Reads `file`; on failure keeps what was loaded and sets error. Returns whether it loaded.
  bool load(const std::string& file);
  // Shows figure k at head dimension d (d not in the file: its smallest).
  void select(plot::FigureKind k, int64_t d);
};

}  // namespace flashstep::gui
