// `flashstep gui --trace FILE` in-process: a trace written with its replay section
// (core/trace_file.h, what the Python module's save_trace writes) reads back into the same
// Trace, and the app steps through it with the same HBM states, tiles and statistics as the run
// it came from; files that are not such a trace are refused with one line naming the field.
#include "app/gui/app_state.h"
#include "app/gui/decode_state.h"
#include "app/gui/options.h"
#include "core/output_files.h"
#include "core/run.h"
#include "core/trace_file.h"
#include "gui_test_helpers.h"

#include <catch2/catch.hpp>
#include <fstream>

using namespace flashstep;
using Catch::Matchers::Contains;

namespace {

Trace recorded(Schedule sched, int64_t nq, int64_t nk, int64_t d, int64_t M, bool causal, uint64_t seed) {
  ProblemSpec s = sizes_spec(nq, nk, d, M);
  s.schedule = sched;
  s.seed = seed;
  s.options.mask.causal = causal;
  RunOptions opt;
  opt.record = true;
  return run_spec(s, opt);
}

std::string save(const Trace& t, const std::string& name) {
  const std::string path = out_path(name);
  write_file_atomic(path, trace_to_replay_json(t).dump() + "\n");
  return path;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

gui::GuiOptions trace_options(const std::string& path) {
  gui::GuiOptions o;
  o.trace = path;
  return o;
}

}  // namespace

TEST_CASE("a trace file reads back into the trace it was written from", "[gui][trace]") {
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard, Schedule::decode);
  const bool causal = GENERATE(false, true);
  const uint64_t seed = uint64_t(Catch::rngSeed()) + 3;
  const Trace t = recorded(sched, 13, 21, 4, 64, causal, seed);
  const Trace back = read_trace_file(save(t, "roundtrip.json"));
  REQUIRE(back.steps.size() == t.steps.size());
  CHECK(back.problem.Q == t.problem.Q);
  CHECK(back.problem.V == t.problem.V);
  CHECK(back.O == t.O);
  CHECK(back.totals.hbm_read_bytes == t.totals.hbm_read_bytes);
  CHECK(back.totals.traffic.read == t.totals.traffic.read);
  CHECK(back.problem.mask.causal == causal);
  for (size_t k = 0; k < t.steps.size(); ++k) {
    const Step &a = t.steps[k], &b = back.steps[k];
    INFO("step " << k << " " << line_label(a.line));
    REQUIRE(b.line == a.line);
    CHECK((b.i == a.i && b.j == a.j && b.split == a.split));
    CHECK((b.hbm_read == a.hbm_read && b.hbm_write_total == a.hbm_write_total && b.sram_elems == a.sram_elems));
    CHECK(b.tile == a.tile);
    CHECK(b.l_new.size() == a.l_new.size());
    if (a.l_new.size()) CHECK(b.l_new == a.l_new);
    CHECK(b.m_old == a.m_old);  // -inf (a row's first block) compares equal to -inf
    REQUIRE(b.writes.size() == a.writes.size());
    for (size_t w = 0; w < a.writes.size(); ++w) {
      CHECK(b.writes[w].tensor == a.writes[w].tensor);
      CHECK(b.writes[w].row0 == a.writes[w].row0);
      CHECK(b.writes[w].data == a.writes[w].data);  // m = -inf of Alg1 L2 included
    }
  }
}

TEST_CASE("gui --trace steps through the file's trace with the run's HBM states", "[gui][trace]") {
  const Trace t = recorded(Schedule::fa1, 10, 13, 4, 64, false, uint64_t(Catch::rngSeed()) + 7);
  gui::AppState s;
  gui::prepare_state(s, trace_options(save(t, "app.json")));
  REQUIRE(s.steps() == t.steps.size());
  CHECK(s.preset_name == "trace");
  Cursor c(t);
  for (size_t k : {size_t(1), size_t(19), t.steps.size() / 2, t.steps.size()}) {
    s.seek(k);
    c.seek(k);
    INFO("step " << k);
    for (Tensor x : {Tensor::O, Tensor::l, Tensor::m}) {
      REQUIRE(s.cursor->written(x) == c.written(x));
      if (c.written(x)) CHECK(s.cursor->hbm(x) == c.hbm(x));
    }
  }
  // The memory panel runs every schedule on the file's inputs: fa1's entry is the file's totals.
  const auto& fa1 = s.run->runs[size_t(gui::schedule_column(Schedule::fa1))];
  CHECK(fa1.totals.hbm_read_bytes == t.totals.hbm_read_bytes);
  CHECK(s.run->runs[size_t(gui::schedule_column(Schedule::fa2))].ok);
  // Its S tiles are the recorded ones, placed where they belong.
  CHECK(s.run->S(12, 9) != 0.0f);
  CHECK(s.run->merge_step[size_t(2 * t.tiling.Tc + 3)] >= 0);
}

TEST_CASE("gui --trace refuses a file that is not a trace with its replay section", "[gui][trace]") {
  const Trace t = recorded(Schedule::fa2, 6, 9, 4, 64, false, 5);
  nlohmann::json good = trace_to_replay_json(t);
  struct Case {
    const char* name;
    std::string text;
    const char* expect;
  };
  nlohmann::json no_replay = good, bad_label = good, bad_write = good, bad_shape = good, bad_version = good;
  no_replay.erase("replay");
  bad_label["steps"][3]["label"] = "Alg9 L1";
  bad_write["replay"]["steps"][1]["writes"] = {{{"tensor", "O"}, {"row0", 5}, {"data", {{"rows", 3}, {"cols", 4}, {"data", std::vector<float>(12, 1.0f)}}}}};
  bad_shape["replay"]["Q"]["rows"] = 5;
  bad_version["replay"]["version"] = 7;
  const Case cases[] = {
      {"text.json", "this is not JSON", "text.json"},
      {"array.json", "[1, 2, 3]", "not a flashstep trace"},
      {"run.json", no_replay.dump(), "without its \"replay\" section"},
      {"label.json", bad_label.dump(), "steps[3].label is not a pseudocode line of flashstep (Alg9 L1)"},
      {"write.json", bad_write.dump(), "replay.steps[1].writes[0] does not fit tensor O"},
      {"shape.json", bad_shape.dump(), "replay.Q has 24 numbers for 5 x 4"},
      {"version.json", bad_version.dump(), "replay.version is not 1"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const std::string path = out_path(c.name);
    write_text(path, c.text);
    gui::AppState s;
    REQUIRE_THROWS_WITH(gui::prepare_state(s, trace_options(path)), Contains(c.expect));
  }
  gui::AppState s;
  REQUIRE_THROWS_WITH(gui::prepare_state(s, trace_options(out_path("missing.json"))), Contains("missing.json"));
}

TEST_CASE("gui --trace starts from what HBM held before the first step", "[gui][trace]") {
  // A puzzle's setup: FlashAttention-2's run with O and L placed in HBM before its first step
  // (values no step writes), as a student's trace carries them in replay.hbm_before.
  Trace t = recorded(Schedule::fa2, 7, 9, 4, 64, false, uint64_t(Catch::rngSeed()) + 11);
  Mat O0 = Mat::Constant(7, 4, 0.25f), L0 = Mat::Constant(7, 1, -1.5f);
  t.hbm_before = {{Tensor::O, 0, O0}, {Tensor::L, 0, L0}};
  const std::string path = save(t, "before.json");
  const Trace back = read_trace_file(path);
  REQUIRE(back.hbm_before.size() == 2);
  CHECK(back.hbm_before[1].data == L0);

  gui::AppState s;
  gui::prepare_state(s, trace_options(path));
  s.seek(0);
  REQUIRE(s.cursor->written(Tensor::O));
  CHECK(s.cursor->hbm(Tensor::O) == O0);
  CHECK(s.cursor->hbm(Tensor::L) == L0);
  CHECK_FALSE(s.cursor->written(Tensor::l));
  // The first write of O (FA2fwd L14 of block 0) replaces rows 0..Br-1 only; the rest is the setup's.
  size_t first_o = 0;
  while (first_o < t.steps.size() && t.steps[first_o].writes.empty()) ++first_o;
  REQUIRE(first_o < t.steps.size());
  s.seek(first_o + 1);
  const HbmWrite& w = t.steps[first_o].writes[0];
  REQUIRE(w.tensor == Tensor::O);
  CHECK(s.cursor->hbm(Tensor::O).middleRows(w.row0, w.data.rows()) == w.data);
  if (w.row0 + w.data.rows() < 7) CHECK(s.cursor->hbm(Tensor::O)(6, 0) == 0.25f);
  // Back to the start: the setup again, not the written rows.
  s.seek(0);
  CHECK(s.cursor->hbm(Tensor::O) == O0);

  // A setup write that does not fit its tensor is refused, naming it.
  nlohmann::json bad = trace_to_replay_json(t);
  bad["replay"]["hbm_before"][1]["row0"] = 5;
  write_text(out_path("before-bad.json"), bad.dump());
  gui::AppState s2;
  REQUIRE_THROWS_WITH(gui::prepare_state(s2, trace_options(out_path("before-bad.json"))),
                      Contains("replay.hbm_before[1] does not fit tensor L"));
}

TEST_CASE("decode's partials held before the first step are in HBM from step 0", "[gui][trace][decode]") {
  // The decode-combine puzzle: the splits' partials are the setup, the student's steps combine.
  ProblemSpec spec = sizes_spec(5, 30, 4, 64);
  spec.schedule = Schedule::decode;
  spec.splits = 3;
  spec.seed = uint64_t(Catch::rngSeed()) + 13;
  RunOptions opt;
  opt.record = true;
  const Trace run = run_spec(spec, opt);
  Cursor end(run);
  end.run_to_end();
  // The student's trace: the combine's steps only (from the first FD L17 on), the partials the setup.
  Trace t = run;
  size_t first = 0;
  while (first < t.steps.size() && line_role(t.steps[first].line) != LineRole::combine) ++first;
  REQUIRE(first < t.steps.size());
  t.steps.erase(t.steps.begin(), t.steps.begin() + std::ptrdiff_t(first));
  for (const Step& st : t.steps)
    for (const HbmWrite& w : st.writes) REQUIRE((w.tensor != Tensor::Op && w.tensor != Tensor::Lp));
  t.hbm_before = {{Tensor::Op, 0, end.hbm(Tensor::Op)}, {Tensor::Lp, 0, end.hbm(Tensor::Lp)}};
  const gui::PartialWrites w = gui::partial_writes(t);
  REQUIRE(w.S == 3);
  for (int64_t at = 0; at < w.S * w.Tr; ++at) {
    CHECK(w.o_step[size_t(at)] == gui::kBeforeFirstStep);
    CHECK(gui::partial_in_hbm(w.lse_step[size_t(at)], 0));
  }
  CHECK_FALSE(gui::partial_in_hbm(-1, 5));  // never written
  CHECK_FALSE(gui::partial_in_hbm(3, 3));   // written by step 3, not yet applied
  CHECK(gui::partial_in_hbm(3, 4));
  Cursor c(t);
  REQUIRE(c.written(Tensor::Op));
  CHECK(c.hbm(Tensor::Lp) == end.hbm(Tensor::Lp));
}
