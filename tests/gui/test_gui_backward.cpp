// The backward pass in the desktop app, in-process: the backward preset and the editor's
// checkbox make the same trace as core's run_problem with dO from the seed; the app's HBM state
// (dQ, dK, dV, D, dP, dS) agrees with core's Cursor at every backward step; the on-chip tiles
// the tiles view shows are the latest ones core recorded for the current (i, j); the memory
// panel's phase totals equal the closed forms.
#include "core/schedule_registry.h"
#include "app/gui/backward_state.h"
#include "app/gui/options.h"
#include "app/gui/preset.h"
#include "app/gui/state_dump.h"
#include "core/backward.h"
#include "core/closed_form.h"
#include "core/run.h"
#include "gui_test_helpers.h"

#include <cmath>

using namespace flashstep;
using Catch::Matchers::Contains;

namespace {

gui::GuiOptions preset_options(const std::string& preset, const std::string& script = "") {
  gui::GuiOptions o;
  o.preset = preset;
  o.script = script;
  return o;
}

// What `flashstep run --backward` runs for this spec: core alone, dO from the seed.
Trace core_backward_trace(const ProblemSpec& spec) {
  const Problem p = make_problem(spec);
  const Mat dO = make_grad_output(p, spec.q_path.empty() ? spec.pattern : "random");
  RunOptions opt;
  opt.record = true;
  opt.dO = &dO;
  return run_problem(p, make_tiling(p), opt);
}

// Bitwise equality with NaN = NaN (a row not written yet).
bool same(const Mat& a, const Mat& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
  for (int64_t e = 0; e < a.size(); ++e) {
    const float x = a.data()[e], y = b.data()[e];
    if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
  }
  return true;
}

// The latest step at or before k - 1 of the current j loop with one of `lines` (and the current
// i when `same_i`), found by a forward scan: an implementation apart from backward_chip's.
const Step* latest(const Trace& t, size_t k, std::initializer_list<Line> lines, bool same_i) {
  const Step& cur = t.steps[k - 1];
  const Step* found = nullptr;
  for (size_t n = t.backward_first_step; n < k; ++n) {
    const Step& s = t.steps[n];
    if (cur.j >= 0 ? s.j != cur.j : n != k - 1) continue;
    if (same_i && (s.i != cur.i || cur.i < 0)) continue;
    for (Line l : lines)
      if (s.line == l && (s.tile.size() || s.D_i.size())) found = &s;
  }
  return found;
}

// Walks the app's state through every backward step and checks it against a core Cursor.
void require_backward_agrees(gui::AppState& s, const Trace& tr) {
  REQUIRE(s.run->trace.has_backward);
  REQUIRE(s.steps() == tr.steps.size());
  REQUIRE(s.run->trace.backward_first_step == tr.backward_first_step);
  REQUIRE(same(s.run->trace.dQ, tr.dQ));  // same seed: the identical run
  REQUIRE(same(s.run->trace.dK, tr.dK));
  REQUIRE(same(s.run->trace.dV, tr.dV));
  Cursor c(tr);
  const Schedule sched = tr.problem.schedule;
  int checked_chip = 0;
  for (size_t k = tr.backward_first_step + 1; k <= tr.steps.size(); ++k) {
    s.seek(k);
    c.seek(k);
    INFO("step " << k << " " << line_label(tr.steps[k - 1].line));
    REQUIRE(is_backward_line(s.cursor->current()->line));
    for (Tensor t : {Tensor::O, Tensor::dQ, Tensor::dK, Tensor::dV, Tensor::D, Tensor::dP, Tensor::dS}) {
      REQUIRE(s.cursor->written(t) == c.written(t));
      if (c.written(t)) REQUIRE(same(s.cursor->hbm(t), c.hbm(t)));
    }
    const gui::BackwardChip chip = gui::backward_chip(s.run->trace, k);
    auto at = [&](const Step* x) { return x ? x - s.run->trace.steps.data() : -1; };
    auto want = [&](std::initializer_list<Line> lines, bool same_i) {
      const Step* x = latest(tr, k, lines, same_i);
      return x ? x - tr.steps.data() : -1;
    };
    if (sched == Schedule::fa1) {
      REQUIRE(at(chip.dV) == want({Line::A4_L16}, false));
      REQUIRE(at(chip.dK) == want({Line::A4_L22}, false));
      REQUIRE(at(chip.P) == want({Line::A4_L13}, true));
      REQUIRE(at(chip.dP) == want({Line::A4_L17, Line::A4_L18}, true));
      REQUIRE(at(chip.dS) == want({Line::A4_L20}, true));
      REQUIRE(at(chip.D) == want({Line::A4_L19}, true));
    } else if (sched == Schedule::fa2) {
      REQUIRE(at(chip.dV) == want({Line::FA2B_L12}, false));
      REQUIRE(at(chip.dK) == want({Line::FA2B_L16}, false));
      REQUIRE(at(chip.P) == want({Line::FA2B_L11}, true));
      REQUIRE(at(chip.dS) == want({Line::FA2B_L14}, true));
    } else {
      REQUIRE(at(chip.dS) == want({Line::A3_L3}, true));
    }
    // What the step itself computed is what the view shows as computed now.
    const Step& cur = tr.steps[k - 1];
    if (cur.line == Line::A4_L22 || cur.line == Line::FA2B_L16) {
      REQUIRE(chip.dK != nullptr);
      REQUIRE(same(chip.dK->tile, cur.tile));
      ++checked_chip;
    }
    if (cur.line == Line::A4_L20 || cur.line == Line::FA2B_L14 || cur.line == Line::A3_L3) {
      REQUIRE(chip.dS != nullptr);
      REQUIRE(same(chip.dS->tile, cur.tile));
      ++checked_chip;
    }
  }
  REQUIRE(checked_chip > 0);
  // Before the backward, nothing of it is shown.
  s.seek(tr.backward_first_step);
  REQUIRE_FALSE(gui::backward_chip(s.run->trace, s.index()).any());
  REQUIRE_FALSE(gui::in_backward(s.run->trace, s.index()));
}

}  // namespace

TEST_CASE("the backward preset opens at the first backward step and agrees with core's Cursor", "[gui][backward]") {
  gui::AppState s;
  gui::prepare_state(s, preset_options("backward"));
  const gui::Preset p = gui::load_preset(gui::preset_path("backward", FLASHSTEP_ASSET_DIR));
  REQUIRE(p.backward);
  REQUIRE(p.start_backward);
  REQUIRE(s.run->backward);
  REQUIRE(s.form.backward);
  const Trace tr = core_backward_trace(p.spec);
  REQUIRE(s.index() == tr.backward_first_step + 1);
  REQUIRE(std::string(line_label(s.cursor->current()->line)) == "Alg4 L5");
  const nlohmann::json d = gui::state_to_json(s);
  REQUIRE(d["backward"]["in_backward"].get<bool>());
  REQUIRE(d["line"].get<std::string>() == "Alg4 L5");
  REQUIRE_FALSE(d["hbm"]["dQ"].is_null());  // L5 writes dQ = dK = dV = 0
  require_backward_agrees(s, tr);
}

TEST_CASE("the editor's backward checkbox adds the backward to fa1, fa2 and standard on ragged masked problems",
          "[gui][backward]") {
  const std::string sched = GENERATE("fa1", "fa2", "standard");
  const std::string mask = GENERATE(std::string(""), std::string("set causal 1; "), std::string("set window 2 1; set kvlen 6; "));
  INFO(sched << " " << mask);
  gui::AppState s;
  gui::prepare_state(s, preset_options("tiny", "set nq 11; set nk 7; set d 3; set M 40; set seed 7; set schedule " +
                                                   sched + "; " + mask + "apply"));
  REQUIRE_FALSE(s.run->trace.has_backward);
  const size_t forward_steps = s.steps();
  s.run_script("set backward 1");
  REQUIRE(s.form.error.empty());
  REQUIRE_THAT(s.form.preview, Contains("steps"));
  s.run_script("apply");
  REQUIRE(s.apply_error.empty());
  REQUIRE(s.run->backward);
  REQUIRE(s.run->trace.backward_first_step == forward_steps);
  REQUIRE(s.steps() > forward_steps);
  const Trace tr = core_backward_trace(s.run->spec);
  require_backward_agrees(s, tr);
  // Each phase's traffic, for every schedule: the closed form exactly without a mask, at most
  // it with one (skipped blocks move nothing).
  const Problem& p = tr.problem;
  for (const gui::ScheduleRun& r : s.run->runs) {
    INFO("column " << schedule_name(r.schedule));
    if (!has_backward(schedule_info(r.schedule))) {  // forward only (decode): its column has no backward
      CHECK_FALSE(r.ok);
      CHECK(r.not_applicable);  // a dim note in the panel, not an error
      CHECK(r.error.find("no backward pass") != std::string::npos);
      continue;
    }
    REQUIRE(r.ok);
    CHECK_FALSE(r.not_applicable);
    const TrafficForm f = schedule_backward_traffic(r.schedule, p.nq, p.nk, p.d, tr.tiling.Tr, tr.tiling.Tc);
    REQUIRE(r.backward_form.read_bytes(4) == f.read_bytes(4));
    REQUIRE(r.forward_totals.hbm_read_bytes + r.backward_totals.hbm_read_bytes == r.totals.hbm_read_bytes);
    REQUIRE(r.forward_totals.hbm_write_bytes + r.backward_totals.hbm_write_bytes == r.totals.hbm_write_bytes);
    REQUIRE(r.backward_totals.hbm_read_bytes > 0);
    if (mask.empty()) {
      REQUIRE(r.backward_totals.hbm_read_bytes == f.read_bytes(4));
      REQUIRE(r.backward_totals.hbm_write_bytes == f.write_bytes(4));
      REQUIRE(r.totals.hbm_read_bytes + r.totals.hbm_write_bytes == gui::fwd_bwd_form_bytes(r, Dtype::fp32));
    } else {
      REQUIRE(r.backward_totals.hbm_read_bytes <= f.read_bytes(4));
    }
  }
  // Unticked again: the next run is the forward alone.
  s.run_script("set backward 0; apply");
  REQUIRE_FALSE(s.run->trace.has_backward);
  REQUIRE(s.steps() == forward_steps);
}

TEST_CASE("gui --backward adds the backward to a preset and opens at its first step", "[gui][backward]") {
  gui::GuiOptions o = preset_options("fa1-vs-fa2");
  o.backward = true;
  gui::AppState s;
  gui::prepare_state(s, o);
  REQUIRE(s.run->backward);
  REQUIRE(s.preset_name == "fa1-vs-fa2");
  REQUIRE(s.index() == s.run->trace.backward_first_step + 1);
  REQUIRE(std::string(line_label(s.cursor->current()->line)) == "FA2b L3");
}

TEST_CASE("the Pipeline view models the pass the run steps", "[gui][backward]") {
  gui::AppState s;
  gui::prepare_state(s, preset_options("tiny"));
  CHECK_FALSE(s.pipeline.backward);
  gui::GuiOptions o = preset_options("tiny");
  o.backward = true;
  gui::AppState b;
  gui::prepare_state(b, o);
  CHECK(b.pipeline.backward);
  CHECK(b.pipeline.backward_prediction.ms > 0);  // the backward's model, built
  // a run without the backward turns it back; the user's choice stands while the pass is the same
  b.load_preset("tiny");
  CHECK_FALSE(b.pipeline.backward);
  b.pipeline.backward = true;
  b.load_preset("lesson");
  CHECK(b.pipeline.backward);
}

TEST_CASE("the Figure 2 row: forward + backward bytes from the closed forms on gpt2-medium", "[gui][backward]") {
  gui::AppState s;
  gui::prepare_state(s, preset_options("gpt2-medium"));
  const Problem& p = s.run->trace.problem;
  const Tiling& t = s.run->trace.tiling;
  int64_t bytes[3];
  for (int c = 0; c < 3; ++c) {
    const gui::ScheduleRun& r = s.run->runs[c];
    const TrafficForm f = schedule_traffic(r.schedule, p.nq, p.nk, p.d, t.Tr, t.Tc);
    const TrafficForm b = schedule_backward_traffic(r.schedule, p.nq, p.nk, p.d, t.Tr, t.Tc);
    bytes[c] = gui::fwd_bwd_form_bytes(r, p.dtype);
    REQUIRE(bytes[c] == f.read_bytes(4) + f.write_bytes(4) + b.read_bytes(4) + b.write_bytes(4));
    // The forward alone ran: its simulated bytes are the forward's closed form.
    REQUIRE(r.forward_totals.hbm_read_bytes == f.read_bytes(4));
  }
  // Figure 2's point, at this M (Tc = 16 passes of the tiled backwards over Q, O, dO, dQ):
  // standard attention moves the most bytes, FA2's order the fewest.
  INFO("fa1 " << bytes[0] << ", fa2 " << bytes[1] << ", standard " << bytes[2]);
  REQUIRE(bytes[2] > bytes[0]);
  REQUIRE(bytes[0] > bytes[1]);
  const nlohmann::json d = gui::state_to_json(s);
  REQUIRE(d["runs"]["standard"]["fwd_bwd_form_bytes"].get<int64_t>() == bytes[2]);
}

TEST_CASE("the Figure 2 row is n/a for a schedule or a type without a backward", "[gui][backward]") {
  // Decode has no backward pass, and no schedule has one in FP8: the row has nothing to add up
  // there, while the schedules with a backward keep their sum.
  gui::AppState s;
  gui::prepare_state(s, preset_options("decode"));
  nlohmann::json d = gui::state_to_json(s);
  REQUIRE(d["runs"]["decode"]["fwd_bwd_form_bytes"].is_null());
  REQUIRE(d["runs"]["fa2"]["fwd_bwd_form_bytes"].get<int64_t>() > 0);
  for (const gui::ScheduleRun& r : s.run->runs)
    REQUIRE((gui::fwd_bwd_form_bytes(r, Dtype::bf16) < 0) == (r.schedule == Schedule::decode));
  gui::AppState f;
  gui::prepare_state(f, preset_options("fp8"));
  REQUIRE(f.run->trace.problem.dtype == Dtype::fp8);
  d = gui::state_to_json(f);
  for (const auto& [name, run] : d["runs"].items()) {
    INFO(name);
    REQUIRE(run["fwd_bwd_form_bytes"].is_null());
  }
}

TEST_CASE("preset start and backward keys are checked", "[gui][backward]") {
  auto parse = [](const std::string& text) { return gui::parse_preset(text, "t.json"); };
  REQUIRE(parse(R"({"start": 5})").start_step == 5);
  REQUIRE_FALSE(parse(R"({"problem": {"backward": false}})").backward);
  REQUIRE_THROWS_WITH(parse(R"({"start": "backward"})"), Contains("needs \"backward\": true"));
  REQUIRE_THROWS_WITH(parse(R"({"start": "middle"})"), Contains("start must be"));
  REQUIRE_THROWS_WITH(parse(R"({"start": -2})"), Contains("start"));
  REQUIRE_THROWS_WITH(parse(R"({"problem": {"backward": 3}})"), Contains("backward"));
  // A start past the end stops at the last step.
  gui::AppState s;
  s.asset_dir = FLASHSTEP_ASSET_DIR;
  const std::string path = out_path("late.json");
  {
    std::ofstream out(path);
    out << R"({"start": 100000, "problem": {"nq": 8, "nk": 8, "d": 4, "M": 64, "backward": true}})";
  }
  s.load_preset(path);
  REQUIRE(s.index() == s.steps());
}
