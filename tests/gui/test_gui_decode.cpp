// The app's flash-decoding state (app/gui/decode_state.h) against core's trace: the split each K/V
// block is coloured by (core/schedules/decode/decode.h's split_range), the step at which each
// partial row block reaches HBM, and the combine's rescale factors at every combine step of the
// decode preset and of a causal problem whose first rows a split keeps no key of.
#include "app/gui/app_state.h"
#include "app/gui/decode_state.h"
#include "app/gui/options.h"
#include "core/schedules/decode/decode.h"
#include "core/lines.h"
#include "core/run.h"

#include <catch2/catch.hpp>
#include <cmath>

using namespace flashstep;

namespace {

Trace decode_trace(int64_t nq, int64_t nk, int64_t bc, int64_t splits, bool causal, uint64_t seed) {
  ProblemSpec s;
  s.nq = nq;
  s.nk = nk;
  s.d = 5;
  s.br = 3;
  s.bc = bc;
  s.schedule = Schedule::decode;
  s.splits = splits;
  s.seed = seed;
  s.options.mask.causal = causal;
  RunOptions opt;
  opt.record = true;
  return run_spec(s, opt);
}

// Every combine step's factors as the app shows them, against e^(lse^(s) - lse) from the HBM
// the core's Cursor rebuilds (lse^(s) as phase 1 wrote it, lse the final L).
void check_factors(const Trace& tr) {
  REQUIRE(gui::has_partials(tr));
  const int64_t S = tr.tiling.S, nq = tr.problem.nq;
  Cursor end(tr);
  end.run_to_end();
  const Mat Lp = end.hbm(Tensor::Lp);
  Cursor c(tr);
  int64_t combine_steps = 0, zero_weights = 0;
  for (size_t k = 1; k <= tr.steps.size(); ++k) {
    c.seek(k);
    const Step& st = tr.steps[k - 1];
    const gui::CombineFactors f = gui::combine_factors(tr, c);
    if (line_role(st.line) != LineRole::combine) {
      CHECK(f.i < 0);
      continue;
    }
    ++combine_steps;
    REQUIRE(f.i == st.i);
    REQUIRE(f.S == S);
    CHECK(f.current_split == st.split);
    for (int64_t r = 0; r < f.rows; ++r) {
      const int64_t row = f.row0 + r;
      CHECK(f.lse(r) == tr.lse(row));  // lse_i of FD L17, the final L
      double sum = 0;
      for (int64_t s = 0; s < S; ++s) {
        const float ls = Lp(s * nq + row, 0);
        CHECK((f.lse_split(r, s) == ls || (std::isinf(ls) && f.lse_split(r, s) == ls)));
        const bool added = st.split >= 0 && s <= st.split;  // FD L18 of s has run
        if (!added) {
          CHECK(std::isnan(f.factor(r, s)));
          continue;
        }
        const double want = std::isinf(ls) ? 0.0 : std::exp(double(ls) - double(tr.lse(row)));
        CHECK(f.factor(r, s) == Approx(want).epsilon(1e-5).margin(1e-7));
        CHECK_FALSE(std::isnan(f.factor(r, s)));
        if (std::isinf(ls)) {
          ++zero_weights;
          CHECK(f.factor(r, s) == 0);
        }
        sum += f.factor(r, s);
      }
      if (st.split == S - 1 && std::isfinite(tr.lse(row))) CHECK(sum == Approx(1.0).epsilon(1e-5));
    }
  }
  CHECK(combine_steps == tr.tiling.Tr * (S + 1));  // FD L17 and one FD L18 per split, per Q block
  if (tr.problem.mask.causal) CHECK(zero_weights > 0);
}

}  // namespace

TEST_CASE("decode's K/V blocks are coloured by the split split_range gives them", "[gui][decode]") {
  const int64_t nk = GENERATE(13, 40, 64);
  const int64_t bc = GENERATE(1, 4, 7);
  const int64_t Tc = (nk + bc - 1) / bc;
  const int64_t S = GENERATE_COPY(filter([=](int64_t x) { return x <= Tc; }, values<int64_t>({2, 3, 5, 13})));
  CAPTURE(nk, bc, S);
  const Trace tr = decode_trace(2, nk, bc, S, false, 3);
  REQUIRE(tr.tiling.Tc == Tc);
  std::vector<int64_t> blocks(size_t(S), 0);
  int64_t prev = 0;
  for (int64_t j = 0; j < Tc; ++j) {
    const int64_t s = gui::split_of_block(tr, j);
    REQUIRE(s >= 0);
    REQUIRE(s < S);
    const SplitRange r = split_range(Tc, S, s);
    CHECK(j >= r.j0);
    CHECK(j < r.j1);
    CHECK((s == prev || s == prev + 1));  // contiguous, in order
    prev = s;
    ++blocks[size_t(s)];
  }
  for (int64_t s = 0; s < S; ++s) {  // every split has Tc / S or Tc / S + 1 blocks, the longer first
    CHECK(blocks[size_t(s)] == Tc / S + (s < Tc % S ? 1 : 0));
  }
  CHECK(gui::split_of_block(tr, -1) == -1);
  CHECK(gui::split_of_block(tr, Tc) == -1);
  // One split (fa2's steps) and fa2 itself have no split colours.
  CHECK(gui::split_of_block(decode_trace(2, nk, bc, 1, false, 3), 0) == -1);
  CHECK_FALSE(gui::has_partials(decode_trace(2, nk, bc, 1, false, 3)));
}

TEST_CASE("the partials' row blocks reach HBM at their FD L13, L14 steps", "[gui][decode]") {
  const Trace tr = decode_trace(7, 31, 4, 3, true, 8);
  const gui::PartialWrites w = gui::partial_writes(tr);
  REQUIRE(w.S == 3);
  REQUIRE(w.Tr == tr.tiling.Tr);
  Cursor end(tr);
  end.run_to_end();
  for (int64_t s = 0; s < w.S; ++s)
    for (int64_t i = 0; i < w.Tr; ++i) {
      const int64_t o = w.o_step[size_t(s * w.Tr + i)], l = w.lse_step[size_t(s * w.Tr + i)];
      REQUIRE(o >= 0);
      REQUIRE(l > o);
      CHECK(line_role(tr.steps[size_t(o)].line) == LineRole::write_o);
      CHECK(tr.steps[size_t(o)].split == s);
      Cursor c(tr);
      c.seek(size_t(l) + 1);  // both written
      const int64_t r0 = s * tr.problem.nq + i * tr.tiling.Br, br = tr.tiling.rows_in_q_block(i, tr.problem.nq);
      CHECK((c.hbm(Tensor::Op).middleRows(r0, br).array() == end.hbm(Tensor::Op).middleRows(r0, br).array()).all());
      const auto got = c.hbm(Tensor::Lp).middleRows(r0, br).array(), want = end.hbm(Tensor::Lp).middleRows(r0, br).array();
      CHECK((got == want).all());
    }
}

TEST_CASE("the combine's factors the app shows are e^(lse^(s) - lse) of core's trace", "[gui][decode]") {
  SECTION("a causal problem: the first rows have lse^(s) = -inf in the last splits") {
    check_factors(decode_trace(7, 31, 2, 8, true, 21));  // the last split: keys 28-30, rows 0-3 see up to 27
  }
  SECTION("the decode preset, opened and stepped to its combine as the app does") {
    gui::AppState s;
    gui::GuiOptions o;
    o.preset = "decode";
    gui::prepare_state(s, o);
    const Trace& tr = s.run->trace;
    REQUIRE(gui::has_partials(tr));
    // The app's cursor at the last FD L18 of the last Q block: every factor shown, summing to 1.
    size_t last = 0;
    for (size_t k = 0; k < tr.steps.size(); ++k)
      if (line_role(tr.steps[k].line) == LineRole::combine) last = k + 1;
    s.seek(last);
    const gui::CombineFactors f = gui::combine_factors(tr, *s.cursor);
    REQUIRE(f.S == tr.tiling.S);
    CHECK(gui::combine_splits_at(tr, *s.cursor) == f.S);  // the softmax panel asks for S table rows
    s.seek(1);
    CHECK(gui::combine_splits_at(tr, *s.cursor) == 0);  // a split's first step: no combine table
    s.seek(last);
    REQUIRE(f.current_split == f.S - 1);
    double sum = 0;
    for (int64_t sp = 0; sp < f.S; ++sp) sum += f.factor(0, sp);
    CHECK(sum == Approx(1.0).epsilon(1e-5));
    check_factors(tr);
  }
}
