// `flashstep plot` as a user runs it: PNGs of the documented size that are pictures (not blank,
// different per figure and per file), and one clear error line with no file for bad input; and
// the figures' hover text in a headless ImGui context.
#include "app/plot/draw_figure.h"
#include "test_helpers.h"
#include "tests/bench_files.h"
#include "tests/png_helpers.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

namespace fsys = std::filesystem;

namespace {

using fstest::distinct_colours;
using fstest::kBench;
using fstest::kBin;
using fstest::kResults;
using fstest::load_png;
using fstest::pixels_differing;
using fstest::run_command;
using fstest::TempDir;

fstest::Image plot_png(const std::string& args, const fsys::path& out) {
  std::string output;
  const int rc = run_command(kBin + " plot " + args + " --out " + out.string(), output);
  INFO(output);
  REQUIRE(rc == 0);
  REQUIRE(output.find("wrote " + out.string()) == 0);
  return load_png(out.string());
}

// A headless ImGui frame (no window): the font DrawFigure and layout_figure measure with.
struct HeadlessFrame {
  ImGuiContext* ctx = ImGui::CreateContext();
  explicit HeadlessFrame(ImVec2 size) {
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = size;
    io.DeltaTime = 1.0f / 60;
    unsigned char* px = nullptr;
    int tw = 0, th = 0;
    io.Fonts->GetTexDataAsAlpha8(&px, &tw, &th);
    ImGui::NewFrame();
  }
  ~HeadlessFrame() {
    ImGui::EndFrame();
    ImGui::DestroyContext(ctx);
  }
};

}  // namespace

TEST_CASE("plot: each figure is a non-blank PNG of the documented size, and they differ", "[plot][cli]") {
  TempDir dir;
  const fstest::Image bc = plot_png("--bench " + kBench + " --figure bc", dir.path / "bc.png");
  const fstest::Image tf = plot_png("--bench " + kBench + " --figure tflops", dir.path / "tflops.png");
  const fstest::Image mem = plot_png("--bench " + kBench + " --figure memory", dir.path / "memory.png");
  const fstest::Image tf128 = plot_png("--bench " + kBench + " --figure tflops --d 128", dir.path / "tflops128.png");
  const fstest::Image single = plot_png("--bench " + kResults + "/forward-fp32/fa1-standard_bench.json --figure tflops", dir.path / "single.png");
  for (const fstest::Image* im : {&bc, &tf, &mem, &tf128, &single}) {
    REQUIRE(im->w == 1200);  // docs/cli.md: 1200 x 700 per figure
    REQUIRE(im->h == 700);
    REQUIRE(distinct_colours(*im) > 50);  // text, bars, lines: anti-aliased shades of several colours
  }
  const size_t area = 1200 * 700;
  for (const auto& [x, y] : {std::pair{&bc, &tf}, {&tf, &mem}, {&bc, &mem}, {&tf, &tf128}, {&tf, &single}})
    REQUIRE(pixels_differing(*x, *y) > area / 50);
}

TEST_CASE("plot: all stacks the figures the file has, and --size sets the image", "[plot][cli]") {
  TempDir dir;
  const fstest::Image all = plot_png("--bench " + kBench, dir.path / "all.png");
  REQUIRE(all.w == 1200);
  REQUIRE(all.h == 3 * 700);
  // A --tensor-cores run has no Bc sweep: `all` draws its two figures.
  const fstest::Image tc = plot_png("--bench " + kResults + "/tensor-core-forward/bench_bf16.json --figure all", dir.path / "tc.png");
  REQUIRE(tc.h == 2 * 700);
  const fstest::Image small = plot_png("--bench " + kBench + " --figure memory --size 640x400", dir.path / "small.png");
  REQUIRE(small.w == 640);
  REQUIRE(small.h == 400);
  REQUIRE(distinct_colours(small) > 50);
}

TEST_CASE("plot: bad input is one clear line, exit 2 and no file", "[plot][cli][errors]") {
  TempDir dir;
  const std::string txt = kResults + "/forward-fp32/fa1-standard_bench.txt", tc = kResults + "/tensor-core-forward/bench_bf16.json";
  const auto [args, expect] = GENERATE_REF(table<std::string, std::string>({
      {"--bench " + dir.path.string() + "/none.json", "cannot read"},
      {"--bench " + txt, "malformed JSON at byte"},
      {"--bench " + kResults + "/dram/ncu.json", "is not a bench-gpu JSON file"},
      {"--bench " + kBench + " --figure pie", "unknown figure 'pie'"},
      {"--bench " + kBench + " --d 96", "--d 96: " + kBench + " has timings at d = 64, 128"},
      {"--bench " + kBench + " --size 10x10", "--size must be between"},
      {"--bench " + kBench + " --size big", "--size must look like"},
      {"--bench " + tc + " --figure bc", "has no Bc sweep"},
      {"--bench " + kBench + " --figure bc --out " + kBench, "--out"},
      {"--bench " + kBench + " --out " + dir.path.string() + "/no/such/dir/x.png", "x.png"},
      {"--figure bc", "--bench is required"},
  }));
  const fsys::path out = dir.path / "out.png";
  std::string output;
  const bool own_out = args.find("--out") == std::string::npos;
  const int rc = run_command(kBin + " plot " + args + (own_out ? " --out " + out.string() : ""), output);
  INFO(args << "\n" << output);
  REQUIRE(rc == 2);
  REQUIRE(output.rfind("flashstep: error: ", 0) == 0);
  REQUIRE(output.find(expect) != std::string::npos);
  REQUIRE(std::count(output.begin(), output.end(), '\n') == 1);
  REQUIRE_FALSE(fsys::exists(out));
  REQUIRE_FALSE(fsys::exists(dir.path / "no"));
}

TEST_CASE("the point under the mouse is named with its series and the file's values", "[plot]") {
  const flashstep::plot::BenchData b = flashstep::plot::load_bench(kBench);
  const HeadlessFrame frame(ImVec2(1200, 700));
  const ImVec2 p0(0, 0), p1(1200, 700);
  char hover[256];
  for (flashstep::plot::FigureKind kind : flashstep::plot::kFigureKinds) {
    const flashstep::plot::Figure f = flashstep::plot::make_figure(b, kind, 128);
    const flashstep::plot::FigureLayout lay = flashstep::plot::layout_figure(f, p0, p1, ImGui::GetFont(), 15);
    REQUIRE(lay.fits);
    ImDrawList* dl = ImGui::GetBackgroundDrawList();
    REQUIRE_FALSE(flashstep::plot::DrawFigure(dl, p0, p1, f, flashstep::plot::light_figure_style(), ImGui::GetFont(), 15,
                                               ImVec2(-FLT_MAX, -FLT_MAX), hover, sizeof hover));
    for (const flashstep::plot::Series& s : f.series)
      for (size_t k = 0; k < s.x.size(); ++k) {
        // At a bar's foot (a line's marker may sit on its top), or on a line's marker: a series
        // drawn over an equal one may answer instead.
        ImVec2 at = lay.point(f, s, k);
        if (s.bars) at.y = lay.a1.y - 2;
        REQUIRE(flashstep::plot::DrawFigure(dl, p0, p1, f, flashstep::plot::light_figure_style(), ImGui::GetFont(), 15,
                                            at, hover, sizeof hover));
        char x[64], y[64];
        std::snprintf(x, sizeof x, "= %.6g\n", s.x[k]);
        std::snprintf(y, sizeof y, "= %.4g", s.y[k]);
        const std::string text = hover;
        INFO(text << " at " << s.label << " point " << k);
        REQUIRE(text.find(x) != std::string::npos);
        const bool same_series = text.rfind(s.label + "\n", 0) == 0;
        if (same_series) REQUIRE(text.find(y) != std::string::npos);
        else REQUIRE(kind == flashstep::plot::FigureKind::memory);  // equal lines (the figure's note names them)
      }
  }
}

TEST_CASE("the legend goes under the plot where beside it the plot would be squeezed", "[plot]") {
  // The throughput figure's fourteen series: beside a 1200 px plot their legend leaves it most of
  // the width; in a tall narrow panel (the course's right column) it would leave a sliver, so it
  // goes under the x axis' label and the plot keeps the width; where the panel is short, beside.
  const flashstep::plot::BenchData b = flashstep::plot::load_bench(kBench);
  const HeadlessFrame frame(ImVec2(1200, 900));
  const flashstep::plot::Figure f = flashstep::plot::make_figure(b, flashstep::plot::FigureKind::tflops, 64);
  REQUIRE(f.series.size() > 8);
  auto lay = [&](float w, float h) {
    return flashstep::plot::layout_figure(f, ImVec2(0, 0), ImVec2(w, h), ImGui::GetFont(), 15);
  };
  const flashstep::plot::FigureLayout wide = lay(1200, 700), tall = lay(420, 900), short_ = lay(640, 330);
  CHECK_FALSE(wide.legend_below);
  CHECK(wide.a1.x - wide.a0.x > 0.5f * 1200);
  CHECK(tall.legend_below);
  CHECK(tall.a1.x - tall.a0.x > 0.75f * 420);  // beside, the legend alone would take most of 420 px
  CHECK(tall.legend_y > tall.a1.y);
  CHECK(tall.legend_y + float(f.series.size()) / float(tall.legend_cols) * 1.35f * 15 <= 900 + 1);
  CHECK_FALSE(short_.legend_below);
  // Narrower than its longest entry (the course's roofline at 1280x720 cut "13.96 FLOP/B" to
  // "13.96 FLOP/"), the one column wraps each label at spaces within the figure, and the legend
  // has at least the lines its labels' widths need at that width.
  CHECK(tall.legend_text_w == 0);
  const flashstep::plot::FigureLayout narrow = lay(230, 1600);
  REQUIRE(narrow.legend_below);
  REQUIRE(narrow.legend_cols == 1);
  REQUIRE(narrow.legend_text_w > 0);
  CHECK(narrow.legend_text_w + 3.0f * 15 <= 230);
  int least_lines = 0;
  for (const flashstep::plot::Series& s : f.series)
    least_lines += int(std::ceil(ImGui::GetFont()->CalcTextSizeA(15, FLT_MAX, 0, s.label.c_str()).x / narrow.legend_text_w));
  CHECK(narrow.legend_lines >= least_lines);
  CHECK(narrow.legend_lines > int(f.series.size()));
  CHECK(narrow.legend_y + float(narrow.legend_lines) * 1.35f * 15 <= 1600 + 1);
}

TEST_CASE("plot: a long series of fresh random timings (N not powers of two) is drawn whole", "[plot][cli]") {
  TempDir dir;
  std::mt19937 rng(1234);
  std::uniform_real_distribution<double> tflops(5, 400), peak(1e7, 1e10);
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t n = 100; n < 100 + 150 * 37; n += 37)  // 150 points: several polyline pieces
    rows.push_back({{"n", n}, {"d", 80}, {"fa1", {{"median_ms", 1.5}, {"tflops", tflops(rng)},
                                                   {"peak_bytes", int64_t(peak(rng))}}}});
  const nlohmann::json file = {{"device", "test"}, {"dtype", "float32"}, {"rows", rows}};
  const std::string path = (dir.path / "long.json").string();
  std::ofstream(path) << file.dump();
  const fstest::Image im = plot_png("--bench " + path + " --figure tflops", dir.path / "long.png");
  REQUIRE(distinct_colours(im) > 50);
  const flashstep::plot::Figure f = flashstep::plot::make_figure(flashstep::plot::load_bench(path),
                                                                 flashstep::plot::FigureKind::tflops, 80);
  REQUIRE(f.series.size() == 1);
  REQUIRE(f.series[0].x.size() == 150);
  REQUIRE(f.y.log);  // 5 to 400 TFLOP/s
  // Where each point lands in the PNG: the layout with the font and size `plot` draws with
  // (app/plot/raster.cpp: DejaVu Sans at min(0.6 w, h) / 40 px for one figure).
  ImGuiContext* ctx = ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  const float font_px = 700.0f / 40.0f;
  ImFont* font = io.Fonts->AddFontFromFileTTF("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", font_px);
  REQUIRE(font != nullptr);
  unsigned char* atlas = nullptr;
  int aw = 0, ah = 0;
  io.Fonts->GetTexDataAsAlpha8(&atlas, &aw, &ah);
  const flashstep::plot::FigureLayout lay = flashstep::plot::layout_figure(f, ImVec2(0, 0), ImVec2(1200, 700), font, font_px);
  ImGui::DestroyContext(ctx);
  const flashstep::plot::Series& s = f.series[0];
  const ImU32 c = flashstep::plot::light_figure_style().palette[s.colour % 8];
  const int cr = int(c & 0xff), cg = int((c >> 8) & 0xff), cb = int((c >> 16) & 0xff);
  // The series' colour within 2 pixels of (x, y).
  auto coloured_near = [&](ImVec2 q) {
    for (int dy = -2; dy <= 2; ++dy)
      for (int dx = -2; dx <= 2; ++dx) {
        const int x = int(std::lround(q.x)) + dx, y = int(std::lround(q.y)) + dy;
        if (x < 0 || y < 0 || x >= im.w || y >= im.h) continue;
        const unsigned char* px = &im.rgb[(size_t(y) * size_t(im.w) + size_t(x)) * 3];
        if (std::abs(px[0] - cr) <= 40 && std::abs(px[1] - cg) <= 40 && std::abs(px[2] - cb) <= 40) return true;
      }
    return false;
  };
  // Every marker, and the middle of every segment (the polyline is drawn in pieces of 64).
  int missing_points = 0, missing_segments = 0;
  for (size_t k = 0; k < s.x.size(); ++k) {
    const ImVec2 q = lay.point(f, s, k);
    if (!coloured_near(q)) ++missing_points;
    if (k + 1 < s.x.size()) {
      const ImVec2 r = lay.point(f, s, k + 1);
      if (!coloured_near(ImVec2(0.5f * (q.x + r.x), 0.5f * (q.y + r.y)))) ++missing_segments;
    }
  }
  CHECK(missing_points == 0);
  CHECK(missing_segments == 0);
}

TEST_CASE("plot: a TFLOP/s beyond the figures' range is refused saying so, not as not positive", "[plot][cli][errors]") {
  TempDir dir;
  nlohmann::json huge = nlohmann::json::parse(std::ifstream(kBench));
  huge["runs"][0]["rows"][2]["fa1"]["tflops"] = 1e308;
  std::ofstream(dir.path / "huge.json") << huge.dump();
  const fsys::path out = dir.path / "out.png";
  std::string output;
  const int rc = run_command(kBin + " plot --bench " + (dir.path / "huge.json").string() + " --out " + out.string(), output);
  INFO(output);
  CHECK(rc == 2);
  CHECK(output.rfind("flashstep: error: ", 0) == 0);
  CHECK(output.find((dir.path / "huge.json").string() +
                    ": runs[0].rows[2].fa1.tflops is 1e+308, beyond the range the figures take (at most 1e300)\n") !=
        std::string::npos);
  CHECK(std::count(output.begin(), output.end(), '\n') == 1);
  CHECK_FALSE(fsys::exists(out));
}
