// The desktop app, end to end: each test runs the real flashstep program in a real window under
// xvfb-run and checks what it wrote (the PNG, and a JSON dump of its step and HBM state) against
// the core library run here on the same preset.
#include "app/gui/preset.h"
#include "core/export.h"
#include "core/npy.h"
#include "core/reference.h"
#include "core/run.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <stb_image.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>

using namespace flashstep;
namespace fs = std::filesystem;

namespace {

std::string out_path(const std::string& name) {
  fs::create_directories(FLASHSTEP_GUI_TEST_OUT);
  return std::string(FLASHSTEP_GUI_TEST_OUT) + "/" + name;
}

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

nlohmann::json load_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// Runs the app with --screenshot and --dump-state and returns the dumped state.
nlohmann::json run_and_dump(const std::string& args, const std::string& tag) {
  const std::string png = out_path(tag + ".png"), dump = out_path(tag + ".json");
  const Result r = run_gui(args + " --screenshot " + png + " --dump-state " + dump, tag);
  INFO(r.output);
  REQUIRE(r.code == 0);
  return load_json(dump);
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

Trace preset_trace(const std::string& name) {
  const gui::Preset p = gui::load_preset(gui::preset_path(name, FLASHSTEP_ASSET_DIR));
  RunOptions opt;
  opt.record = true;
  return run_spec(p.spec, opt);
}

float json_float(const nlohmann::json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "-inf") return -INFINITY;
    if (s == "inf") return INFINITY;
    return NAN;
  }
  return float(v.get<double>());
}

// The app's dumped HBM state equals the Cursor's, element for element (NaN = not written):
// O, l, m (fa1), O, L (fa2), S, P, O (standard).
void require_same_hbm(const nlohmann::json& dump, const Cursor& c) {
  for (Tensor t : {Tensor::O, Tensor::l, Tensor::m, Tensor::L, Tensor::S, Tensor::P}) {
    const nlohmann::json& d = dump["hbm"][tensor_name(t)];
    INFO("tensor " << tensor_name(t));
    REQUIRE(d.is_null() == !c.written(t));
    if (d.is_null()) continue;
    const Mat& m = c.hbm(t);
    REQUIRE(int64_t(d.size()) == m.rows());
    for (int64_t r = 0; r < m.rows(); ++r)
      for (int64_t k = 0; k < m.cols(); ++k) {
        const float x = json_float(d[size_t(r)][size_t(k)]), y = m(r, k);
        INFO("row " << r << " col " << k);
        if (std::isnan(y)) REQUIRE(std::isnan(x));
        else REQUIRE(x == y);
      }
  }
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

TEST_CASE("scripted UI actions land on the same trace index and HBM state as the core Cursor", "[gui]") {
  // Each case: the app's flags, and the same actions on a Cursor.
  struct Case {
    std::string preset, flags;
    std::vector<std::pair<char, int>> actions;  // 's' forward n, 'b' back n, 'k' seek n
  };
  const std::vector<Case> cases = {
      {"tiny", "--step 9 --back 4", {{'s', 9}, {'b', 4}}},
      {"tiny", "--script 'step 5; back 2; step 20; back 1'", {{'s', 5}, {'b', 2}, {'s', 20}, {'b', 1}}},
      {"tiny", "--script 'end; back 3'", {{'k', 1 << 30}, {'b', 3}}},
      {"tiny", "--step 15 --script 'home; step 2'", {{'s', 15}, {'k', 0}, {'s', 2}}},
      {"gpt2-medium", "--step 700 --back 7", {{'s', 700}, {'b', 7}}},
      {"causal", "--step 40 --back 3", {{'s', 40}, {'b', 3}}},
      // FlashAttention-2 order: mid-block, after the first O_i write, and at the end.
      {"fa1-vs-fa2", "--step 13 --back 2", {{'s', 13}, {'b', 2}}},
      {"fa1-vs-fa2", "--script 'step 20; back 9; step 3'", {{'s', 20}, {'b', 9}, {'s', 3}}},
      {"dropout-bf16", "--script 'end; back 4'", {{'k', 1 << 30}, {'b', 4}}},
      {"dropout-bf16", "--step 22", {{'s', 22}}},
  };
  const size_t n = GENERATE(range(0, 10));
  const Case& c = cases[n];
  INFO(c.preset << " " << c.flags);
  const std::string tag = "script" + std::to_string(n);
  const std::string png = out_path(tag + ".png"), dump = out_path(tag + ".json");
  const Result r = run_gui("--preset " + c.preset + " " + c.flags + " --screenshot " + png + " --dump-state " + dump, tag);
  INFO(r.output);
  REQUIRE(r.code == 0);
  const nlohmann::json d = load_json(dump);

  const Trace tr = preset_trace(c.preset);
  Cursor cur(tr);
  for (const auto& [a, k] : c.actions)
    for (int m = 0; m < (a == 'k' ? 1 : k); ++m) {
      if (a == 's') cur.forward();
      else if (a == 'b') cur.backward();
      else cur.seek(size_t(std::min<int64_t>(k, int64_t(cur.size()))));
    }
  REQUIRE(d["steps"].get<size_t>() == cur.size());
  REQUIRE(d["index"].get<size_t>() == cur.index());
  const Step* s = cur.current();
  REQUIRE(d["line"].get<std::string>() == (s ? line_label(s->line) : ""));
  REQUIRE(d["i"].get<int>() == (s ? s->i : -1));
  REQUIRE(d["j"].get<int>() == (s ? s->j : -1));
  REQUIRE(d["hbm_read_total"].get<int64_t>() == (s ? s->hbm_read_total : 0));
  REQUIRE(d["hbm_write_total"].get<int64_t>() == (s ? s->hbm_write_total : 0));
  REQUIRE(d["problem"]["schedule"].get<std::string>() == schedule_name(tr.problem.schedule));
  require_same_hbm(d, cur);
}

TEST_CASE("standard attention and a window mask set in the editor match the core Cursor", "[gui]") {
  // Algorithm 0 keeps S and P in HBM: the dump holds them row block by row block.
  const auto [schedule, steps] = GENERATE(table<std::string, int>({{"standard", 4}, {"fa2", 19}, {"fa1", 23}}));
  INFO(schedule);
  const nlohmann::json d = run_and_dump("--script 'set schedule " + schedule + "; set nq 6; set nk 10; set window 3 1; "
                                        "set dtype fp16; apply; step " + std::to_string(steps) + "'", "editor-" + schedule);
  ProblemSpec spec = gui::load_preset(gui::preset_path("tiny", FLASHSTEP_ASSET_DIR)).spec;
  spec.schedule = parse_schedule(schedule);
  spec.nq = 6;
  spec.nk = 10;
  spec.options.mask.window_left = 3;
  spec.options.mask.window_right = 1;
  spec.options.dtype = Dtype::fp16;
  const Problem p = make_problem(spec);
  RunOptions opt;
  const Trace tr = run_problem(p, make_tiling(p.nq, p.nk, p.d, p.M), opt);
  Cursor cur(tr);
  cur.seek(size_t(steps));
  REQUIRE(d["steps"].get<size_t>() == cur.size());
  REQUIRE(d["index"].get<size_t>() == cur.index());
  REQUIRE(d["line"].get<std::string>() == line_label(cur.current()->line));
  REQUIRE(d["problem"]["dtype"] == "fp16");
  require_same_hbm(d, cur);
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

TEST_CASE("the side by side table holds the totals and closed forms of every schedule as core computes them", "[gui]") {
  const auto [preset, masked] = GENERATE(table<std::string, bool>({{"fa1-vs-fa2", false}, {"dropout-bf16", true}}));
  INFO(preset);
  const nlohmann::json d = run_and_dump("--preset " + preset, "table");
  const gui::Preset pr = gui::load_preset(gui::preset_path(preset, FLASHSTEP_ASSET_DIR));
  for (Schedule sc : {Schedule::fa1, Schedule::fa2, Schedule::standard}) {
    INFO(schedule_name(sc));
    ProblemSpec spec = pr.spec;
    spec.schedule = sc;
    const Problem p = make_problem(spec);
    RunOptions opt;
    opt.record = false;
    const Trace tr = run_problem(p, make_tiling(p.nq, p.nk, p.d, p.M), opt);
    const nlohmann::json& e = d["runs"][schedule_name(sc)];
    REQUIRE(e["ok"] == true);
    REQUIRE(e["hbm_read"].get<int64_t>() == tr.totals.hbm_read_bytes);
    REQUIRE(e["hbm_write"].get<int64_t>() == tr.totals.hbm_write_bytes);
    const int64_t form_read = e["form_read"].get<int64_t>(), form_write = e["form_write"].get<int64_t>();
    if (masked && sc != Schedule::standard) {  // skipped blocks: the form is an upper bound
      REQUIRE(tr.totals.hbm_read_bytes < form_read);
      REQUIRE(tr.totals.hbm_write_bytes <= form_write);
    } else {
      REQUIRE(tr.totals.hbm_read_bytes == form_read);
      REQUIRE(tr.totals.hbm_write_bytes == form_write);
    }
    const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale, p.mask, p.dropout, p.seed);
    REQUIRE(e["o_max_rel"].get<double>() == compare(tr.O, ref.O).max_rel);
  }
  // fa2 never reads O back and writes it once; fa1 does both at every (i, j).
  REQUIRE(d["runs"]["fa2"]["hbm_write"].get<int64_t>() < d["runs"]["fa1"]["hbm_write"].get<int64_t>());
  REQUIRE(d["skipped_tiles"].get<int>() == (masked ? 3 : 0));
}

TEST_CASE("jump to i j lands on the first load of that iteration", "[gui]") {
  const std::string png = out_path("jump.png"), dump = out_path("jump.json");
  REQUIRE(run_gui("--script 'jump 1 1' --screenshot " + png + " --dump-state " + dump, "jump").code == 0);
  const nlohmann::json d = load_json(dump);
  REQUIRE(d["line"] == "Alg1 L8");
  REQUIRE(d["i"] == 1);
  REQUIRE(d["j"] == 1);
  const Result bad = run_gui("--script 'jump 5 0' --screenshot " + png, "jump-bad");
  REQUIRE(bad.code == 2);
  REQUIRE(bad.output.find("0 <= i < Tr") != std::string::npos);
  // FlashAttention-2: the iteration starts with the load of K_j, V_j (FA2 L7).
  const nlohmann::json f = run_and_dump("--preset fa1-vs-fa2 --script 'jump 1 1'", "jump-fa2");
  REQUIRE(f["line"] == "FA2fwd L7");
  REQUIRE(f["i"] == 1);
  REQUIRE(f["j"] == 1);
  // Causal: tile (0, 2) lies above the diagonal, so Algorithm 1 never visits it.
  const Result skipped = run_gui("--preset causal --script 'jump 0 2' --screenshot " + png, "jump-skipped");
  REQUIRE(skipped.code == 2);
  REQUIRE(skipped.output.find("skipped") != std::string::npos);
}

TEST_CASE("problem editor: an invalid value is explained and the current run is kept", "[gui]") {
  const auto [script, expect_error, expect_steps] = GENERATE(table<std::string, std::string, int>({
      {"step 7; set d 0; apply", "d must be at least 1", 27},
      {"step 7; set M 8; apply", "smaller than 4d", 27},
      {"step 7; set br 9; set bc 9; apply", "do not fit in SRAM", 27},
      {"step 7; set nq -3; apply", "Nq must be at least 1", 27},
      {"step 7; set nq 12; apply", "", 1 + 2 * (1 + 6 * 3)},  // valid: a new run, Tr = 3
      // The fields of masks, dropout and storage precision.
      {"step 7; set window -2 1; apply", "window sizes must be >= 0", 27},
      {"step 7; set window 1 -5; apply", "window sizes must be >= 0", 27},
      {"step 7; set kvlen 9; apply", "key length 9 is out of range", 27},
      {"step 7; set kvlen -4; apply", "key length -4 is out of range", 27},
      {"step 7; set dropout 1; apply", "dropout probability must be in [0, 1)", 27},
      {"step 7; set dropout -0.25; apply", "dropout probability must be in [0, 1)", 27},
      {"step 7; set schedule fa2; set dropout 0.5; set dtype bf16; apply", "", 2 * (6 + 4 * 2)},
      {"step 7; set schedule standard; set window 2 0; set kvlen 6; apply", "", 3 * 2},
  }));
  INFO(script);
  const nlohmann::json d = run_and_dump("--script '" + script + "'", "editor");
  REQUIRE(d["steps"].get<int>() == expect_steps);
  if (expect_error.empty()) {
    REQUIRE(d["form_error"] == "");
    REQUIRE(d["index"] == 0);  // the new run starts at step 0
  } else {
    REQUIRE(d["form_error"].get<std::string>().find(expect_error) != std::string::npos);
    REQUIRE(d["index"] == 7);  // the old run, where it was
  }
}

TEST_CASE("inputs from .npy files through the editor, and a missing file keeps the run", "[gui]") {
  // Nq = 6, Nk = 10, d = 4: sizes come from the files, M = 64 from the form.
  const std::string q = out_path("Q.npy"), k = out_path("K.npy"), v = out_path("V.npy");
  write_npy(q, make_input("random", 6, 4, 7, 0));
  write_npy(k, make_input("random", 10, 4, 7, 1));
  write_npy(v, make_input("random", 10, 4, 7, 2));
  const std::string png = out_path("files.png"), dump = out_path("files.json");
  Result r = run_gui("--script 'step 3; files " + q + " " + k + " " + v + "; apply; step 20' --screenshot " + png +
                         " --dump-state " + dump, "files");
  INFO(r.output);
  REQUIRE(r.code == 0);
  nlohmann::json d = load_json(dump);
  ProblemSpec spec;
  spec.M = 64;
  spec.q_path = q;
  spec.k_path = k;
  spec.v_path = v;
  const Problem p = make_problem(spec);
  RunOptions opt;
  const Trace tr = run_problem(p, make_tiling(p.nq, p.nk, p.d, p.M), opt);
  Cursor cur(tr);
  cur.seek(20);
  REQUIRE(d["problem"]["nq"] == 6);
  REQUIRE(d["problem"]["nk"] == 10);
  REQUIRE(d["steps"].get<size_t>() == cur.size());
  REQUIRE(d["index"] == 20);
  require_same_hbm(d, cur);

  r = run_gui("--script 'step 3; files /nonexistent/q.npy " + k + " " + v + "; apply' --screenshot " + png +
                  " --dump-state " + dump, "files-missing");
  REQUIRE(r.code == 0);
  d = load_json(dump);
  REQUIRE(d["apply_error"].get<std::string>().find("/nonexistent/q.npy") != std::string::npos);
  REQUIRE(d["steps"] == 27);  // the tiny run is still there, at its step
  REQUIRE(d["index"] == 3);
}

TEST_CASE("export writes the trace as JSON, CSV and Chrome trace, and a PNG", "[gui]") {
  const std::string base = out_path("export"), png = out_path("export-shot.png");
  for (const char* ext : {".json", ".csv", ".chrome.json", ".png"}) fs::remove(base + ext);
  const Result r = run_gui("--script 'step 4; export " + base + "' --screenshot " + png, "export");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const Trace tr = preset_trace("tiny");
  std::ifstream in(base + ".json");
  std::stringstream text;
  text << in.rdbuf();
  REQUIRE(text.str() == trace_to_json(tr).dump(1) + "\n");
  std::ifstream csv(base + ".csv");
  std::stringstream csv_text;
  csv_text << csv.rdbuf();
  REQUIRE(csv_text.str() == trace_to_csv(tr));
  REQUIRE(nlohmann::json::parse(std::ifstream(base + ".chrome.json")) == trace_to_chrome(tr));
  const Image im = load_png(base + ".png");
  REQUIRE(im.w == 1600);
  REQUIRE(im.h == 1000);
}

TEST_CASE("lesson and compare views", "[gui]") {
  SECTION("the lesson preset opens the lesson with the blocks asked for") {
    const std::string png = out_path("lesson.png"), dump = out_path("lesson.json");
    REQUIRE(run_gui("--preset lesson --lesson-blocks 2 --screenshot " + png + " --dump-state " + dump, "lesson").code == 0);
    const nlohmann::json d = load_json(dump);
    REQUIRE(d["view"] == "lesson");
    REQUIRE(d["lesson_shown"] == 2);
  }
  SECTION("the CPU trace's own O and lse pass; a perturbed O fails") {
    const Trace tr = preset_trace("tiny");
    const std::string o = out_path("O.npy"), lse = out_path("lse.npy"), bad = out_path("O-bad.npy");
    write_npy(o, tr.O);
    write_npy(lse, tr.lse);
    Mat perturbed = tr.O;
    perturbed(3, 1) += 1e-2f;
    write_npy(bad, perturbed);
    const std::string png = out_path("compare.png"), dump = out_path("compare.json");
    REQUIRE(run_gui("--view compare --compare-o " + o + " --compare-lse " + lse + " --screenshot " + png +
                    " --dump-state " + dump, "compare").code == 0);
    nlohmann::json d = load_json(dump);
    REQUIRE(d["compare"]["loaded"] == true);
    REQUIRE(d["compare"]["passed"] == true);
    REQUIRE(d["compare"]["o_max_rel"].get<double>() == 0.0);
    REQUIRE(run_gui("--view compare --compare-o " + bad + " --compare-lse " + lse + " --screenshot " + png +
                    " --dump-state " + dump, "compare-bad").code == 0);
    d = load_json(dump);
    REQUIRE(d["compare"]["passed"] == false);
    REQUIRE(d["compare"]["o_max_rel"].get<double>() > 1e-5);
  }
}

TEST_CASE("bad input fails with one clear line and no window", "[gui]") {
  const auto [args, expect] = GENERATE(table<std::string, std::string>({
      {"--preset nope --screenshot x.png", "unknown preset 'nope'"},
      {"--size 10x10 --screenshot x.png", "--size must be between"},
      {"--size wide --screenshot x.png", "--size must look like"},
      {"--script 'fly 3' --screenshot x.png", "unknown action 'fly'"},
      {"--view matrices --screenshot x.png", "--view must be"},
  }));
  const Result r = run_gui(args, "bad");
  INFO(r.output);
  REQUIRE(r.code == 2);
  REQUIRE(r.output.find(expect) != std::string::npos);
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

TEST_CASE("idle frames of the fa2 and standard views with masks and dropout allocate nothing", "[gui]") {
  const std::string args = GENERATE(std::string("--preset dropout-bf16"), std::string("--preset fa1-vs-fa2"),
                                    std::string("--preset causal --script 'set schedule standard; set dropout 0.2; apply'"));
  const Result r = run_gui(args + " --bench-frames 10", "bench-views");
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(r.output.find("10 frames; 0 allocations, 0 texture uploads") != std::string::npos);
}
