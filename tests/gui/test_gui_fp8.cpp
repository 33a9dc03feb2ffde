// The app's --dtype fp8 state (docs/fp8.md): the fp8 preset's Q, K, V as the tiles view shows
// them (e4m3 values times their block's scale, from core's memory model), and every schedule's
// FP8 bytes against the FP8 closed form, as the memory panel compares them.
#include "app/gui/app_state.h"
#include "app/gui/options.h"
#include "core/fp8.h"
#include "core/fp8_inputs.h"

#include <catch2/catch.hpp>

using namespace flashstep;

TEST_CASE("the fp8 preset: e4m3 tiles with their scales, and bytes equal to the FP8 closed form", "[gui][fp8]") {
  gui::AppState s;
  gui::GuiOptions o;
  o.preset = "fp8";
  gui::prepare_state(s, o);
  const gui::RunView& v = *s.run;
  const Problem& p = v.trace.problem;
  const Tiling& t = v.trace.tiling;
  REQUIRE(p.dtype == Dtype::fp8);
  REQUIRE(p.fp8_scale == Fp8Scale::per_block);
  REQUIRE(p.rotate);
  // Q, K rotated then quantised per block (Br rows, Bc rows); V quantised as given.
  const Mat inputs[3] = {rotated_input(p, p.Q), rotated_input(p, p.K), p.V};
  const int64_t block_rows[3] = {t.Br, t.Bc, t.Bc};
  for (int e = 0; e < 3; ++e) {
    CAPTURE(e);
    REQUIRE(v.fp8_values[e].rows() == inputs[e].rows());
    REQUIRE(v.fp8_scales[e].rows() == (inputs[e].rows() + block_rows[e] - 1) / block_rows[e]);
    for (int64_t r = 0; r < inputs[e].rows(); ++r) {
      const float scale = inputs[e].middleRows(r / block_rows[e] * block_rows[e],
                                               std::min(block_rows[e], inputs[e].rows() - r / block_rows[e] * block_rows[e]))
                              .cwiseAbs().maxCoeff() / 448.0f;
      REQUIRE(v.fp8_scale_of(e, r) == scale);
      for (int64_t c = 0; c < inputs[e].cols(); ++c) {
        REQUIRE(v.fp8_values[e](r, c) == round_e4m3(inputs[e](r, c) / scale));
        REQUIRE(v.fp8_stored[e](r, c) == v.fp8_values[e](r, c) * scale);
      }
    }
  }
  // Every schedule with an FP8 forward ran and moved the bytes of its closed form; the one
  // without (standard attention) is refused with a reason, not run on e4m3 inputs.
  int ran = 0;
  for (const gui::ScheduleRun& r : v.runs) {
    CAPTURE(schedule_name(r.schedule));
    if (r.ok) {
      ++ran;
      CHECK(r.forward_totals.hbm_read_bytes == r.form.read_bytes(1, 2));
      CHECK(r.forward_totals.hbm_write_bytes == r.form.write_bytes(1, 2));
      CHECK(r.o_err.max_abs > 0);
    } else {
      CHECK(r.not_applicable);  // a dim note in the panel, not an error
      CHECK(r.error.find("no ") != std::string::npos);
      CHECK(r.error.find("FP8") != std::string::npos);
    }
  }
  CHECK(ran == 3);
  // The scores steps carry the scales the tiles view prints.
  int scores = 0;
  for (const Step& st : v.trace.steps)
    if (line_role(st.line) == LineRole::scores) {
      ++scores;
      CHECK(st.fp8_scale_a == v.fp8_scale_of(0, st.i * t.Br));
      CHECK(st.fp8_scale_b == v.fp8_scale_of(1, st.j * t.Bc));
    }
  CHECK(scores > 0);
}
