// The desktop app's behaviour, in-process and without a display: each test makes the app's state
// as `flashstep gui` does before it opens a window (the same options: preset, steps, script,
// lesson blocks, compare files), takes its --dump-state JSON, and checks it against the core
// library run here on the same inputs. What needs a window (screenshots, the frame benchmark,
// the no-display message) is in test_gui.cpp.
#include "app/gui/options.h"
#include "app/gui/preset.h"
#include "app/gui/resources.h"
#include "app/gui/state_dump.h"
#include "core/export.h"
#include "core/npy.h"
#include "core/output_files.h"
#include "app/pipeline_measured.h"
#include "core/pipeline_model.h"
#include "tests/pipeline_results.h"
#include "core/reference.h"
#include "core/run.h"
#include "gui_test_helpers.h"

#include <map>

#include <algorithm>
#include <cmath>
#include <sstream>

using namespace flashstep;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

gui::GuiOptions options(const std::string& preset, int64_t step, int64_t back, const std::string& script) {
  gui::GuiOptions o;
  o.preset = preset;
  o.step = step;
  o.back = back;
  o.script = script;
  return o;
}

// The app's state after the options, as --dump-state writes it.
nlohmann::json state_after(const gui::GuiOptions& o) {
  gui::AppState s;
  gui::prepare_state(s, o);
  return gui::state_to_json(s);
}

nlohmann::json state_after(const std::string& script) { return state_after(options("tiny", 0, 0, script)); }

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

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("scripted UI actions land on the same trace index and HBM state as the core Cursor", "[gui]") {
  // Each case: the app's options (--step, --back, --script), and the same actions on a Cursor.
  struct Case {
    std::string preset;
    int64_t step, back;
    std::string script;
    std::vector<std::pair<char, int>> actions;  // 's' forward n, 'b' back n, 'k' seek n
  };
  const std::vector<Case> cases = {
      {"tiny", 9, 4, "", {{'s', 9}, {'b', 4}}},
      {"tiny", 0, 0, "step 5; back 2; step 20; back 1", {{'s', 5}, {'b', 2}, {'s', 20}, {'b', 1}}},
      {"tiny", 0, 0, "end; back 3", {{'k', 1 << 30}, {'b', 3}}},
      {"tiny", 15, 0, "home; step 2", {{'s', 15}, {'k', 0}, {'s', 2}}},
      {"tiny", 0, 0, "seek 17; step; back 5; seek 3", {{'k', 17}, {'s', 1}, {'b', 5}, {'k', 3}}},
      // Both ends: back stops at step 0, step stops at the last step.
      {"tiny", 3, 0, "back 5; step 2", {{'s', 3}, {'b', 5}, {'s', 2}}},
      {"tiny", 0, 0, "end; step 4; back 1", {{'k', 1 << 30}, {'s', 4}, {'b', 1}}},
      {"gpt2-medium", 700, 7, "", {{'s', 700}, {'b', 7}}},
      {"causal", 40, 3, "", {{'s', 40}, {'b', 3}}},
      // FlashAttention-2 order: mid-block, after the first O_i write, and at the end.
      {"fa1-vs-fa2", 13, 2, "", {{'s', 13}, {'b', 2}}},
      {"fa1-vs-fa2", 0, 0, "step 20; back 9; step 3", {{'s', 20}, {'b', 9}, {'s', 3}}},
      {"dropout-bf16", 0, 0, "end; back 4", {{'k', 1 << 30}, {'b', 4}}},
      {"dropout-bf16", 22, 0, "", {{'s', 22}}},
  };
  const size_t n = GENERATE(range(0, 13));
  const Case& c = cases[n];
  INFO(c.preset << " --step " << c.step << " --back " << c.back << " --script '" << c.script << "'");
  const nlohmann::json d = state_after(options(c.preset, c.step, c.back, c.script));

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

TEST_CASE("playback advances speed x dt steps, carries the fraction and stops at the end", "[gui]") {
  gui::AppState s;
  gui::prepare_state(s, options("tiny", 0, 0, ""));
  s.playing = true;
  s.speed = 4.0f;
  s.advance_playback(0.3);  // 1.2 steps: one now, 0.2 carried
  REQUIRE(s.index() == 1);
  s.advance_playback(0.2);  // 0.2 + 0.8
  REQUIRE(s.index() == 2);
  s.advance_playback(100.0);
  REQUIRE(s.index() == s.steps());
  REQUIRE_FALSE(s.playing);
  s.advance_playback(1.0);  // paused: nothing moves
  s.step_back();
  REQUIRE(s.index() == s.steps() - 1);
}

TEST_CASE("standard attention and a window mask set in the editor match the core Cursor", "[gui]") {
  // Algorithm 0 keeps S and P in HBM: the dump holds them row block by row block.
  const auto [schedule, steps] = GENERATE(table<std::string, int>({{"standard", 4}, {"fa2", 19}, {"fa1", 23}}));
  INFO(schedule);
  const nlohmann::json d = state_after("set schedule " + schedule + "; set nq 6; set nk 10; set window 3 1; "
                                       "set dtype fp16; apply; step " + std::to_string(steps));
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

TEST_CASE("the side by side table holds the totals and closed forms of every schedule as core computes them", "[gui]") {
  const auto [preset, masked] = GENERATE(table<std::string, bool>({{"fa1-vs-fa2", false}, {"dropout-bf16", true}}));
  INFO(preset);
  const nlohmann::json d = state_after(options(preset, 0, 0, ""));
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
  const nlohmann::json d = state_after("jump 1 1");
  REQUIRE(d["line"] == "Alg1 L8");
  REQUIRE(d["i"] == 1);
  REQUIRE(d["j"] == 1);
  REQUIRE_THROWS_WITH(state_after("jump 5 0"), Contains("0 <= i < Tr"));
  // FlashAttention-2: the iteration starts with the load of K_j, V_j (FA2 L7).
  const nlohmann::json f = state_after(options("fa1-vs-fa2", 0, 0, "jump 1 1"));
  REQUIRE(f["line"] == "FA2fwd L7");
  REQUIRE(f["i"] == 1);
  REQUIRE(f["j"] == 1);
  // Causal: tile (0, 2) lies above the diagonal, so Algorithm 1 never visits it.
  REQUIRE_THROWS_WITH(state_after(options("causal", 0, 0, "jump 0 2")), Contains("skipped"));
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
      // decode has no backward: the editor asked for its bounds and crashed
      {"step 7; set schedule decode; set backward 1; apply", "decode has no backward pass", 27},
  }));
  INFO(script);
  if (expect_error.empty()) {
    const nlohmann::json d = state_after(script);
    REQUIRE(d["steps"].get<int>() == expect_steps);
    REQUIRE(d["form_error"] == "");
    REQUIRE(d["index"] == 0);  // the new run starts at step 0
  } else {
    // As typed into the fields: the editor's message, the old run where it was (Apply disabled).
    const std::string typed = script.substr(0, script.rfind("; apply"));
    const nlohmann::json d = state_after(typed);
    REQUIRE(d["steps"].get<int>() == expect_steps);
    REQUIRE(d["form_error"].get<std::string>().find(expect_error) != std::string::npos);
    REQUIRE(d["index"] == 7);
    // A script's apply is refused with that message (gui --script exits 2).
    REQUIRE_THROWS_WITH(state_after(script), Contains("script: apply: ") && Contains(expect_error));
  }
}

TEST_CASE("inputs from .npy files through the editor, and a missing file keeps the run", "[gui]") {
  // Nq = 6, Nk = 10, d = 4: sizes come from the files, M = 64 from the form.
  const std::string q = out_path("Q.npy"), k = out_path("K.npy"), v = out_path("V.npy");
  write_npy(q, make_input("random", 6, 4, 7, 0));
  write_npy(k, make_input("random", 10, 4, 7, 1));
  write_npy(v, make_input("random", 10, 4, 7, 2));
  nlohmann::json d = state_after("step 3; files " + q + " " + k + " " + v + "; apply; step 20");
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

  // The Apply button: "Not applied" with the file's name, the tiny run still there at its step.
  gui::AppState s;
  gui::prepare_state(s, options("tiny", 0, 0, "step 3; files /nonexistent/q.npy " + k + " " + v));
  REQUIRE_FALSE(s.apply_form());
  REQUIRE(s.apply_error.find("/nonexistent/q.npy") != std::string::npos);
  d = gui::state_to_json(s);
  REQUIRE(d["steps"] == 27);
  REQUIRE(d["index"] == 3);
  // A script's apply is refused with the same reason.
  REQUIRE_THROWS_WITH(state_after("step 3; files /nonexistent/q.npy " + k + " " + v + "; apply"),
                      Contains("script: apply: ") && Contains("/nonexistent/q.npy"));
}

TEST_CASE("export writes the trace as JSON, CSV and Chrome trace, and asks the window for a PNG", "[gui]") {
  const std::string base = out_path("export");
  for (const char* ext : {".json", ".csv", ".chrome.json", ".png"}) fs::remove(base + ext);
  gui::AppState s;
  gui::prepare_state(s, options("tiny", 0, 0, "step 4; export " + base));
  const Trace tr = preset_trace("tiny");
  REQUIRE(read_all(base + ".json") == trace_to_json(tr).dump(1) + "\n");
  REQUIRE(read_all(base + ".csv") == trace_to_csv(tr));
  REQUIRE(nlohmann::json::parse(std::ifstream(base + ".chrome.json")) == trace_to_chrome(tr));
  // The PNG is the window's to write, at the end of the next frame (test_gui.cpp checks it).
  REQUIRE(s.screenshot_request == base + ".png");
  REQUIRE_FALSE(fs::exists(base + ".png"));
  // A folder that does not exist: the message says so and nothing is thrown.
  std::snprintf(s.export_base, sizeof s.export_base, "%s", "/nonexistent/dir/trace");
  s.export_as(gui::ExportKind::csv);
  REQUIRE(s.export_message.rfind("error:", 0) == 0);
  REQUIRE_THROWS_WITH(state_after("export /nonexistent/dir/trace"), Contains("script: export error"));
}

TEST_CASE("lesson and compare views", "[gui]") {
  SECTION("the lesson preset opens the lesson with the blocks asked for") {
    gui::GuiOptions o = options("lesson", 0, 0, "");
    o.lesson_blocks = 2;
    const nlohmann::json d = state_after(o);
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
    gui::GuiOptions opt = options("tiny", 0, 0, "");
    opt.view = "compare";
    opt.compare_o = o;
    opt.compare_lse = lse;
    nlohmann::json d = state_after(opt);
    REQUIRE(d["view"] == "compare");
    REQUIRE(d["compare"]["loaded"] == true);
    REQUIRE(d["compare"]["passed"] == true);
    REQUIRE(d["compare"]["o_max_rel"].get<double>() == 0.0);
    opt.compare_o = bad;
    d = state_after(opt);
    REQUIRE(d["compare"]["passed"] == false);
    REQUIRE(d["compare"]["o_max_rel"].get<double>() > 1e-5);
  }
}

TEST_CASE("the Pipeline and Bench views follow the run's d and causal mask, and keep a choice made in them", "[gui]") {
  // gpt2-medium is one head at d = 64: both views open at d = 64 (they opened at 128 and the
  // file's first d whatever the preset). A run at d = 4 leaves them where they were.
  nlohmann::json d = state_after(options("gpt2-medium", 0, 0, ""));
  CHECK(d["pipeline"]["d"] == 64);
  CHECK(d["bench"]["d"] == 64);
  CHECK(d["pipeline"]["causal"] == false);
  d = state_after(options("causal", 0, 0, ""));
  CHECK(d["pipeline"]["causal"] == true);
  CHECK(d["pipeline"]["d"] == 128);  // d = 4 is no d of the view's
  // A choice made in the view stands while the run's own d and mask do not change...
  d = state_after("set d 64; set M 1024; apply; pipeline d 128; pipeline causal 1; set nq 16; apply");
  REQUIRE(d["problem"]["nq"] == 16);  // both runs made (M = 64 is below 4d at d = 64)
  CHECK(d["pipeline"]["d"] == 128);
  CHECK(d["pipeline"]["causal"] == true);
  // ...and a run that changes them moves the view.
  d = state_after("pipeline d 64; set d 128; set M 65536; set causal 1; apply");
  REQUIRE(d["problem"]["d"] == 128);
  CHECK(d["pipeline"]["d"] == 128);
  CHECK(d["pipeline"]["causal"] == true);
  CHECK(d["bench"]["d"] == 128);
}

TEST_CASE("bad options fail with one clear message before any window", "[gui]") {
  const auto [preset, view, script, expect] = GENERATE(table<std::string, std::string, std::string, std::string>({
      {"nope", "", "", "unknown preset 'nope'"},
      {"tiny", "", "fly 3", "unknown action 'fly'"},
      {"tiny", "matrices", "", "--view must be"},
      {"tiny", "", "seek -2", "seek needs a step index >= 0"},
      {"tiny", "", "set colour 3", "set knows nq"},
  }));
  gui::GuiOptions o = options(preset, 0, 0, script);
  o.view = view;
  gui::AppState s;
  REQUIRE_THROWS_WITH(gui::prepare_state(s, o), Contains(expect));
  int w = 0, h = 0;
  REQUIRE_THROWS_WITH(gui::parse_size("10x10", &w, &h), Contains("--size must be between"));
  REQUIRE_THROWS_WITH(gui::parse_size("wide", &w, &h), Contains("--size must look like"));
  gui::parse_size("1280x720", &w, &h);
  REQUIRE(w == 1280);
  REQUIRE(h == 720);
}

TEST_CASE("the bench view: the shipped file by default, a named file and figure, bad ones refused", "[gui][plot]") {
  const std::string results = std::string(FLASHSTEP_ASSET_DIR) + "/../gpu/results/";
  gui::GuiOptions o = options("tiny", 0, 0, "");
  o.view = "bench";
  {
    gui::AppState s;
    gui::prepare_state(s, o);
    REQUIRE(s.view == gui::View::bench);
    REQUIRE(s.bench.loaded);
    REQUIRE(std::string(s.bench.path).find("assets/bench/h200.json") != std::string::npos);
    REQUIRE(s.bench.figure == plot::FigureKind::bc);
    REQUIRE(s.bench.shown.series.size() == 2);  // HBM bars and runtime
    s.bench.select(plot::FigureKind::tflops, 128);
    REQUIRE(s.bench.d == 128);
    REQUIRE(s.bench.shown.kind == plot::FigureKind::tflops);
    s.bench.select(plot::FigureKind::memory, 96);  // not in the file: its smallest d
    REQUIRE(s.bench.d == 64);
    // A bad file keeps the one shown and says why.
    const size_t shown = s.bench.shown.series.size();
    REQUIRE_FALSE(s.bench.load(results + "forward-fp32/fa1-standard_bench.txt"));
    REQUIRE_THAT(s.bench.error, Contains("malformed JSON at byte"));
    REQUIRE(s.bench.loaded);
    REQUIRE(s.bench.shown.series.size() == shown);
    REQUIRE(std::string(s.bench.path).find("h200.json") != std::string::npos);
  }
  {
    o.bench = results + "tensor-core-forward/bench_bf16.json";
    o.bench_figure = "memory";
    gui::AppState s;
    gui::prepare_state(s, o);
    REQUIRE(s.bench.figure == plot::FigureKind::memory);
    REQUIRE(s.bench.shown.series.size() == 2);
    REQUIRE(s.bench.shown.series[0].label == "fa2 TC bf16");
    REQUIRE(s.bench.shown.series[1].label == "standard TC bf16");
    const nlohmann::json d = gui::state_to_json(s)["bench"];
    REQUIRE(d["figure"] == "memory");
    REQUIRE(d["y_log"] == true);
  }
  o.bench_figure = "pie";
  gui::AppState bad_figure;
  REQUIRE_THROWS_WITH(gui::prepare_state(bad_figure, o), Contains("unknown figure 'pie'"));
  o.bench_figure.clear();
  o.bench = results + "dram/ncu.json";
  gui::AppState bad_file;
  REQUIRE_THROWS_WITH(gui::prepare_state(bad_file, o), Contains("--bench: ") && Contains("is not a bench-gpu JSON file"));

  // A preset can open on the view.
  nlohmann::json preset = nlohmann::json::parse(gui::read_text_file(std::string(FLASHSTEP_ASSET_DIR) + "/presets/tiny.json"));
  preset["view"] = "bench";
  const std::string path = out_path("bench-preset.json");
  write_file_atomic(path, preset.dump());
  gui::AppState s;
  s.load_preset(path);
  REQUIRE(s.view == gui::View::bench);
}

TEST_CASE("the pipeline view: the model for each technique beside the H200's measurements", "[gui][pipeline]") {
  gui::GuiOptions o = options("tiny", 0, 0, "");
  o.view = "pipeline";
  gui::AppState s;
  gui::prepare_state(s, o);
  REQUIRE(s.view == gui::View::pipeline);
  REQUIRE(s.pipeline.measured_loaded);
  s.pipeline.d = 128;
  s.pipeline.n = 4096;
  s.pipeline.causal = false;
  s.pipeline.rebuild();
  REQUIRE(s.pipeline.rows.size() == pipeline::techniques(128).size());
  // Each technique's figure is its results file's, read here by the tests' own parser.
  for (const auto& r : s.pipeline.rows) {
    INFO(r.kernel.key);
    const TechniqueSource src = technique_source(r.kernel.key, 128);
    const double expected =
        fstest::bench_txt_tflops(std::string(FLASHSTEP_SOURCE_DIR) + "/" + src.file, src.config, 128, 4096, false);
    REQUIRE(expected > 0);
    REQUIRE(r.measured.found);
    CHECK(r.measured.value == expected);
    pipeline::Shape shape;
    shape.heads = 32;
    shape.nq = shape.nk = 4096;
    shape.d = 128;
    REQUIRE_THAT(r.predicted, Catch::Matchers::WithinRel(pipeline::predict(r.kernel, shape, pipeline::Rates{}).tflops, 1e-12));
  }
  // PyTorch's cuDNN and flash backends (variant 0 with a "kernel" name in the Hopper bench file),
  // one line each, the latest point of each.
  const nlohmann::json bench = load_json(std::string(FLASHSTEP_ASSET_DIR) + "/bench/h200_hopper.json");
  std::map<std::string, double> expected_reference;
  for (const auto& pt : bench["points"])
    if (pt["d"] == 128 && pt["n"] == 4096 && pt["causal"] == false && pt["variant"] == 0)
      expected_reference[pt["kernel"].get<std::string>()] = pt["tflops"].get<double>();
  REQUIRE(s.pipeline.references.size() == 2);
  REQUIRE(expected_reference.size() == 2);
  for (const auto& r : s.pipeline.references) {
    INFO(r.kernel);
    REQUIRE(expected_reference.count(r.kernel) == 1);
    CHECK(r.tflops == expected_reference[r.kernel]);
  }
  // The timeline shows every task of the first blocks of one thread block.
  REQUIRE(s.pipeline.timeline.segments.size() > 4 * 2 * 3);
  // A bad measurements file leaves the model running, says why.
  s.pipeline.load_measured(std::string(FLASHSTEP_ASSET_DIR) + "/bench/h200.json");
  REQUIRE_FALSE(s.pipeline.measured_loaded);
  REQUIRE_THAT(s.pipeline.measured_error, Catch::Contains("not a measurements file"));
  s.pipeline.rebuild();
  REQUIRE(s.pipeline.references.empty());
  REQUIRE(s.pipeline.rows[2].measured.found);  // the techniques' figures are the results files'
  // The backward: what each warpgroup does (the five products each Q block), the prediction, and
  // the measured time of the default backward from its results file.
  s.pipeline.backward = true;
  s.pipeline.rebuild();
  int products = 0;
  for (const auto& g : s.pipeline.timeline.segments) products += g.unit == pipeline::Unit::tensor;
  REQUIRE(products == gui::PipelineState::kShownBlocks * 2 * 5);
  REQUIRE(s.pipeline.backward_prediction.ms > 0);
  REQUIRE(s.pipeline.backward_measured.found);
  REQUIRE(s.pipeline.backward_measured.value > s.pipeline.backward_prediction.tensor_ms);
  o.view = "pipelines";
  gui::AppState bad;
  REQUIRE_THROWS_WITH(gui::prepare_state(bad, o), Catch::Contains("--view must be tiles, lesson, compare, bench or pipeline"));
}

TEST_CASE("preset numbers must be whole numbers in range", "[gui][preset][hardening]") {
  const char* bad[][2] = {
      {R"({"problem": {"nq": 1e300}})", "nq must be a whole number"},
      {R"({"problem": {"window": [1e300, 0]}})", "window LEFT must be a whole number"},
      {R"({"problem": {"d": 2.5}})", "d must be a whole number"},
      {R"({"problem": {"nk": 18446744073709551615}})", "nk must be a whole number"},
      {R"({"problem": {"seed": -1}})", "seed must be a whole number in 0.."},
      {R"({"problem": {"bc": "7"}})", "bc must be a number"},
      {R"({"lesson": {"block": -1}})", "lesson block must be in 1..268435456"},
      {R"({"lesson": {"block": 0.5}})", "lesson block must be a whole number in 1.."},
  };
  for (const auto& b : bad) {
    CAPTURE(b[0]);
    try {
      gui::parse_preset(b[0], "p.json");
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find(b[1]) != std::string::npos);
    }
  }
  // In range, a whole number written as a float is fine; the sizes are validated later.
  const gui::Preset p = gui::parse_preset(R"({"problem": {"nq": 3.0e2, "nk": 77, "window": [-1, 4]}})", "p.json");
  CHECK(p.spec.nq == 300);
  CHECK(p.spec.nk == 77);
  CHECK(p.spec.options.mask.window_right == 4);
  ProblemSpec s = p.spec;
  s.nq = int64_t(1) << 40;  // what 1e12 would give: refused by validation, not wrapped
  CHECK_THROWS_AS(validate_sizes(s), InputError);
}

TEST_CASE("the followed row is the same whether a step is reached by seeking or by stepping", "[gui]") {
  // The web page opens a link's step by seeking, the desktop's --step by stepping: both show the
  // block of the last step that has one (a K/V load between Q blocks has none).
  gui::AppState stepped, sought;
  gui::prepare_state(stepped, options("causal", 0, 0, ""));
  gui::prepare_state(sought, options("causal", 0, 0, ""));
  for (size_t k = 1; k <= stepped.steps(); ++k) {
    stepped.step_forward();
    sought.seek(0);
    sought.seek(k);
    INFO("step " << k);
    REQUIRE(sought.plot_row == stepped.plot_row);
  }
}
