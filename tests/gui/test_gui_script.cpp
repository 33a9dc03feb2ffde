// The script's syntax (app/gui/script.h), in-process: every command is taken as written or the
// whole script is refused with one line, before any of it runs.
#include "app/gui/app_state.h"
#include "app/gui/preset.h"
#include "app/gui/script.h"
#include "core/pipeline_backward.h"

#include <catch2/catch.hpp>

using namespace flashstep;
using Catch::Matchers::Contains;

TEST_CASE("parse_script takes commands as written", "[gui][script]") {
  const auto c = gui::parse_script(" step 3 ;back; set window 4 0;set seed 18446744073709551615; course answer 1  a b ;;");
  REQUIRE(c.size() == 5);
  CHECK(c[0].verb == "step");
  CHECK(c[0].args == std::vector<std::string>{"3"});
  CHECK(c[1].args.empty());
  CHECK(c[2].args == std::vector<std::string>{"window", "4", "0"});
  CHECK(c[3].args == std::vector<std::string>{"seed", "18446744073709551615"});
  CHECK(c[4].args == std::vector<std::string>{"answer 1  a b "});  // the rest, whole
}

TEST_CASE("parse_script refuses what it would otherwise drop or round", "[gui][script]") {
  const std::pair<const char*, const char*> bad[] = {
      {"step 3\nstep 3\nfoo bar", "control character (code 10) at byte 6"},
      {"step 3\rstep 3", "control character (code 13)"},
      {"set nq 12.7", "script: set nq"},
      {"set d 0x40", "script: set d"},
      {"set window 4", "set window needs LEFT and RIGHT"},
      {"set nq 8 9", "set nq takes one value"},
      {"set seed 18446744073709551616", "out of range"},
      {"set seed -1", "script: set seed"},
      {"set dropout abc", "script: set dropout"},
      {"set colour 3", "set knows nq"},
      {"step 1 2", "'step' does not take '2'"},
      {"step -1", "step needs a count >= 0"},
      {"seek", "'seek' needs 1 value"},
      {"jump 1 x", "script: jump"},
      {"end now", "'end' does not take 'now'"},
      {"fly 3", "unknown action 'fly'"},
      {"pipeline", "'pipeline' needs 1 value"},
      {"pipeline sideways", "pipeline takes forward, backward"},
      {"pipeline backward 1", "pipeline backward takes no value"},
      {"pipeline d 96", "pipeline d takes one of 64 128 (got '96')"},
      {"pipeline n", "pipeline n takes one of 4096 16384 (got '')"},
      {"pipeline causal yes", "pipeline causal takes one of 0 1"},
      {"pipeline d 64 128", "'pipeline' does not take '128'"},
  };
  for (const auto& [text, expect] : bad) {
    CAPTURE(text);
    REQUIRE_THROWS_WITH(gui::parse_script(text), Contains(expect));
  }
}

TEST_CASE("a refused script runs none of its commands", "[gui][script]") {
  gui::AppState s;
  s.load_preset(gui::preset_path("tiny", FLASHSTEP_ASSET_DIR));
  REQUIRE(s.index() == 0);
  REQUIRE_THROWS_WITH(s.run_script("step 5; set nq 12.7"), Contains("script: set nq"));
  CHECK(s.index() == 0);  // the first command did not run either
  s.run_script("step 5; set nq 12");
  CHECK(s.index() == 5);
  CHECK(s.form.nq == 12);
}

TEST_CASE("the pipeline command sets the Pipeline view's buttons and reruns its model", "[gui][script]") {
  gui::AppState s;
  s.load_preset(gui::preset_path("tiny", FLASHSTEP_ASSET_DIR));
  s.run_script("pipeline backward; pipeline d 64; pipeline n 16384; pipeline causal 1");
  CHECK(s.pipeline.backward);
  CHECK(s.pipeline.d == 64);
  CHECK(s.pipeline.n == 16384);
  CHECK(s.pipeline.causal);
  // The model it drew is the backward's at that shape and the backward benchmark's B x H = 16 x 16:
  // 16384 / 128 K/V blocks of 256 heads, and the core's prediction for them.
  CHECK(s.pipeline.backward_prediction.blocks == 256 * 128);
  pipeline::Shape shape;
  shape.nq = shape.nk = 16384;
  shape.d = 64;
  shape.causal = true;
  shape.heads = 16 * 16;
  const pipeline::BackwardPrediction p = pipeline::predict_backward(shape, pipeline::Rates{});
  CHECK(s.pipeline.backward_prediction.ms == p.ms);
  CHECK(s.pipeline.timeline.segments.size() > 0);
  s.run_script("pipeline forward");
  CHECK_FALSE(s.pipeline.backward);
  CHECK(s.pipeline.prediction.ms > 0);
}

TEST_CASE("apply of a field the editor refuses, or of a run refused, is refused with the reason, and the run is kept", "[gui][script]") {
  gui::AppState s;
  s.load_preset(gui::preset_path("tiny", FLASHSTEP_ASSET_DIR));
  // Typed into the field: the editor shows its message, nothing is refused yet.
  s.run_script("step 7; set nq 0");
  REQUIRE_THAT(s.form.error, Contains("Nq must be at least 1"));
  REQUIRE_THROWS_WITH(s.run_script("apply"), "script: apply: " + s.form.error);
  CHECK(s.index() == 7);  // the old run, where it was
  CHECK(s.run->trace.problem.nq == 8);
  // A valid form whose run is refused: the window's "Not applied" reason.
  s.run_script("set nq 8; files /nonexistent/q.npy /nonexistent/k.npy /nonexistent/v.npy");
  REQUIRE(s.form.error.empty());
  REQUIRE_THROWS_WITH(s.run_script("apply"), Contains("script: apply: ") && Contains("/nonexistent/q.npy"));
  CHECK(s.index() == 7);
}
