// `flashstep gui --trace FILE` in-process: a trace written with its replay section
// (core/trace_file.h, what the Python module's save_trace writes) reads back into the same
// Trace, and the app steps through it with the same HBM states, tiles and statistics as the run
// it came from (a backward's from its first step on in the backward view); a softmax row's trace
// (core/row_trace.h) steps beside core's lesson; files that are not such a trace are refused with
// one line naming the field.
#include "app/gui/app_state.h"
#include "app/gui/backward_state.h"
#include "app/gui/decode_state.h"
#include "app/gui/options.h"
#include "app/gui/state_dump.h"
#include "core/backward.h"
#include "core/output_files.h"
#include "core/run.h"
#include "core/trace_file.h"
#include "gui_test_helpers.h"
#include "tests/test_files.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <functional>
#include <cstdint>
#include <limits>

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

using fstest::write_text;

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
  nlohmann::json no_replay = good, bad_label = good, bad_write = good, bad_shape = good, bad_version = good,
                 bad_stat = good, bad_tile = good, no_j = good, tile_no_i = good, other_listing = good;
  no_replay.erase("replay");
  // The first steps with row statistics and with a tile: a value per row of Q_i, a tile of the
  // step's blocks (the app draws them there).
  size_t with_stat = 0, with_tile = 0;
  while (t.steps[with_stat].m_new.size() == 0) ++with_stat;
  while (t.steps[with_tile].tile.size() == 0) ++with_tile;
  bad_stat["replay"]["steps"][with_stat]["m_new"] = {1.0, 2.0, 3.0};
  bad_tile["replay"]["steps"][with_tile]["tile"] = {{"rows", 7}, {"cols", 2}, {"data", std::vector<float>(14, 1.0f)}};
  const std::string stat_at = "replay.steps[" + std::to_string(with_stat) + "].m_new has 3 values where Q block 0 has";
  const std::string tile_at = "replay.steps[" + std::to_string(with_tile) + "].tile is 7 x 2, not a tile of the step's blocks";
  bad_label["steps"][3]["label"] = "Alg9 L1";
  other_listing["steps"][3]["label"] = "Alg1 L12";  // a line of Algorithm 1 in FlashAttention-2's run
  // A step its line cannot place (the app indexes its per-tile tables by i and j): scores without
  // a K/V block, and a tile at a K/V load without a Q block to draw it at.
  size_t scores = 0, load_kv = 0;
  while (line_role(t.steps[scores].line) != LineRole::scores) ++scores;
  while (line_role(t.steps[load_kv].line) != LineRole::load_kv) ++load_kv;
  no_j["steps"][scores]["j"] = -1;
  tile_no_i["steps"][load_kv]["i"] = -1;
  tile_no_i["replay"]["steps"][load_kv]["tile"] = {{"rows", 3}, {"cols", 5}, {"data", std::vector<float>(15, 1.0f)}};
  const std::string no_j_at = "steps[" + std::to_string(scores) + "] has i = 0, j = -1, but FA2fwd L8 (scores) works on "
                              "a block pair (i, j)";
  const std::string tile_no_i_at = "steps[" + std::to_string(load_kv) + "] has i = -1, j = 0: on-chip values (a tile) "
                                   "without a Q block to draw them at";
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
      {"stat.json", bad_stat.dump(), stat_at.c_str()},
      {"tile.json", bad_tile.dump(), tile_at.c_str()},
      {"other-listing.json", other_listing.dump(),
       "steps[3].label is not a line of FlashAttention-2 (Dao 2023, Algorithm 1) (Alg1 L12)"},
      {"no-j.json", no_j.dump(), no_j_at.c_str()},
      {"tile-no-i.json", tile_no_i.dump(), tile_no_i_at.c_str()},
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

TEST_CASE("gui --trace opens a trace with some of a step's statistics left out", "[gui][trace]") {
  // A puzzle's notes are optional and may be m_new without l_new (or the reverse): the app draws
  // what is there, and reads neither beyond its own length.
  const Trace t = recorded(Schedule::fa1, 8, 8, 4, 64, false, 1);
  nlohmann::json doc = trace_to_replay_json(t);
  int dropped = 0;
  for (auto& step : doc["replay"]["steps"])
    if (step.contains("l_new")) {
      step.erase(dropped % 2 ? "m_new" : "l_new");
      ++dropped;
    }
  REQUIRE(dropped > 1);
  const std::string path = out_path("partial-stats.json");
  write_text(path, doc.dump());
  gui::AppState s;
  gui::prepare_state(s, trace_options(path));
  for (int64_t k = 0; k <= int64_t(t.steps.size()); ++k) {
    s.seek(k);
    REQUIRE_NOTHROW(gui::state_to_json(s));
  }
}

TEST_CASE("the run view draws no step outside the tiling", "[gui][trace]") {
  // The reader refuses such steps; the view, made from a Trace directly, must still never index
  // its per-tile tables with i or j = -1 or beyond (they were written out of bounds: a puzzle's
  // trace with i = j = -1 aborted the app with heap corruption).
  Trace t = recorded(Schedule::fa1, 8, 8, 4, 64, false, 3);  // Tr = Tc = 2, j outer
  REQUIRE((t.tiling.Tr == 2 && t.tiling.Tc == 2));
  const auto right = gui::make_run_view_from_trace(t);
  auto at = [&](Line line, int64_t i, int64_t j) {
    const int64_t k = right->step_of(i, j, line);
    REQUIRE(k >= 0);
    return size_t(k);
  };
  const size_t l9 = at(Line::A1_L9, 1, 1), l10 = at(Line::A1_L10, 1, 1), l6 = at(Line::A1_L6, -1, 1);
  t.steps[l9].i = -1;  // S_11 without its Q block: s_ready(-1, 1) is s_ready(1, 0)'s memory
  t.steps[l10].j = -1;  // P~_11 without its K/V block: i Tc + j is tile (0, 1)
  t.steps[l6].j = 5;    // beyond the K/V blocks
  const auto v = gui::make_run_view_from_trace(t);
  CHECK(v->s_ready(1, 0) == right->s_ready(1, 0));
  CHECK(v->s_ready(1, 1) > float(t.steps.size()));  // never computed, as far as the view knows
  CHECK(v->p_ready(1, 1) > float(t.steps.size()));
  CHECK(v->tilde_step[1] == right->tilde_step[1]);  // tile (0, 1): its own L10, not the one at (1, -1)
  CHECK(v->tilde_step[3] == -1);
  CHECK(v->kv_first_load == std::vector<int64_t>{right->kv_first_load[0], -1});
}

TEST_CASE("HBM's l and m are coloured by the values written there, noted or not", "[gui][trace]") {
  // A puzzle's trace without m.note has no merged statistics: the colour scales of HBM's l and m
  // come from what the steps wrote there (they were empty, and every stored value one colour).
  Trace t = recorded(Schedule::fa1, 8, 11, 4, 64, false, uint64_t(Catch::rngSeed()) + 5);
  const auto noted = gui::make_run_view_from_trace(t);
  float m_abs = 0, l_max = 0;  // over the finite values written (Alg1 L2 writes m = -inf)
  for (Step& st : t.steps) {
    for (const HbmWrite& w : st.writes)
      for (int64_t e = 0; e < w.data.size(); ++e) {
        const float x = w.data.data()[e];
        if (w.tensor == Tensor::m && std::isfinite(x)) m_abs = std::max(m_abs, std::abs(x));
        if (w.tensor == Tensor::l && std::isfinite(x)) l_max = std::max(l_max, std::abs(x));
      }
    for (Vec* v : {&st.m_tilde, &st.l_tilde, &st.m_old, &st.l_old, &st.m_new, &st.l_new, &st.alpha, &st.beta})
      v->resize(0);
  }
  REQUIRE((m_abs > 0.1f && l_max > 1.0f));
  const auto bare = gui::make_run_view_from_trace(t);
  CHECK_FALSE(bare->any_merge);
  CHECK(bare->range_m == m_abs);
  CHECK(bare->max_l == l_max);
  // The recorded run's merged m_i^new, l_i^new are the values written: the same scales.
  CHECK(noted->range_m == m_abs);
  CHECK(noted->max_l == l_max);
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

TEST_CASE("a trace with the backward reads back and opens in the backward view", "[gui][trace][backward]") {
  ProblemSpec spec = sizes_spec(10, 13, 4, 64);
  spec.schedule = Schedule::fa2;
  spec.seed = uint64_t(Catch::rngSeed()) + 17;
  const Problem p = make_problem(spec);
  const Mat dO = make_grad_output(p, "random");
  RunOptions opt;
  opt.record = true;
  opt.dO = &dO;
  const Trace t = run_problem(p, make_tiling(p), opt);
  REQUIRE(t.has_backward);
  const std::string path = save(t, "backward.json");
  const Trace back = read_trace_file(path);
  REQUIRE(back.has_backward);
  CHECK(back.backward_first_step == t.backward_first_step);
  REQUIRE(back.steps.size() == t.steps.size());
  for (size_t k = 0; k < t.steps.size(); ++k) REQUIRE(back.steps[k].line == t.steps[k].line);
  CHECK(back.dO == t.dO);
  CHECK(back.dQ == t.dQ);
  CHECK(back.dK == t.dK);
  CHECK(back.backward_totals.hbm_read_bytes == t.backward_totals.hbm_read_bytes);
  CHECK(back.forward_totals.traffic.read == t.forward_totals.traffic.read);
  CHECK(back.backward_totals.traffic.written == t.backward_totals.traffic.written);

  gui::AppState s;
  gui::prepare_state(s, trace_options(path));
  CHECK(s.run->backward);
  CHECK(s.form.backward);
  s.seek(t.backward_first_step);
  CHECK_FALSE(gui::in_backward(s.run->trace, s.index()));
  s.seek(s.steps());
  CHECK(gui::in_backward(s.run->trace, s.index()));
  Cursor c(t);
  c.run_to_end();
  CHECK(s.cursor->hbm(Tensor::dK) == c.hbm(Tensor::dK));
  CHECK(s.cursor->hbm(Tensor::D) == c.hbm(Tensor::D));
  // Beside it every schedule ran its backward on the file's dO.
  const auto& fa1 = s.run->runs[size_t(gui::schedule_column(Schedule::fa1))];
  REQUIRE(fa1.ok);
  CHECK(fa1.backward_totals.hbm_read_bytes > 0);

  // A backward line before the backward's first step, or of another schedule's backward, is refused.
  nlohmann::json early = trace_to_replay_json(t), other = early;
  early["phases"]["backward"]["first_step"] = t.backward_first_step + 1;
  other["steps"][t.steps.size() - 1]["label"] = "Alg4 L24";
  const std::string at = "steps[" + std::to_string(t.backward_first_step) + "].label";
  write_text(out_path("early.json"), early.dump());
  write_text(out_path("other.json"), other.dump());
  gui::AppState s2, s3;
  REQUIRE_THROWS_WITH(gui::prepare_state(s2, trace_options(out_path("early.json"))),
                      Contains(at + " is a line of a backward pass before phases.backward.first_step"));
  REQUIRE_THROWS_WITH(gui::prepare_state(s3, trace_options(out_path("other.json"))),
                      Contains("is not a line of FlashAttention-2"));
}

namespace {

// [1, 2, 3, 4] in blocks of 2, as a student of the online-softmax puzzle runs it: m and l
// stored after each block, then y in one step.
RowTrace lesson_row() {
  RowTrace t;
  t.x = Vec(4);
  t.x << 1, 2, 3, 4;
  t.block = 2;
  const float inf = std::numeric_limits<float>::infinity();
  t.hbm_before = {{RowTensor::y, 0, Vec::Zero(4)}, {RowTensor::m, 0, Vec::Constant(1, -inf)}, {RowTensor::l, 0, Vec::Zero(1)}};
  float m = -inf, l = 0;
  int64_t rd = 0, wr = 0;
  for (int64_t b = 0; b < 2; ++b) {
    RowStep s;
    s.label = "block " + std::to_string(b);
    s.loads = {{RowTensor::x, 2 * b, 2 * b + 2}};
    const float mt = t.x(2 * b + 1), lt = std::exp(t.x(2 * b) - mt) + 1.0f, mn = std::max(m, mt);
    l = std::exp(m - mn) * l + std::exp(mt - mn) * lt;
    m = mn;
    s.stores = {{RowTensor::m, 0, Vec::Constant(1, m)}, {RowTensor::l, 0, Vec::Constant(1, l)}};
    s.read = 8, s.write = 8;
    s.read_total = rd += 8, s.write_total = wr += 8;
    t.steps.push_back(s);
  }
  RowStep y;
  y.label = "y";
  y.loads = {{RowTensor::x, 0, 4}};
  y.stores = {{RowTensor::y, 0, ((t.x.array() - m).exp() / l).matrix()}};
  y.read = y.write = 16;
  y.read_total = rd + 16, y.write_total = wr + 16;
  t.steps.push_back(y);
  t.peak_sram_bytes = 8;
  return t;
}

std::string save_row(const RowTrace& t, const std::string& name) {
  const std::string path = out_path(name);
  write_file_atomic(path, row_trace_to_replay_json(t).dump() + "\n");
  return path;
}

}  // namespace

TEST_CASE("a softmax row's trace reads back and steps beside core's lesson", "[gui][trace][row]") {
  const RowTrace t = lesson_row();
  const std::string path = save_row(t, "row.json");
  const TraceFile f = read_any_trace_file(path);
  REQUIRE(f.kind == TraceKind::softmax_row);
  CHECK(f.row.x == t.x);
  CHECK(f.row.block == 2);
  REQUIRE(f.row.steps.size() == 3);
  CHECK(f.row.steps[1].label == "block 1");
  CHECK(f.row.steps[1].stores[1].data == t.steps[1].stores[1].data);
  CHECK(f.row.steps[2].loads[0].end == 4);
  CHECK(std::isinf(f.row.hbm_before[1].data(0)));
  REQUIRE_THROWS_WITH(read_trace_file(path), Contains("a softmax row's trace"));

  gui::AppState s;
  gui::prepare_state(s, trace_options(path));
  REQUIRE(s.row);
  REQUIRE(s.steps() == 3);
  CHECK(s.index() == 0);
  s.step_forward();
  const gui::RowAt& a = s.row_now;
  CHECK(a.current_block == 0);
  CHECK((a.x_loaded == std::vector<gui::Seen>{gui::Seen::now, gui::Seen::now, gui::Seen::no, gui::Seen::no}));
  CHECK((a.blocks[0].m_stored && a.blocks[0].m == 2.0f && a.blocks[0].l == t.steps[0].stores[1].data(0)));
  CHECK_FALSE(a.blocks[1].reached);
  CHECK_FALSE(a.blocks[1].m_stored);
  s.seek(3);
  CHECK(s.row_now.hbm[size_t(RowTensor::y)] == t.steps[2].stores[0].data);
  CHECK(s.row_now.read[size_t(RowTensor::x)] == 32);
  s.step_back();
  CHECK(s.index() == 2);
  CHECK(s.row_now.blocks[1].m == 4.0f);
  // The lesson beside it is core's for the same row and blocks.
  const Lesson L = run_lesson({1, 2, 3, 4}, 2);
  CHECK(s.row->lesson.blocks[1].l_new == L.blocks[1].l_new);
  const nlohmann::json dump = gui::state_to_json(s);
  CHECK(dump["line"] == "block 1");
  CHECK(dump["row"]["blocks"][1]["student"]["m"] == 4.0);
  CHECK(dump["row"]["blocks"][1]["lesson"]["l_new"] == L.blocks[1].l_new);
  // A new run (the editor's Apply) ends the row.
  s.run_script("apply");
  CHECK_FALSE(s.row);
  CHECK(s.steps() == s.cursor->size());
}

TEST_CASE("a softmax row's trace with a bad field is refused naming it", "[gui][trace][row]") {
  const nlohmann::json good = row_trace_to_replay_json(lesson_row());
  struct Case {
    const char* name;
    std::function<void(nlohmann::json&)> edit;
    const char* expect;
  };
  const Case cases[] = {
      {"kind", [](nlohmann::json& d) { d["replay"]["kind"] = "matrix"; }, "replay.kind is not \"attention\" or \"softmax-row\" (matrix)"},
      {"block", [](nlohmann::json& d) { d["row"]["block"] = 5; }, "row.block must be in 1..N = 4 (got 5)"},
      {"x", [](nlohmann::json& d) { d["replay"]["x"][2] = "nan"; }, "replay.x[2] is not finite"},
      {"xlen", [](nlohmann::json& d) { d["replay"]["x"].erase(3); }, "replay.x holds 3 values where row.n is 4"},
      {"label", [](nlohmann::json& d) { d["steps"][0]["label"] = std::string(81, 'a'); }, "steps[0].label is longer than 80 bytes"},
      {"empty", [](nlohmann::json& d) { d["steps"][2]["label"] = ""; }, "steps[2].label is empty"},
      {"bytes", [](nlohmann::json& d) { d["steps"][2]["hbm_write_bytes"] = 12; }, "steps[2].hbm_write_bytes is 12 where the step's stores move 16 bytes"},
      {"total", [](nlohmann::json& d) { d["steps"][1]["hbm_read_total"] = 9; }, "steps[1] has totals that are not the sum"},
      {"load", [](nlohmann::json& d) { d["replay"]["steps"][0]["loads"][0]["end"] = 5; }, "replay.steps[0].loads[0] [0:5] is not inside x (4 values)"},
      {"tensor", [](nlohmann::json& d) { d["replay"]["steps"][0]["stores"][0]["tensor"] = "O"; }, "replay.steps[0].stores[0].tensor is not x, y, m or l (O)"},
      {"before", [](nlohmann::json& d) { d["replay"].erase("hbm_before"); }, "replay.hbm_before is missing"},
      {"count", [](nlohmann::json& d) { d["replay"]["steps"].erase(0); }, "replay.steps does not have one entry per step"},
      {"row0", [](nlohmann::json& d) { d["replay"]["steps"][2]["stores"][0]["row0"] = INT64_MAX; }, "replay.steps[2].stores[0].row0 is 9223372036854775807, outside y (4 values)"},
      {"store", [](nlohmann::json& d) { d["replay"]["steps"][2]["stores"][0]["row0"] = 1; }, "replay.steps[2].stores[0] [1:5] is not inside y (4 values)"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    nlohmann::json bad = good;
    c.edit(bad);
    const std::string path = out_path(std::string("row-") + c.name + ".json");
    write_text(path, bad.dump());
    gui::AppState s;
    REQUIRE_THROWS_WITH(gui::prepare_state(s, trace_options(path)), Contains(c.expect));
    CHECK_FALSE(s.row);
  }
}
