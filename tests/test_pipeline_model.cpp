// The pipeline model of the Hopper forward kernel (core/pipeline_model.h): closed forms on
// configurations simple enough to add up by hand, orderings the model must respect whatever the
// rates (ping-pong never slower, nothing faster than the tensor cores), and the CLI's text.
#include "core/pipeline_model.h"
#include "core/types.h"
#include "tests/test_helpers.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <regex>

using namespace flashstep;
using namespace flashstep::pipeline;
using Catch::Matchers::WithinRel;

namespace {

// Loads that take no time: only the tensor cores and the softmax remain.
Rates free_loads(double wait = 0) {
  Rates r;
  r.l2_bytes_per_clk = 1e15;
  r.hbm_bytes_per_clk = 1e15;
  r.wait_clk = wait;
  return r;
}

double tensor_work(const Timeline& t) {
  double w = 0;
  for (const Segment& s : t.segments)
    if (s.unit == Unit::tensor) w += s.work;
  return w;
}

}  // namespace

TEST_CASE("pipeline model: one warpgroup adds up to the closed forms", "[pipeline]") {
  const int64_t d = GENERATE(64, 128);
  const int n = GENERATE(1, 2, 5, 17);
  const double wait = GENERATE(0.0, 150.0);
  const Rates rates = free_loads(wait);
  Rung r = rung(14, d);
  r.consumers = 1;
  const BlockCosts c = block_costs(r, d, rates);
  const double S = c.s_clk, P = c.softmax_clk + wait, O = c.o_clk;
  SECTION("no overlap: every block is S, softmax, O in a row") {
    REQUIRE_THAT(simulate(r, d, n, 1, rates).end_clk, WithinRel(n * (S + P + O), 1e-9));
  }
  SECTION("intra-warpgroup overlap: the softmax of block j runs beside O += P~ V of block j - 1") {
    r.producer = true;
    r.intra = true;
    const double closed = S + P + (n - 1) * (S + std::max(P, O)) + O;
    REQUIRE_THAT(simulate(r, d, n, 1, rates).end_clk, WithinRel(closed, 1e-9));
  }
  SECTION("two warpgroups in lockstep share both units: twice as long, the wait paid once") {
    r.consumers = 2;
    REQUIRE_THAT(simulate(r, d, n, 1, rates).end_clk, WithinRel(n * (2 * (S + c.softmax_clk + O) + wait), 1e-9));
  }
}

TEST_CASE("pipeline model: tensor cores in turn serve one product at a time", "[pipeline]") {
  Rates rates;
  rates.tensor_in_turn = true;
  for (int v : {13, 14, 15, 16})
    for (int64_t d : {64, 128}) {
      const Rung r = rung(v, d);
      const Timeline t = simulate(r, d, 6, r.ctas_per_sm, rates);
      std::vector<std::pair<double, double>> on;
      for (const Segment& s : t.segments)
        if (s.unit == Unit::tensor) on.push_back({s.start, s.end});
      std::sort(on.begin(), on.end());
      INFO("v" << v << " d " << d);
      for (size_t k = 1; k < on.size(); ++k) REQUIRE(on[k].first >= on[k - 1].second - 1e-6);
      // Each product ran at the full rate: its length is its work.
      for (const Segment& s : t.segments)
        if (s.unit == Unit::tensor) REQUIRE_THAT(s.end - s.start, WithinRel(s.work, 1e-9));
    }
}

TEST_CASE("pipeline model: the costs follow the rates", "[pipeline]") {
  const Rates rates;
  const BlockCosts c = block_costs(rung(16, 128), 128, rates);
  // 2 x 64 x 128 x 128 FLOPs at 4096 x 0.74 per clock; 64 x 129 exp2 at 16 per clock.
  REQUIRE_THAT(c.s_clk, WithinRel(2.0 * 64 * 128 * 128 / (4096 * 0.74), 1e-12));
  REQUIRE_THAT(c.exp_clk, WithinRel(64.0 * 129 / 16, 1e-12));
  REQUIRE(c.softmax_clk == std::max(c.exp_clk, c.issue_clk));
  // d = 64 halves the products, not the softmax: why d = 64 needs the overlap more.
  const BlockCosts c64 = block_costs(rung(16, 64), 64, rates);
  REQUIRE_THAT(c64.s_clk, WithinRel(c.s_clk / 2, 1e-12));
  REQUIRE(c64.exp_clk == c.exp_clk);
}

// Ping-pong can idle the tensor cores when a warpgroup's softmax (and wait) outlasts the other's
// turn: then it may lose to free sharing. When it fits, the tensor cores never wait for a turn.
TEST_CASE("pipeline model: ping-pong is never slower when the softmax fits in a turn; nothing beats the tensor cores", "[pipeline]") {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> u(0.3, 3.0);
  int fitting = 0;
  for (int trial = 0; trial < 60; ++trial) {
    Rates rates;
    rates.exp_per_clk *= u(rng);
    rates.tensor_efficiency = std::min(1.0, rates.tensor_efficiency * u(rng));
    rates.l2_bytes_per_clk *= u(rng);
    rates.wait_clk = 300 * (u(rng) - 0.3);
    const int64_t d = trial % 2 ? 64 : 128;
    const int n = 1 + int(u(rng) * 7);
    const Rung plain = rung(15, d), pp = rung(16, d);
    const BlockCosts c = block_costs(pp, d, rates);
    const bool fits = c.softmax_clk + rates.wait_clk <= c.s_clk + c.o_clk;
    fitting += fits;
    const Timeline a = simulate(plain, d, n, 1, rates), b = simulate(pp, d, n, 1, rates);
    INFO("trial " << trial << " d " << d << " n " << n << " exp " << rates.exp_per_clk << " wait " << rates.wait_clk);
    if (fits) REQUIRE(b.end_clk <= a.end_clk * (1 + 1e-9));
    for (const Rung& r : rungs(d)) {
      const Timeline t = simulate(r, d, n, r.ctas_per_sm, rates);
      REQUIRE(t.end_clk >= tensor_work(t) * (1 - 1e-9));
      REQUIRE(t.busy_clk[1] <= t.end_clk * (1 + 1e-9));
      for (const Segment& s : t.segments) REQUIRE(s.end >= s.start);
    }
    Shape s;
    s.d = d;
    s.nq = s.nk = 1024 + 512 * (trial % 5);
    s.causal = trial % 3 == 0;
    const Prediction pa = predict(plain, s, rates), pb = predict(pp, s, rates);
    if (fits) REQUIRE(pb.tflops >= pa.tflops * (1 - 1e-9));
    REQUIRE(pb.tflops <= pb.bound_tflops * (1 + 1e-9));
  }
  REQUIRE(fitting >= 5);  // the ordering was checked on enough draws
  // The H200's own rates fit at both d, with waits up to 150 clocks.
  for (int64_t d : {64, 128})
    for (double wait : {0.0, 150.0}) {
      Rates h200;
      h200.wait_clk = wait;
      const BlockCosts c = block_costs(rung(16, d), d, h200);
      REQUIRE(c.softmax_clk + wait <= c.s_clk + c.o_clk);
    }
}

// The rungs the model tells apart must be the kernels' (gpu/fa3_forward.cu): v17 is v15 with the
// overlap alone, v18 adds persistence, v19 three consumers.
TEST_CASE("pipeline model: v17-v19 are one change each from v15", "[pipeline]") {
  for (int64_t d : {64, 128}) {
    const Rung a = rung(15, d), b = rung(17, d), c = rung(18, d), e = rung(19, d);
    REQUIRE((b.intra && !a.intra && !b.pingpong && !b.persistent && b.Bc == a.Bc && b.consumers == 2));
    REQUIRE((c.intra && c.persistent && c.Bc == b.Bc && c.consumers == 2));
    REQUIRE((e.intra && !e.persistent && e.consumers == 3 && e.Br() == 192 && e.Bc == (d == 64 ? 128 : 64)));
    for (const Rung& r : {b, c, e}) REQUIRE(r.built);
  }
}

// v20 is v17 with a longer Bc alone (FlashAttention-3's 128 x 176 at d = 128, 128 x 192 at
// d = 64), v21 v18 with the same Bc.
TEST_CASE("pipeline model: v20 and v21 change only Bc from v17 and v18", "[pipeline]") {
  for (int64_t d : {64, 128}) {
    const Rung v17 = rung(17, d), v18 = rung(18, d), v20 = rung(20, d), v21 = rung(21, d);
    const int bc = d == 64 ? 192 : 176;
    REQUIRE((v20.intra && !v20.persistent && !v20.pingpong && v20.consumers == 2 && v20.Bc == bc));
    REQUIRE((v21.intra && v21.persistent && !v21.pingpong && v21.consumers == 2 && v21.Bc == bc));
    REQUIRE((v20.stages == v17.stages && v21.stages == v18.stages && v20.ctas_per_sm == v17.ctas_per_sm));
    REQUIRE((v20.built && v21.built));
  }
}

// v34 is v19 persistent (the d = 64 default), v43 v34 with a third K/V stage, v33 a third stage
// on v21 at d = 64 and on v22 at d = 128, as gpu/fa3_forward.cu builds them; in ladder order.
TEST_CASE("pipeline model: v33, v34 and v43 are one change each from the kernels they extend", "[pipeline]") {
  for (int64_t d : {64, 128}) {
    const Rung v19 = rung(19, d), v34 = rung(34, d), v43 = rung(43, d), v33 = rung(33, d);
    const Rung base33 = rung(d == 64 ? 21 : 22, d);
    REQUIRE((v34.persistent && !v19.persistent && v34.consumers == 3 && v34.Bc == v19.Bc && !v34.pingpong));
    REQUIRE((v34.stages == 2 && v43.stages == 3 && v43.persistent && v43.consumers == 3 && v43.Bc == v34.Bc));
    REQUIRE((v33.stages == 3 && base33.stages == 2 && v33.Bc == base33.Bc && v33.pingpong == base33.pingpong &&
             v33.persistent == base33.persistent && v33.consumers == base33.consumers));
    const std::vector<Rung> all = rungs(d);
    for (size_t k = 1; k < all.size(); ++k) REQUIRE(all[k - 1].variant < all[k].variant);
  }
}

// A persistent block runs its tiles back to back, each after the first shortened by the overlap
// of the previous tile's tail with its own prologue; the grid is min(tiles, SMs) blocks.
TEST_CASE("pipeline model: persistent blocks add up their tiles", "[pipeline]") {
  const int64_t d = GENERATE(64, 128);
  Rates rates;
  rates.sms = 2;
  const Rung p = rung(18, d);
  auto dur = [&](int n) { return simulate(p, d, n, 1, rates).end_clk; };
  auto edges = [&](int n) { return tile_edges(simulate(p, d, n, 1, rates)); };
  auto hidden = [&](int prev, int next) { return std::min(edges(prev).tail, edges(next).prologue); };
  SECTION("non-causal: equal tiles, 7 tiles on 2 blocks, the first takes 4") {
    Shape s;
    s.heads = 1;
    s.nq = 7 * 128;
    s.nk = 3 * 128 - 5;  // 3 K/V blocks per tile
    s.d = d;
    const Prediction q = predict(p, s, rates);
    REQUIRE(q.blocks == 7);
    REQUIRE_THAT(q.ms * rates.clock_ghz * 1e6, WithinRel(4 * dur(3) - 3 * hidden(3, 3), 1e-9));
    REQUIRE(hidden(3, 3) > 0);  // the overlap exists: the next tile's Q_i and K_0 under the last O
    // One block per tile, two slots: four waves of whole tiles.
    const Prediction one = predict(rung(17, d), s, rates);
    REQUIRE_THAT(one.ms * rates.clock_ghz * 1e6, WithinRel(4 * dur(3), 1e-9));
  }
  SECTION("causal: longest first, the odd round reversed") {
    Shape s;
    s.heads = 1;
    s.nq = s.nk = 3 * 128;
    s.d = d;
    s.causal = true;
    // Tiles in order: Q blocks 2, 1, 0 keeping 3, 2, 1 K/V blocks. Round 0: block 0 takes tile
    // 0, block 1 tile 1; round 1 reversed: block 1 takes tile 2, block 0's tile 3 is past the end.
    const Prediction q = predict(p, s, rates);
    const double expect = std::max(dur(3), dur(2) + dur(1) - hidden(2, 1));
    REQUIRE_THAT(q.ms * rates.clock_ghz * 1e6, WithinRel(expect, 1e-9));
  }
}

TEST_CASE("pipeline model: grid and flops of the whole problem", "[pipeline]") {
  const Rates rates;
  Shape s;
  s.heads = 32;
  s.nq = s.nk = 4096;
  s.d = 128;
  const Prediction p = predict(rung(16, 128), s, rates);
  REQUIRE(p.blocks == 32 * 32);
  REQUIRE_THAT(p.flops, WithinRel(4.0 * 32 * 4096 * 4096 * 128, 1e-12));
  REQUIRE_THAT(p.tflops, WithinRel(p.flops / (p.ms * 1e-3) * 1e-12, 1e-12));
  s.causal = true;
  const Prediction c = predict(rung(16, 128), s, rates);
  REQUIRE_THAT(c.flops, WithinRel(4.0 * 32 * (4096.0 * 4097 / 2) * 128, 1e-12));
  REQUIRE(c.ms < p.ms);  // about half the work
  REQUIRE(c.ms > 0.4 * p.ms);
  REQUIRE_THROWS_AS(rung(12, 64), InputError);
  REQUIRE_THROWS_AS(rungs(96), InputError);
}

TEST_CASE("explain --pipeline prints the model's timeline and its prediction", "[pipeline][cli]") {
  std::string out;
  REQUIRE(fstest::run_command(fstest::kBin + " explain --pipeline --variant 16 --n 4096 --d 128", out) == 0);
  // "  0.382 ms, 719.6 TFLOP/s (tensor-core ceiling 792); ..." equals predict() on the same shape.
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex(R"(([0-9.]+) ms, ([0-9.]+) TFLOP/s \(tensor-core ceiling)")));
  Shape s;
  s.heads = 32;
  s.nq = s.nk = 4096;
  s.d = 128;
  const Prediction p = predict(rung(16, 128), s, Rates{});
  REQUIRE_THAT(std::stod(m[2].str()), WithinRel(p.tflops, 1e-3));
  REQUIRE_THAT(std::stod(m[1].str()), WithinRel(p.ms, 2e-3));
  REQUIRE(out.find("wg1 softmax") != std::string::npos);
  for (int v = 13; v <= 18; ++v) REQUIRE(std::regex_search(out, std::regex("\n  " + std::to_string(v) + " +128 ")));
  REQUIRE(std::regex_search(out, std::regex("\n  19 +192 +64 ")));  // three consumers, Bc 64 at d = 128
  for (int v : {20, 21}) REQUIRE(std::regex_search(out, std::regex("\n  " + std::to_string(v) + " +128 +176 ")));
  // Bad requests: one line, exit 2.
  for (const char* bad : {" explain --variant 16 --n 64", " explain --pipeline --d 96", " explain --pipeline --variant 12",
                          " explain --pipeline --wait-clk -1", " explain --causal"}) {
    INFO(bad);
    REQUIRE(fstest::run_command(fstest::kBin + bad, out) == 2);
    REQUIRE(out.rfind("flashstep: error: ", 0) == 0);
    REQUIRE(out.find('\n') == out.size() - 1);
  }
}

TEST_CASE("a share of the exp2 on the float32 pipes trades special-function time for issue", "[pipeline]") {
  const Rates h200;
  for (int64_t d : {64, 128}) {
    INFO("d " << d);
    const Rung base = rung(21, d), eighth = rung(35, d), quarter = rung(38, d);
    REQUIRE(eighth.poly_every == 8);
    REQUIRE(quarter.poly_every == 4);
    REQUIRE(eighth.Bc == base.Bc);
    REQUIRE(eighth.persistent == base.persistent);
    const BlockCosts b = block_costs(base, d, h200), e = block_costs(eighth, d, h200), q = block_costs(quarter, d, h200);
    const double scores = 64.0 * base.Bc;
    // One score in n leaves the special-function units; each costs 10 more float32 lane operations.
    REQUIRE_THAT(b.exp_clk - e.exp_clk, WithinRel(scores / 8 / h200.exp_per_clk, 1e-12));
    REQUIRE_THAT(e.issue_clk - b.issue_clk, WithinRel(10 * scores / 8 / h200.fp32_per_clk, 1e-12));
    REQUIRE_THAT(q.issue_clk - b.issue_clk, WithinRel(10 * scores / 4 / h200.fp32_per_clk, 1e-12));
    REQUIRE(e.s_clk == b.s_clk);
  }
  // At d = 64 the H200's exp2 rate is the softmax's limit, and 1/8 of it on the float32 pipes
  // shortens the softmax; a quarter makes the float32 issue the limit instead.
  const BlockCosts b = block_costs(rung(21, 64), 64, h200), e = block_costs(rung(35, 64), 64, h200),
                   q = block_costs(rung(38, 64), 64, h200);
  REQUIRE(b.softmax_clk == b.exp_clk);
  REQUIRE(e.softmax_clk < b.softmax_clk);
  REQUIRE(q.softmax_clk == q.issue_clk);
}
