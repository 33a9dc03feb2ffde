// flashstep plot: the Bench view's figures as a PNG, headless (no window, display or OpenGL),
// for slides and the docs.
#include "app/commands.h"
#include "app/plot/bench_data.h"
#include "app/plot/figures.h"
#include "app/plot/raster.h"
#include "core/checked.h"
#include "core/output_files.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace flashstep {

namespace {

struct PlotFlags {
  std::string bench, out, figure = "all", size;
  int64_t d = 0;  // 0: the smallest head dimension in the file
};

constexpr int kWidth = 1200, kFigureHeight = 700;  // one figure; `all` stacks them

int run_plot(const PlotFlags& o) {
  std::vector<plot::FigureKind> kinds;
  if (o.figure == "all") kinds.assign(std::begin(plot::kFigureKinds), std::end(plot::kFigureKinds));
  else kinds.push_back(plot::parse_figure(o.figure));
  int w = kWidth, h = kFigureHeight * int(kinds.size());
  if (!o.size.empty()) {
    checked::parse_wxh(o.size, "--size", "1200x700", 400, 300, 8192, &w, &h);
  }
  // The target is checked before the work, and written all at once after it.
  OutputFiles files;
  files.add(o.out, "--out");
  files.add_input(o.bench, "--bench");
  files.check();

  const plot::BenchData b = plot::load_bench(o.bench);
  const std::vector<int64_t>& dims = b.dims;
  int64_t d = o.d;
  if (d == 0) d = dims.empty() ? 0 : dims.front();
  else if (std::find(dims.begin(), dims.end(), d) == dims.end()) {
    std::string have;
    for (int64_t x : dims) have += (have.empty() ? "" : ", ") + std::to_string(x);
    throw InputError("--d " + std::to_string(d) + ": " + o.bench + " has timings at d = " + (have.empty() ? "none" : have));
  }
  std::vector<plot::Figure> figures;
  std::string empty;
  for (plot::FigureKind k : kinds) {
    plot::Figure f = plot::make_figure(b, k, d);
    if (f.empty.empty()) figures.push_back(std::move(f));
    else empty += (empty.empty() ? "" : "; ") + f.empty;
  }
  // `all` draws what the file has; a figure asked for by name must be there.
  if (figures.empty() || (o.figure != "all" && !empty.empty())) throw InputError(empty);
  if (o.size.empty()) h = kFigureHeight * int(figures.size());

  const plot::Image im = plot::render_figures(figures, w, h);
  files.bytes(o.out) = plot::encode_png(im);
  files.commit();
  std::printf("wrote %s (%dx%d):", o.out.c_str(), w, h);
  for (const plot::Figure& f : figures) std::printf(" %s", plot::figure_name(f.kind));
  std::printf(" of %s\n", o.bench.c_str());
  return 0;
}

}  // namespace

void add_plot_command(CLI::App& app, const SetAction& set_action) {
  static PlotFlags o;
  auto* p = app.add_subcommand("plot", "draw a bench-gpu --json file's figures to a PNG, headless: the Bc "
                                       "sweep (the paper's Figure 2, middle), TFLOP/s and peak memory against N");
  p->add_option("--bench", o.bench, "bench-gpu --json output, or several runs combined (assets/bench/h200.json)")
      ->required();
  p->add_option("--out", o.out, "the PNG to write")->required();
  p->add_option("--figure", o.figure, "bc, tflops, memory, or all (default: all, stacked)");
  p->add_option("--d", o.d, "head dimension of the tflops and memory figures (default: the smallest in the file)");
  p->add_option("--size", o.size, "image size WxH (default 1200x700 per figure)");
  p->callback([&set_action] { set_action([] { return run_plot(o); }); });
}

}  // namespace flashstep
