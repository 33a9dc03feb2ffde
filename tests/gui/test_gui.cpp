// The desktop app in a real window: each test runs the flashstep program under xvfb-run (Mesa's
// software OpenGL) and checks what only a window makes: the PNG, the frame benchmark's idle
// frames, the message without a display. The app's behaviour (stepping, the editor, exports,
// agreement with core's Cursor) is tested in-process in test_gui_state.cpp.
#include "core/npy.h"
#include "core/run.h"
#include "gui_test_helpers.h"

#include <stb_image.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>

using namespace flashstep;
namespace fs = std::filesystem;

namespace {

struct Result {
  int code = -1;
  std::string output;
};

// Runs a shell command, capturing stdout and stderr together.
Result sh(const std::string& cmd, const std::string& tag) {
  const std::string log = out_path(tag + ".log");
  const int status = std::system((cmd + " > '" + log + "' 2>&1").c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  r.output = ss.str();
  return r;
}

// flashstep gui ... in a fresh Xvfb display.
Result run_gui(const std::string& args, const std::string& tag) {
  return sh(std::string(FLASHSTEP_XVFB_RUN) + " -a -s '-screen 0 1600x1000x24' " + FLASHSTEP_BIN +
                " gui " + args,
            tag);
}

struct Image {
  int w = 0, h = 0;
  std::vector<unsigned char> rgb;
};

Image load_png(const std::string& path) {
  Image im;
  int n = 0;
  unsigned char* px = stbi_load(path.c_str(), &im.w, &im.h, &n, 3);
  REQUIRE(px != nullptr);
  im.rgb.assign(px, px + size_t(im.w) * size_t(im.h) * 3);
  stbi_image_free(px);
  return im;
}

// Distinct colours among every 7th pixel: a blank window has one or two.
size_t distinct_colours(const Image& im) {
  std::set<uint32_t> colours;
  for (size_t p = 0; p < im.rgb.size(); p += 3 * 7)
    colours.insert(uint32_t(im.rgb[p]) << 16 | uint32_t(im.rgb[p + 1]) << 8 | im.rgb[p + 2]);
  return colours.size();
}

size_t pixels_differing(const Image& x, const Image& y) {
  REQUIRE(x.rgb.size() == y.rgb.size());
  size_t n = 0;
  for (size_t p = 0; p < x.rgb.size(); p += 3)
    n += x.rgb[p] != y.rgb[p] || x.rgb[p + 1] != y.rgb[p + 1] || x.rgb[p + 2] != y.rgb[p + 2];
  return n;
}

}  // namespace

TEST_CASE("screenshot: the PNG exists, has the requested size and is not blank", "[gui]") {
  const auto [size, w, h] = GENERATE(table<std::string, int, int>({{"1600x1000", 1600, 1000}, {"1280x720", 1280, 720}}));
  const std::string png = out_path("size-" + size + ".png");
  fs::remove(png);
  const Result r = run_gui("--step 5 --size " + size + " --screenshot " + png, "size-" + size);
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(fs::exists(png));
  const Image im = load_png(png);
  REQUIRE(im.w == w);
  REQUIRE(im.h == h);
  // Not blank: many distinct colours (heatmaps, text), not one background.
  REQUIRE(distinct_colours(im) > 200);
}

TEST_CASE("screenshot: step 0 and step K differ", "[gui]") {
  const std::string a = out_path("step0.png"), b = out_path("step12.png");
  REQUIRE(run_gui("--step 0 --screenshot " + a, "step0").code == 0);
  REQUIRE(run_gui("--step 12 --screenshot " + b, "step12").code == 0);
  const Image ia = load_png(a), ib = load_png(b);
  REQUIRE(ia.w == ib.w);
  REQUIRE(ia.h == ib.h);
  REQUIRE(pixels_differing(ia, ib) > 5000);  // O, l, m written, S tiles computed, counters and highlights moved
}

TEST_CASE("screenshots of the fa2 and masked dropout presets are not blank and differ", "[gui]") {
  const std::string a = out_path("fa2.png"), b = out_path("dropout-bf16.png"), c = out_path("fa2-end.png");
  REQUIRE(run_gui("--preset fa1-vs-fa2 --step 9 --screenshot " + a, "fa2-shot").code == 0);
  REQUIRE(run_gui("--preset dropout-bf16 --step 22 --screenshot " + b, "dropout-shot").code == 0);
  REQUIRE(run_gui("--preset fa1-vs-fa2 --step 28 --screenshot " + c, "fa2-end-shot").code == 0);
  const Image ia = load_png(a), ib = load_png(b), ic = load_png(c);
  for (const Image* im : {&ia, &ib, &ic}) {
    REQUIRE(im->w == 1600);
    REQUIRE(im->h == 1000);
    REQUIRE(distinct_colours(*im) > 200);
  }
  REQUIRE(pixels_differing(ia, ib) > 5000);
  REQUIRE(pixels_differing(ia, ic) > 5000);  // O and L written by the end, every tile computed
  // The dropped entries of the current P~ tile are drawn in their own colour (magenta).
  auto magenta = [](const Image& im) {
    size_t n = 0;
    for (size_t p = 0; p < im.rgb.size(); p += 3) n += im.rgb[p] == 255 && im.rgb[p + 1] == 70 && im.rgb[p + 2] == 200;
    return n;
  };
  // Step 21 is FA2 L9 of the same tile (P~ shown, dropout not applied yet): same legend, no crosses.
  const std::string before = out_path("dropout-before.png");
  REQUIRE(run_gui("--preset dropout-bf16 --step 21 --screenshot " + before, "dropout-before").code == 0);
  const Image id = load_png(before);
  INFO("magenta pixels: fa2 " << magenta(ia) << ", L9 " << magenta(id) << ", L10 " << magenta(ib));
  REQUIRE(magenta(ia) == 0);  // no dropout: no legend entry either
  REQUIRE(magenta(ib) > magenta(id) + 20);
}

TEST_CASE("screenshots of the backward: the preset opens on it, later steps and fa2 differ", "[gui][backward]") {
  const std::string a = out_path("bwd-open.png"), b = out_path("bwd-later.png"), c = out_path("bwd-fa2.png");
  const std::string da = out_path("bwd-open.json"), db = out_path("bwd-later.json");
  const std::string fwd = out_path("bwd-forward.png");
  REQUIRE(run_gui("--preset backward --screenshot " + a + " --dump-state " + da, "bwd-open").code == 0);
  REQUIRE(run_gui("--preset backward --step 30 --screenshot " + b + " --dump-state " + db, "bwd-later").code == 0);
  REQUIRE(run_gui("--preset fa1-vs-fa2 --backward --step 12 --screenshot " + c, "bwd-fa2").code == 0);
  REQUIRE(run_gui("--preset backward --script 'seek 20' --screenshot " + fwd, "bwd-forward").code == 0);
  const nlohmann::json ja = load_json(da), jb = load_json(db);
  REQUIRE(ja["backward"]["in_backward"].get<bool>());
  REQUIRE(ja["line"].get<std::string>() == "Alg4 L5");
  REQUIRE(jb["index"].get<size_t>() == ja["index"].get<size_t>() + 30);
  REQUIRE(jb["line"].get<std::string>().rfind("Alg4", 0) == 0);
  const Image ia = load_png(a), ib = load_png(b), ic = load_png(c), iff = load_png(fwd);
  for (const Image* im : {&ia, &ib, &ic}) {
    REQUIRE(im->w == 1600);
    REQUIRE(im->h == 1000);
    REQUIRE(distinct_colours(*im) > 200);
  }
  // The backward view's colour key (its largest positive value's colour) is drawn only there.
  auto key_red = [](const Image& im) {
    size_t n = 0;
    for (size_t p = 0; p < im.rgb.size(); p += 3) n += im.rgb[p] == 240 && im.rgb[p + 1] == 100 && im.rgb[p + 2] == 58;
    return n;
  };
  INFO("key pixels: open " << key_red(ia) << ", later " << key_red(ib) << ", fa2 " << key_red(ic) << ", forward "
                           << key_red(iff));
  REQUIRE(key_red(ia) > 50);
  REQUIRE(key_red(ib) > key_red(ia));  // dQ, dK, dV and the chip's tiles have values by then
  REQUIRE(key_red(ic) > 50);
  REQUIRE(key_red(iff) == 0);
  REQUIRE(pixels_differing(ia, ib) > 5000);
  REQUIRE(pixels_differing(ia, iff) > 5000);
}

TEST_CASE("bad input fails with one clear line and no window", "[gui]") {
  // The messages of every bad option are tested in-process; here, what the program does with one.
  const auto [args, expect] = GENERATE(table<std::string, std::string>({
      {"--preset nope --screenshot x.png", "flashstep: error: unknown preset 'nope'"},
      {"--size wide --screenshot x.png", "flashstep: error: --size must look like"},
  }));
  const Result r = run_gui(args, "bad");
  INFO(r.output);
  REQUIRE(r.code == 2);
  REQUIRE(r.output.find(expect) != std::string::npos);
  REQUIRE(std::count(r.output.begin(), r.output.end(), '\n') == 1);
}

TEST_CASE("the lesson and compare views render, and the Export tab's PNG is written from the window", "[gui]") {
  const Trace tr = [] {
    ProblemSpec spec;  // the tiny preset's sizes (the view draws whatever the comparison finds)
    spec.nq = spec.nk = 8;
    spec.d = 4;
    spec.M = 64;
    const Problem p = make_problem(spec);
    RunOptions opt;
    opt.record = false;
    return run_problem(p, make_tiling(p.nq, p.nk, p.d, p.M), opt);
  }();
  const std::string o = out_path("O.npy"), lse = out_path("lse.npy");
  write_npy(o, tr.O);
  write_npy(lse, tr.lse);
  const std::string lesson = out_path("lesson.png"), compare = out_path("compare.png"), base = out_path("export");
  fs::remove(base + ".png");
  REQUIRE(run_gui("--preset lesson --lesson-blocks 2 --screenshot " + lesson, "lesson").code == 0);
  const Result r = run_gui("--view compare --compare-o " + o + " --compare-lse " + lse + " --script 'export " + base +
                           "' --screenshot " + compare, "compare");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const Image il = load_png(lesson), ic = load_png(compare), ie = load_png(base + ".png");
  REQUIRE(distinct_colours(il) > 200);
  REQUIRE(distinct_colours(ic) > 200);
  REQUIRE(ie.w == 1600);
  REQUIRE(ie.h == 1000);
  REQUIRE(pixels_differing(ie, ic) == 0);  // the same settled frame
}

TEST_CASE("without a display: one line pointing to the headless subcommands", "[gui]") {
  const Result plain = sh(std::string("env -u DISPLAY -u WAYLAND_DISPLAY ") + FLASHSTEP_BIN, "nodisplay");
  REQUIRE(plain.code == 0);
  REQUIRE(plain.output.find("no display") != std::string::npos);
  REQUIRE(plain.output.find("flashstep run") != std::string::npos);
  REQUIRE(plain.output.find("--screenshot") != std::string::npos);
  REQUIRE(std::count(plain.output.begin(), plain.output.end(), '\n') == 1);
  const Result g = sh(std::string("env -u DISPLAY -u WAYLAND_DISPLAY ") + FLASHSTEP_BIN + " gui --screenshot x.png", "nodisplay-gui");
  REQUIRE(g.code == 2);
  REQUIRE(g.output.find("no display") != std::string::npos);
}

TEST_CASE("benchmark at N = 1024, d = 64: frame time printed, idle frames allocate nothing", "[gui][bench]") {
  const Result r = run_gui("--preset gpt2-medium --bench-frames 30", "bench");
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(r.output.find("Nq = 1024, Nk = 1024, d = 64") != std::string::npos);
  REQUIRE(r.output.find("mean frame time") != std::string::npos);
  REQUIRE(r.output.find("30 frames; 0 allocations, 0 texture uploads") != std::string::npos);
}

TEST_CASE("idle frames of the fa2, standard and backward views with masks and dropout allocate nothing", "[gui]") {
  const std::string args = GENERATE(std::string("--preset dropout-bf16"), std::string("--preset fa1-vs-fa2"),
                                    std::string("--preset backward --step 18"), std::string("--preset fa1-vs-fa2 --backward"),
                                    std::string("--preset causal --script 'set schedule standard; set dropout 0.2; apply'"));
  const Result r = run_gui(args + " --bench-frames 10", "bench-views");
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(r.output.find("10 frames; 0 allocations, 0 texture uploads") != std::string::npos);
}

TEST_CASE("the compare view with a snapshot folder: not blank, and its tiles change with the step", "[gui][snapshots]") {
  // The tiny preset's problem (Tr = Tc = 2, Br = 4) from `flashstep run --snapshots`, with O at
  // j = 1, row 5 (Q block 1) pushed far over tolerance in its file.
  const std::string dir = out_path("snap-tiny");
  const Result w = sh(std::string(FLASHSTEP_BIN) + " run --nq 8 --nk 8 --d 4 --M 64 --seed 1 --snapshots " + dir, "snap-run");
  INFO(w.output);
  REQUIRE(w.code == 0);
  NpyArray o = read_npy(dir + "/forward_j0001_O.npy");
  o.data[5 * 4 + 2] += 0.5f;
  write_npy(dir + "/forward_j0001_O.npy", o.data.data(), o.shape);
  // (i, j) = (0, 0) after 6 steps (inside the first tile), then the perturbed (1, 1).
  const std::string a = out_path("compare-00.png"), b = out_path("compare-11.png");
  const std::string da = out_path("compare-00.json"), db = out_path("compare-11.json");
  const std::string common = "--preset tiny --view compare --snapshots " + dir;
  const Result ra = run_gui(common + " --step 6 --dump-state " + da + " --screenshot " + a, "compare-00");
  INFO(ra.output);
  REQUIRE(ra.code == 0);
  const Result rb = run_gui(common + " --script 'jump 1 1' --dump-state " + db + " --screenshot " + b, "compare-11");
  INFO(rb.output);
  REQUIRE(rb.code == 0);
  const nlohmann::json ja = load_json(da), jb = load_json(db);
  REQUIRE(ja["view"] == "compare");
  REQUIRE(ja["snapshots"]["loaded"] == true);
  REQUIRE(ja["snapshots"]["first_over_j"] == 1);
  REQUIRE(ja["snapshots"]["first_over_i"] == 1);
  REQUIRE(ja["snapshots"]["tile"]["i"] == 0);
  REQUIRE(ja["snapshots"]["tile"]["j"] == 0);
  REQUIRE(jb["snapshots"]["tile"]["i"] == 1);
  REQUIRE(jb["snapshots"]["tile"]["j"] == 1);
  const Image ia = load_png(a), ib = load_png(b);
  REQUIRE(distinct_colours(ia) > 200);
  REQUIRE(distinct_colours(ib) > 200);
  // Over-tolerance red (snapshot_view.cpp's kOverCol): the tolerance line, the first-over bar and,
  // at (1, 1) only, the perturbed element's cell of the difference tile.
  auto red = [](const Image& im) {
    size_t n = 0;
    for (size_t p = 0; p < im.rgb.size(); p += 3) n += im.rgb[p] == 235 && im.rgb[p + 1] == 60 && im.rgb[p + 2] == 60;
    return n;
  };
  INFO("red pixels at (0, 0): " << red(ia) << ", at (1, 1): " << red(ib));
  REQUIRE(red(ia) > 100);
  REQUIRE(red(ib) > red(ia) + 100);  // one cell of at least 10 x 10 pixels
  REQUIRE(pixels_differing(ia, ib) > 5000);
}
