// Flash-decoding (--schedule decode) on the CPU: the split ranges, the closed forms of its
// traffic and steps, S = 1 against fa2, the float64 reference, masks, dropout and storage types.
#include "core/closed_form.h"
#include "core/schedules/decode/decode.h"
#include "core/reference.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace flashstep;

namespace {
ProblemSpec decode_spec(int64_t nq, int64_t nk, int64_t d, int64_t M, int64_t br, int64_t bc, int64_t S,
                        uint64_t seed) {
  ProblemSpec s;
  s.nq = nq; s.nk = nk; s.d = d; s.M = M; s.br = br; s.bc = bc; s.seed = seed;
  s.schedule = Schedule::decode;
  s.splits = S;
  return s;
}
bool all_finite(const Mat& m) { return m.allFinite(); }
}  // namespace

TEST_CASE("split ranges cover the K/V blocks once, contiguously, the first Tc mod S one longer", "[decode]") {
  for (int64_t Tc : {1, 2, 7, 64, 97})
    for (int64_t S = 1; S <= Tc; ++S) {
      int64_t next = 0;
      for (int64_t s = 0; s < S; ++s) {
        const SplitRange r = split_range(Tc, S, s);
        CAPTURE(Tc, S, s);
        REQUIRE(r.j0 == next);
        REQUIRE(r.j1 - r.j0 == Tc / S + (s < Tc % S ? 1 : 0));
        next = r.j1;
      }
      REQUIRE(next == Tc);
    }
}

TEST_CASE("the default S fills the SMs and is 1 when the heads already do", "[decode]") {
  CHECK(default_splits(264, 64, 132) == 1);   // 264 blocks fill 2 x 132 slots
  CHECK(default_splits(256, 64, 132) == 1);   // 97% of the slots: no split
  const int64_t S = default_splits(32, 64, 132);
  CHECK(S > 1);
  CHECK(32 * S <= 2 * 132);                   // one wave ...
  CHECK(32 * S >= 0.85 * 2 * 132 * 0.97);     // ... at least about 85% full
  CHECK(default_splits(1, 3, 132) == 3);      // never more splits than K/V blocks
  CHECK(default_splits(1, 1, 132) == 1);
}

TEST_CASE("decode traffic and steps equal their closed forms exactly", "[decode][traffic]") {
  struct Size { int64_t nq, nk, d, M, br, bc; };
  const Size sizes[] = {{1, 4096, 16, 1024, 0, 0}, {1, 97, 8, 256, 0, 0},   {3, 130, 12, 600, 0, 0},
                        {77, 130, 40, 2048, 0, 0}, {50, 70, 12, 4096, 7, 9}, {130, 77, 8, 100, 0, 0},
                        {1, 1, 4, 16, 0, 0}};
  uint64_t seed = 7;
  for (const Size& z : sizes) {
    const Tiling t = make_tiling(z.nq, z.nk, z.d, z.M, z.br, z.bc);
    for (int64_t S : {int64_t(1), int64_t(2), int64_t(3), (t.Tc + 1) / 2, t.Tc}) {
      if (S > t.Tc) continue;  // Nk = 1 has one block
      CAPTURE(z.nq, z.nk, z.d, z.M, z.br, z.bc, S, t.Tc);
      const Trace tr = fstest::run_spec(decode_spec(z.nq, z.nk, z.d, z.M, z.br, z.bc, S, ++seed), true);
      const TrafficForm f = decode_traffic(z.nq, z.nk, z.d, t.Tr, S);
      CHECK(tr.totals.hbm_read_bytes == 4 * f.read_elems);
      CHECK(tr.totals.hbm_write_bytes == 4 * f.write_elems);
      CHECK(tr.totals.steps == decode_steps(t, S));
      CHECK(int64_t(tr.steps.size()) == tr.totals.steps);
      CHECK(tr.totals.traffic.written[int(Tensor::Op)] == (S > 1 ? 4 * S * z.nq * z.d : 0));
      CHECK(tr.totals.traffic.read[int(Tensor::Lp)] == (S > 1 ? 4 * S * z.nq : 0));
      // the fast path moves the same bytes
      const Trace fast = fstest::run_spec(decode_spec(z.nq, z.nk, z.d, z.M, z.br, z.bc, S, seed), false);
      CHECK(fast.totals.hbm_read_bytes == tr.totals.hbm_read_bytes);
      CHECK(fast.totals.steps == tr.totals.steps);
      CHECK((fast.O.array() == tr.O.array()).all());
      const Reference ref = reference_attention(tr.problem.Q, tr.problem.K, tr.problem.V, tr.problem.scale);
      CHECK(compare(tr.O, ref.O).max_rel < 1e-5);
      CHECK(compare(tr.lse, ref.lse).max_rel < 1e-5);
    }
  }
}

TEST_CASE("16-bit storage: Q, K, V, O at the stored size, partials and lse at 4 bytes", "[decode][traffic][dtype]") {
  const auto dtype = GENERATE(Dtype::fp16, Dtype::bf16);
  ProblemSpec s = decode_spec(2, 300, 16, 512, 0, 0, 4, 41);
  s.options.dtype = dtype;
  const Trace t = fstest::run_spec(s, true);
  const TrafficForm f = decode_traffic(2, 300, 16, t.tiling.Tr, 4);
  CHECK(t.totals.hbm_read_bytes == f.read_bytes(2));
  CHECK(t.totals.hbm_write_bytes == f.write_bytes(2));
  for (int64_t k = 0; k < t.O.size(); ++k) REQUIRE(round_to(dtype, t.O.data()[k]) == t.O.data()[k]);
  const Reference ref = reference_attention(t.problem.Q, t.problem.K, t.problem.V, t.problem.scale);
  const double err = compare(t.O, ref.O).max_rel;
  CHECK(err > 1e-5);
  CHECK(err < (dtype == Dtype::fp16 ? 4e-3 : 3e-2));
}

TEST_CASE("decode with S = 1 is fa2 step for step and bit for bit", "[decode]") {
  const bool causal = GENERATE(false, true);
  const auto dtype = GENERATE(Dtype::fp32, Dtype::bf16);
  ProblemSpec s = decode_spec(37, 210, 16, 512, 0, 0, 1, 5);
  s.options.mask.causal = causal;
  s.options.dtype = dtype;
  s.options.dropout = 0.2;
  const Trace d = fstest::run_spec(s, true);
  s.schedule = Schedule::fa2;
  s.splits = 0;
  const Trace f = fstest::run_spec(s, true);
  REQUIRE(d.steps.size() == f.steps.size());
  for (size_t k = 0; k < d.steps.size(); ++k) {
    REQUIRE(d.steps[k].line == f.steps[k].line);
    REQUIRE(d.steps[k].i == f.steps[k].i);
    REQUIRE(d.steps[k].j == f.steps[k].j);
    REQUIRE(d.steps[k].hbm_read_total == f.steps[k].hbm_read_total);
  }
  CHECK((d.O.array() == f.O.array()).all());
  CHECK((d.lse.array() == f.lse.array() || (d.lse.array().isInf() && f.lse.array().isInf())).all());
  CHECK(d.totals.hbm_write_bytes == f.totals.hbm_write_bytes);
}

TEST_CASE("with masks the closed form is an upper bound and the result matches float64", "[decode][masks]") {
  struct Case { bool causal; int64_t wl, wr, kv_len; };
  const Case cases[] = {{true, -1, -1, -1}, {false, 20, 0, -1}, {false, -1, -1, 100}, {true, 50, -1, 170},
                        {false, -1, -1, 0}};
  for (const Case& c : cases)
    for (int64_t nq : {1, 5, 64}) {
      const Tiling t = make_tiling(nq, 200, 8, 256, 0, 0);
      for (int64_t S : {int64_t(2), int64_t(5), t.Tc}) {
        CAPTURE(c.causal, c.wl, c.wr, c.kv_len, nq, S);
        ProblemSpec s = decode_spec(nq, 200, 8, 256, 0, 0, S, 100 + nq + S);
        s.options.mask.causal = c.causal;
        s.options.mask.window_left = c.wl;
        s.options.mask.window_right = c.wr;
        s.options.mask.kv_len = c.kv_len;
        const Trace tr = fstest::run_spec(s, true);
        const TrafficForm f = decode_traffic(nq, 200, 8, t.Tr, S);
        CHECK(tr.totals.hbm_read_bytes <= 4 * f.read_elems);
        CHECK(tr.totals.hbm_write_bytes == 4 * f.write_elems);  // every partial is written
        CHECK(tr.totals.steps <= decode_steps(t, S));
        REQUIRE(all_finite(tr.O));
        for (int64_t r = 0; r < tr.lse.size(); ++r) REQUIRE(!std::isnan(tr.lse(r)));
        const Reference ref = reference_attention(tr.problem.Q, tr.problem.K, tr.problem.V, tr.problem.scale,
                                                  tr.problem.mask);
        CHECK(compare(tr.O, ref.O).max_abs < 1e-5 * std::max(1.0, ref.O.cwiseAbs().maxCoeff()));
        for (int64_t r = 0; r < tr.lse.size(); ++r) {
          if (std::isinf(ref.lse(r))) CHECK(tr.lse(r) == -INFINITY);
          else CHECK(std::abs(tr.lse(r) - ref.lse(r)) < 1e-5 * std::max(1.0, std::abs(ref.lse(r))));
        }
      }
    }
}

TEST_CASE("a split that keeps no key of a row writes lse = -inf, which the combine ignores", "[decode][masks]") {
  // Nq = 1, Nk = 256 in 8 blocks of 32, 4 splits of 64 keys, a window of the last 41 keys
  // (215-255): splits 1-3 (keys 0-191) keep no key of the row.
  ProblemSpec s = decode_spec(1, 256, 8, 1024, 0, 32, 4, 9);
  s.options.mask.window_left = 40;
  s.options.mask.window_right = 0;
  const Trace tr = fstest::run_spec(s, true);
  REQUIRE(tr.tiling.Tc == 8);
  int empty_partials = 0;
  const Step* last_l14 = nullptr;
  for (const Step& st : tr.steps) {
    if (st.line == Line::FD_L14) last_l14 = &st;
    if (st.line == Line::FD_L18) {
      REQUIRE(st.alpha.size() == 1);
      REQUIRE(std::isfinite(st.alpha(0)));
      if (st.m_old(0) == -INFINITY) {
        ++empty_partials;
        CHECK(st.alpha(0) == 0.0f);  // weight 0, not e^(-inf - lse)= NaN
      }
    }
  }
  REQUIRE(last_l14 != nullptr);
  CHECK(empty_partials == 3);
  const Reference ref = reference_attention(tr.problem.Q, tr.problem.K, tr.problem.V, tr.problem.scale, tr.problem.mask);
  CHECK(compare(tr.O, ref.O).max_rel < 1e-5);
  CHECK(compare(tr.lse, ref.lse).max_rel < 1e-5);

  // Every key masked (key length 0): every split empty, O = 0, lse = -inf, no NaN.
  ProblemSpec z = decode_spec(3, 256, 8, 1024, 0, 32, 4, 9);
  z.options.mask.kv_len = 0;
  const Trace tz = fstest::run_spec(z, true);
  CHECK((tz.O.array() == 0.0f).all());
  for (int64_t r = 0; r < 3; ++r) CHECK(tz.lse(r) == -INFINITY);
}

TEST_CASE("decode draws fa2's dropout mask and matches the float64 reference", "[decode][dropout]") {
  ProblemSpec s = decode_spec(6, 150, 8, 256, 0, 0, 3, 77);
  s.options.dropout = 0.3;
  const Trace d = fstest::run_spec(s, true);
  const Reference ref = reference_attention(d.problem.Q, d.problem.K, d.problem.V, d.problem.scale, Mask{},
                                            0.3f, d.problem.seed);
  CHECK(compare(d.O, ref.O).max_rel < 1e-5);
  CHECK(compare(d.lse, ref.lse).max_rel < 1e-5);
}

TEST_CASE("decode's bad input: --splits out of range or on another schedule, --backward", "[decode][cli]") {
  CHECK_THROWS_WITH(make_problem(decode_spec(1, 100, 8, 256, 0, 0, 0 + 100, 1)),
                    Catch::Contains("out of range 1..Tc"));
  CHECK_THROWS_WITH(make_problem(decode_spec(1, 100, 8, 256, 0, 0, -2, 1)), Catch::Contains("--splits"));
  ProblemSpec f = decode_spec(1, 100, 8, 256, 0, 0, 2, 1);
  f.schedule = Schedule::fa2;
  CHECK_THROWS_WITH(make_problem(f), Catch::Contains("--splits is for --schedule decode"));
  const Problem p = make_problem(decode_spec(4, 100, 8, 256, 0, 0, 2, 1));
  const Mat dO = Mat::Ones(4, 8);
  RunOptions opt;
  opt.dO = &dO;
  CHECK_THROWS_WITH(run_problem(p, make_tiling(p), opt), Catch::Contains("no backward"));
  // the default S: 1 <= S <= Tc
  const Problem q = make_problem(decode_spec(1, 4096, 16, 1024, 0, 0, 0, 1));
  CHECK(q.splits >= 2);
  CHECK(q.splits <= make_tiling(q).Tc);
}
