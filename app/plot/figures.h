// The benchmark's three figures as data: axes (range, scale, ticks with their labels), series
// and notes, decided here once so that the app's Bench view and `flashstep plot` draw the same
// thing (app/plot/draw_figure.h draws a Figure with ImGui's draw lists).
//   bc:     the paper's Figure 2 (middle): Algorithm 1's HBM bytes (bars, the simulator's
//           prediction) and runtime (line, measured) against the block size Bc
//   tflops: TFLOP/s against N, one line per schedule, precision, mask and pass
//   memory: peak device memory against N, the same series
#pragma once
#include "app/plot/bench_data.h"

#include <string>
#include <vector>

namespace flashstep::plot {

enum class FigureKind { bc, tflops, memory };
constexpr FigureKind kFigureKinds[3] = {FigureKind::bc, FigureKind::tflops, FigureKind::memory};
const char* figure_name(FigureKind k);          // "bc", "tflops", "memory"
FigureKind parse_figure(const std::string& s);  // throws InputError

struct Tick {
  double value = 0;
  std::string label;
};

// Log axes (base 2 for N and Bc, which are powers of two; base 10 for values spanning a decade
// or more) or linear ones from 0.
struct Axis {
  std::string label;
  bool log = false;
  double lo = 0, hi = 1;  // the drawn range, a little wider than the data
  std::vector<Tick> ticks;
  double fraction(double v) const;  // 0 at lo, 1 at hi
};

// A series' marker shape: the against-N figures mark a pass by it (forward, backward, forward +
// backward), the roofline its measured points (diamonds against the simulated discs).
enum class Marker { disc, diamond, square, triangle };

struct Series {
  std::string label;
  std::vector<double> x, y;  // ascending x; in the axis' units (GB, ms, TFLOP/s, MiB)
  bool bars = false;         // drawn as bars from the axis' bottom
  bool right = false;        // against the right-hand y axis
  bool dashed = false;       // causal masks
  bool points = false;       // markers only, no line between them (the roofline's kernels)
  Marker marker = Marker::disc;
  int colour = 0;            // index into the drawing's palette
};

struct Figure {
  FigureKind kind = FigureKind::bc;
  std::string title, subtitle;
  Axis x, y, y2;
  bool has_y2 = false;
  std::vector<Series> series;
  std::vector<std::string> notes;  // points the file has but the figure cannot show, and why
  std::string empty;               // why there is nothing to draw ("" when there is)
};

// d: the head dimension of the tflops and memory figures (the Bc sweep has its own).
Figure make_figure(const BenchData& b, FigureKind kind, int64_t d);

// Builds an axis over the values: log2 (powers of two), log10 (a decade or more), or linear from 0.
Axis make_axis(const std::string& label, const std::vector<double>& values, bool powers_of_two);

}  // namespace flashstep::plot
