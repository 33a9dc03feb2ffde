// flashstep plot: the Bench view's figures as a PNG, headless (no window, display or OpenGL),
// for slides and the docs.
#include "app/commands.h"
#include "app/flag_checks.h"
#include "app/course/roofline.h"
#include "app/plot/bench_data.h"
#include "app/plot/figures.h"
#include "app/plot/raster.h"
#include "core/checked.h"
#include "core/output_files.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace flashstep {

namespace {

struct PlotFlags {
  std::string bench, out, figure = "all", size;
  int64_t d = 0;  // 0: the smallest head dimension in the file
  bool d_given = false;  // --d was given (0 is then refused, not taken as the default)
};

constexpr int kWidth = 1200, kFigureHeight = 700;  // one figure; `all` stacks them

// The roofline: the simulator's kernels at N = 1024, d (default 64), M = 16384 (one head of GPT-2
// medium, the paper's Figure 2) against the H200's ceilings, with the bench file's measured points.
plot::Figure roofline_from(const PlotFlags& o) {
  const int64_t d = o.d_given ? o.d : 64;  // --d 0 is no head dimension, not "the default"
  if (d < 1 || d > 256) throw InputError("--d for the roofline must be from 1 to 256 (got " + std::to_string(d) + ")");
  // The file first (the checked reader: a FIFO, a folder, a huge or deep file is refused), then
  // the simulation.
  const nlohmann::json bench = plot::load_roofline_bench(o.bench);
  course::Roofline r = course::simulate_roofline(1024, d, 16384);
  course::add_measured(r, bench, std::filesystem::path(o.bench).filename().string());
  return course::roofline_figure(r);
}

int run_plot(PlotFlags o) {
  const bool roofline = o.figure == "roofline";
  // The roofline's measured points come from the shipped file unless another is named; the
  // benchmark's own figures draw the file they are given.
  if (o.bench.empty() && !roofline) throw InputError("--bench is required (only --figure roofline has a default)");
  if (o.bench.empty()) o.bench = course::default_bench_path();
  std::vector<plot::FigureKind> kinds;
  if (o.figure == "all") kinds.assign(std::begin(plot::kFigureKinds), std::end(plot::kFigureKinds));
  else if (!roofline) kinds.push_back(plot::parse_figure(o.figure));
  int w = kWidth, h = kFigureHeight * int(roofline ? 1 : kinds.size());
  if (!o.size.empty()) {
    checked::parse_wxh(o.size, "--size", "1200x700", 400, 300, 8192, &w, &h);
  }
  // The target is checked before the work, and written all at once after it.
  OutputFiles files;
  files.add(o.out, "--out");
  files.add_input(o.bench, "--bench");
  files.check();
  if (roofline) {
    const plot::Figure f = roofline_from(o);
    files.bytes(o.out) = plot::encode_png(plot::render_figures({f}, w, h));
    files.commit();
    std::printf("wrote %s (%dx%d): roofline of %zu series against the %s's ceilings, measured points from %s\n",
                o.out.c_str(), w, h, f.series.size(), course::kH200.name, o.bench.c_str());
    return 0;
  }

  const plot::BenchData b = plot::load_bench(o.bench);
  const std::vector<int64_t>& dims = b.dims;
  int64_t d = o.d;
  if (!o.d_given) d = dims.empty() ? 0 : dims.front();
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
  p->add_option("--bench", o.bench, "bench-gpu --json output, or several runs combined (assets/bench/h200.json); required except for --figure roofline, which defaults to that file");
  p->add_option("--out", o.out, "the PNG to write")->required();
  p->add_option("--figure", o.figure, "bc, tflops, memory, all (default: the three stacked), or roofline (the simulator's kernels against the H200's ceilings, with the file's measured points)");
  p->add_option("--d", o.d, "head dimension of the tflops and memory figures (default: the smallest in the file)")
      ->check(whole_number("--d"))
      ->each([](const std::string&) { o.d_given = true; });
  p->add_option("--size", o.size, "image size WxH (default 1200x700 per figure)");
  p->callback([&set_action] { set_action([] { return run_plot(o); }); });
}

}  // namespace flashstep
