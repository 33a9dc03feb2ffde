// Algorithm 2's dropout on the CPU: the Philox generator, the same keep mask in every
// schedule, the reference, and the recorded keep masks in the trace-size estimate.
#include "core/philox.h"
#include "core/reference.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>

using namespace flashstep;

TEST_CASE("Philox 4x32-10 reproduces the Random123 known-answer vectors", "[dropout]") {
  const Philox4 zero = philox4x32_10(Philox4{{0, 0, 0, 0}}, 0, 0);
  CHECK(zero.v[0] == 0x6627e8d5u);
  CHECK(zero.v[1] == 0xe169c58du);
  CHECK(zero.v[2] == 0xbc57ac4cu);
  CHECK(zero.v[3] == 0x9b00dbd8u);
  const Philox4 ones = philox4x32_10(Philox4{{~0u, ~0u, ~0u, ~0u}}, ~0u, ~0u);
  CHECK(ones.v[0] == 0x408f276du);
  CHECK(ones.v[1] == 0x41c83b0eu);
  CHECK(ones.v[2] == 0xa20bc7c6u);
  CHECK(ones.v[3] == 0x6d5451fdu);
}

TEST_CASE("dropout draws the same mask in every schedule and matches the reference", "[dropout]") {
  ProblemSpec s;
  s.nq = 37; s.nk = 45; s.d = 8; s.M = 96; s.options.dropout = 0.3; s.seed = 2024;
  Mat first;
  for (Schedule sc : {Schedule::fa1, Schedule::fa2, Schedule::standard}) {
    s.schedule = sc;
    const Trace t = fstest::run_spec(s, true);
    const Reference ref = reference_attention(t.problem.Q, t.problem.K, t.problem.V, t.problem.scale,
                                              t.problem.mask, t.problem.dropout, t.problem.seed);
    CHECK(compare(t.O, ref.O).max_rel < 1e-5);
    CHECK(compare(t.lse, ref.lse).max_rel < 1e-5);  // lse ignores dropout
    if (first.size() == 0) first = t.O;
    else CHECK(compare(t.O, first.cast<double>()).max_rel < 1e-6);
    // The recorded keep masks drop about p of the entries.
    double kept = 0, total = 0;
    for (const Step& st : t.steps)
      if (st.dropout_keep.size()) {
        kept += st.dropout_keep.sum();
        total += double(st.dropout_keep.size());
      }
    REQUIRE(total == double(37 * 45));
    CHECK(1.0 - kept / total == Approx(0.3).margin(0.05));
  }
  // The same seed gives the same result; another seed another.
  s.schedule = Schedule::fa1;
  CHECK(fstest::run_spec(s, false).O == first);
  s.seed = 2025;
  CHECK(fstest::run_spec(s, false).O != first);
}

TEST_CASE("the trace-size estimate counts the recorded dropout keep masks", "[dropout][limits]") {
  ProblemSpec s;
  s.nq = 200; s.nk = 300; s.d = 16; s.M = 256; s.seed = 5;
  const size_t masks = size_t(s.nq * s.nk) * sizeof(float);  // one keep flag per score, as float
  for (Schedule sc : {Schedule::fa1, Schedule::fa2, Schedule::standard}) {
    CAPTURE(schedule_name(sc));
    s.schedule = sc;
    s.options.dropout = 0;
    const Trace plain = fstest::run_spec(s);
    s.options.dropout = 0.25;
    const Trace dropped = fstest::run_spec(s);
    // The keep masks are what dropout adds to a recording, and the estimate adds as much.
    CHECK(dropped.approx_bytes() - plain.approx_bytes() == masks);
    CHECK(estimate_trace_bytes(dropped.problem, dropped.tiling) -
              estimate_trace_bytes(plain.problem, plain.tiling) == masks);
    const double ratio = double(estimate_trace_bytes(dropped.problem, dropped.tiling)) /
                         double(dropped.approx_bytes());
    CHECK(ratio > 0.8);
    CHECK(ratio < 1.5);
  }
}
