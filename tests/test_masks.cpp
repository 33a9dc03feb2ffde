// Algorithm 2's masks (causal, sliding window, key padding) on the CPU: golden outputs, the
// masked float64 reference, fully masked rows, and the traffic of skipped blocks.
#include "core/closed_form.h"
#include "core/reference.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>

using namespace flashstep;

namespace {

// HBM elements moved, counted block by block from the mask: what skipping must give.
TrafficForm expected_traffic(const Problem& p, const Tiling& t) {
  TrafficForm f;
  const int64_t d = p.d;
  if (p.schedule == Schedule::fa2) {
    f.read_elems = p.nq * d;
    f.write_elems = p.nq * d + p.nq;
  } else {
    f.write_elems = p.nq * (d + 2);
  }
  for (int64_t j = 0; j < t.Tc; ++j) {
    const int64_t bc = t.rows_in_kv_block(j, p.nk);
    bool needed = false;
    for (int64_t i = 0; i < t.Tr; ++i) {
      const int64_t br = t.rows_in_q_block(i, p.nq);
      if (p.mask.classify(i * t.Br, i * t.Br + br, j * t.Bc, j * t.Bc + bc, p.nk) == Mask::Block::empty) continue;
      needed = true;
      if (p.schedule == Schedule::fa2) {
        f.read_elems += 2 * bc * d;
      } else {
        f.read_elems += br * (2 * d + 2);
        f.write_elems += br * (d + 2);
      }
    }
    if (needed && p.schedule == Schedule::fa1) f.read_elems += 2 * bc * d;
  }
  return f;
}

}  // namespace

TEST_CASE("the causal golden case matches for every schedule and block size", "[mask][golden]") {
  const auto sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  const auto blocks = GENERATE(std::pair<int64_t, int64_t>{0, 0}, std::pair<int64_t, int64_t>{16, 16},
                               std::pair<int64_t, int64_t>{5, 11}, std::pair<int64_t, int64_t>{32, 7});
  CAPTURE(schedule_name(sched), blocks.first, blocks.second);
  ProblemSpec s = fstest::golden_spec("n128_d64_causal", 0.125);
  s.options.mask.causal = true;
  s.schedule = sched;
  s.M = 16384;
  s.br = blocks.first;
  s.bc = blocks.second;
  const Trace t = fstest::run_spec(s, true);
  CHECK(compare(t.O, read_npy_matrix(fstest::golden("n128_d64_causal.o.npy")).cast<double>()).max_rel < 1e-5);
  const NpyArray lse = read_npy(fstest::golden("n128_d64_causal.lse.npy"));
  CHECK(compare(t.lse, Eigen::Map<const Vec>(lse.data.data(), 128).cast<double>()).max_rel < 1e-5);
  if (sched != Schedule::standard) {
    // Blocks above the diagonal are skipped: no traffic, no FLOPs, and the totals say so.
    size_t skipped = 0;
    for (const Step& st : t.steps)
      if (st.line == Line::A1_SKIP || st.line == Line::FA2F_SKIP) {
        ++skipped;
        CHECK(st.hbm_read == 0);
        CHECK(st.hbm_write == 0);
        CHECK(st.flops == 0);
      }
    CHECK(skipped > 0);
    const TrafficForm f = expected_traffic(t.problem, t.tiling);
    CHECK(t.totals.hbm_read_bytes == 4 * f.read_elems);
    CHECK(t.totals.hbm_write_bytes == 4 * f.write_elems);
  }
}

TEST_CASE("masks match the masked float64 reference on fresh inputs", "[mask]") {
  struct Case { int64_t nq, nk; bool causal; int64_t wl, wr, kv; };
  const Case cases[] = {{40, 40, true, -1, -1, -1},  {30, 70, true, -1, -1, -1},  {70, 30, true, -1, -1, -1},
                        {50, 50, false, 8, 3, -1},   {50, 50, true, 10, -1, -1},  {45, 60, false, -1, -1, 33},
                        {45, 60, true, 5, 0, 50},    {20, 20, false, 0, 0, -1},   {33, 17, false, -1, -1, 0}};
  const auto sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  static uint64_t seed = 777;
  for (const Case& c : cases) {
    ProblemSpec s;
    s.nq = c.nq; s.nk = c.nk; s.d = 8; s.M = 96; s.seed = ++seed;
    s.options.mask.causal = c.causal; s.options.mask.window_left = c.wl; s.options.mask.window_right = c.wr; s.options.mask.kv_len = c.kv;
    s.schedule = sched;
    CAPTURE(schedule_name(sched), c.nq, c.nk, c.causal, c.wl, c.wr, c.kv, s.seed);
    const Trace t = fstest::run_spec(s, true);
    const Reference ref = reference_attention(t.problem.Q, t.problem.K, t.problem.V, t.problem.scale, t.problem.mask);
    CHECK(t.O.allFinite());  // never NaN, also for rows that keep no key
    CHECK(compare(t.O, ref.O).max_rel < 1e-5);
    CHECK(compare(t.lse, ref.lse).max_rel < 1e-5);
    for (int64_t r = 0; r < c.nq; ++r)
      if (ref.lse(r) == -INFINITY) {  // a row whose keys are all masked: O = 0, lse = -inf
        CHECK(t.lse(r) == -INFINITY);
        CHECK(t.O.row(r).isZero(0));
      }
    if (sched != Schedule::standard) {
      const TrafficForm f = expected_traffic(t.problem, t.tiling);
      CHECK(t.totals.hbm_read_bytes == 4 * f.read_elems);
      CHECK(t.totals.hbm_write_bytes == 4 * f.write_elems);
    }
  }
}

TEST_CASE("causal with Nq greater than Nk leaves the first rows fully masked", "[mask]") {
  ProblemSpec s;
  s.nq = 12; s.nk = 5; s.d = 4; s.M = 64; s.options.mask.causal = true;  // offset -7: rows 0..6 keep nothing
  for (Schedule sc : {Schedule::fa1, Schedule::fa2, Schedule::standard}) {
    s.schedule = sc;
    const Trace t = fstest::run_spec(s, true);
    for (int64_t r = 0; r < 7; ++r) {
      CHECK(t.lse(r) == -INFINITY);
      CHECK(t.O.row(r).isZero(0));
    }
    for (int64_t r = 7; r < 12; ++r) CHECK(std::isfinite(t.lse(r)));
  }
}
