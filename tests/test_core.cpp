// Core engine: numerics against float64 (our reference and PyTorch's golden files), exact HBM
// traffic against the closed forms, stepping, determinism, SRAM accounting.
#include "core/backward.h"
#include "core/closed_form.h"
#include "core/export.h"
#include "core/online_softmax.h"
#include "core/reference.h"
#include "core/schedule_registry.h"
#include "core/schedules/fa1/fa1.h"
#include "core/schedules/standard/standard.h"
#include "core/trace_file.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace flashstep;

namespace {

struct GoldenCase {
  std::string name;
  double scale;
};

const GoldenCase kGolden[] = {{"n64_d16", 0.25},
                              {"n100_d32_ragged", 0.17677669529663687},
                              {"cross_nq77_nk130_d40", 0.15811388300841897},
                              {"n96_d32_large_logits", 0.17677669529663687}};

// The golden o and lse are float64 on disk; read_npy rounds them to float32 (relative error
// <= 6e-8), far below the 1e-5 the tests ask for.
Vec read_vec(const std::string& path) {
  NpyArray a = read_npy(path);
  return Eigen::Map<const Vec>(a.data.data(), int64_t(a.data.size()));
}

}  // namespace

TEST_CASE("float64 reference matches the PyTorch golden outputs", "[reference][golden]") {
  for (const auto& g : kGolden) {
    CAPTURE(g.name);
    const Mat q = read_npy_matrix(fstest::golden(g.name + ".q.npy"));
    const Mat k = read_npy_matrix(fstest::golden(g.name + ".k.npy"));
    const Mat v = read_npy_matrix(fstest::golden(g.name + ".v.npy"));
    const Reference ref = reference_attention(q, k, v, g.scale);
    const Mat o = read_npy_matrix(fstest::golden(g.name + ".o.npy"));
    // The golden files are float64; read_npy_matrix rounds them to float32, so compare at
    // float32 resolution here (the schedules are compared with the float64 reference below).
    CHECK(compare(o, ref.O).max_rel < 2e-7);
    CHECK(compare(read_vec(fstest::golden(g.name + ".lse.npy")), ref.lse).max_rel < 2e-7);
  }
}

TEST_CASE("Algorithm 1 and Algorithm 0 match the golden cases to 1e-5", "[fa1][standard][golden]") {
  // (Br, Bc) overrides: 0 = paper's sizes; others leave ragged last blocks.
  const auto blocks = GENERATE(std::pair<int64_t, int64_t>{0, 0}, std::pair<int64_t, int64_t>{16, 16},
                               std::pair<int64_t, int64_t>{7, 13}, std::pair<int64_t, int64_t>{32, 5},
                               std::pair<int64_t, int64_t>{1, 1});
  const auto schedule = GENERATE(Schedule::fa1, Schedule::standard);
  for (const auto& g : kGolden) {
    CAPTURE(g.name, blocks.first, blocks.second, schedule_name(schedule));
    ProblemSpec s;
    s.q_path = fstest::golden(g.name + ".q.npy");
    s.k_path = fstest::golden(g.name + ".k.npy");
    s.v_path = fstest::golden(g.name + ".v.npy");
    s.scale = g.scale;
    s.M = 4096;
    s.br = blocks.first;
    s.bc = blocks.second;
    s.schedule = schedule;
    s.d = read_npy_matrix(s.q_path).cols();  // so validate_sizes sees the real d
    const Trace t = fstest::run_spec(s, false);
    const MatD o = read_npy_matrix(fstest::golden(g.name + ".o.npy")).cast<double>();
    const VecD lse = read_vec(fstest::golden(g.name + ".lse.npy")).cast<double>();
    const Reference ref = reference_attention(t.problem.Q, t.problem.K, t.problem.V, g.scale);
    CHECK(compare(t.O, ref.O).max_rel < 1e-5);
    CHECK(compare(t.lse, ref.lse).max_rel < 1e-5);
    CHECK(compare(t.O, o).max_rel < 1e-5);
    CHECK(compare(t.lse, lse).max_rel < 1e-5);
  }
}

TEST_CASE("Algorithm 1 matches the float64 reference on fresh random inputs", "[fa1]") {
  const int64_t nq = GENERATE(1, 17, 97, 130);
  const int64_t nk = GENERATE(1, 33, 97, 257);
  const int64_t d = GENERATE(8, 40);
  const std::string pattern = GENERATE(std::string("random"), std::string("large"));
  static uint64_t seed = 12345;
  ProblemSpec s;
  s.nq = nq;
  s.nk = nk;
  s.d = d;
  s.M = 8 * d + 12;  // not a multiple of 4d: ragged tiles and the rounded-up budget
  s.pattern = pattern;
  s.seed = ++seed;
  CAPTURE(nq, nk, d, pattern, s.seed);
  const Trace t = fstest::run_spec(s, false);
  const Reference ref = reference_attention(t.problem.Q, t.problem.K, t.problem.V, t.problem.scale);
  CHECK(compare(t.O, ref.O).max_rel < 1e-5);
  CHECK(compare(t.lse, ref.lse).max_rel < 1e-5);
  CHECK(t.O.allFinite());
}

TEST_CASE("simulated HBM traffic equals the closed forms exactly", "[traffic]") {
  struct Size { int64_t nq, nk, d, M, br, bc; };
  const Size sizes[] = {{64, 64, 16, 1024, 0, 0},   {100, 100, 32, 1000, 0, 0},
                        {77, 130, 40, 2048, 0, 0},  {130, 77, 8, 100, 0, 0},
                        {256, 256, 64, 16384, 0, 0}, {97, 1025, 16, 4096, 0, 0},
                        {1, 1, 4, 16, 0, 0},        {50, 70, 12, 4096, 7, 9},
                        {33, 200, 24, 10000, 24, 80}, {1024, 1024, 64, 16384, 0, 0}};
  for (const Size& z : sizes) {
    CAPTURE(z.nq, z.nk, z.d, z.M, z.br, z.bc);
    ProblemSpec s;
    s.nq = z.nq; s.nk = z.nk; s.d = z.d; s.M = z.M; s.br = z.br; s.bc = z.bc;
    const Tiling ti = make_tiling(z.nq, z.nk, z.d, z.M, z.br, z.bc);
    const bool small = z.nq * z.nk <= 300 * 300;
    s.schedule = Schedule::fa1;
    const Trace fa = fstest::run_spec(s, small);
    const TrafficForm ffa = fa1_traffic(z.nq, z.nk, z.d, ti.Tc);
    CHECK(fa.totals.hbm_read_bytes == 4 * ffa.read_elems);
    CHECK(fa.totals.hbm_write_bytes == 4 * ffa.write_elems);
    if (small) {  // the recorded run counts the same bytes, step by step
      CHECK(int64_t(fa.steps.size()) == fa.totals.steps);
      CHECK(fa.steps.back().hbm_read_total == fa.totals.hbm_read_bytes);
      CHECK(fa.steps.back().hbm_write_total == fa.totals.hbm_write_bytes);
      int64_t sum_r = 0, sum_w = 0;
      for (const Step& st : fa.steps) { sum_r += st.hbm_read; sum_w += st.hbm_write; }
      CHECK(sum_r == fa.totals.hbm_read_bytes);
      CHECK(sum_w == fa.totals.hbm_write_bytes);
    }
    s.schedule = Schedule::standard;
    const Trace sa = fstest::run_spec(s, small);
    const TrafficForm fsa = standard_traffic(z.nq, z.nk, z.d);
    CHECK(sa.totals.hbm_read_bytes == 4 * fsa.read_elems);
    CHECK(sa.totals.hbm_write_bytes == 4 * fsa.write_elems);
  }
}

TEST_CASE("each step moves exactly the blocks its line names", "[traffic]") {
  ProblemSpec s;
  s.nq = 10; s.nk = 7; s.d = 4; s.M = 64;  // Bc = 4, Br = 4; last blocks ragged (2 and 3 rows)
  const Trace t = fstest::run_spec(s);
  const int64_t d = 4;
  for (size_t k = 0; k < t.steps.size(); ++k) {
    const Step& st = t.steps[k];
    CAPTURE(k, line_label(st.line), st.i, st.j);
    const int64_t br = st.i >= 0 ? t.tiling.rows_in_q_block(st.i, 10) : 0;
    const int64_t bc = st.j >= 0 ? t.tiling.rows_in_kv_block(st.j, 7) : 0;
    switch (st.line) {
      case Line::A1_L2: CHECK(st.hbm_write == 4 * 10 * (d + 2)); CHECK(st.hbm_read == 0); break;
      case Line::A1_L6: CHECK(st.hbm_read == 4 * 2 * bc * d); CHECK(st.hbm_write == 0); break;
      case Line::A1_L8: CHECK(st.hbm_read == 4 * br * (2 * d + 2)); CHECK(st.hbm_write == 0); break;
      case Line::A1_L12: CHECK(st.hbm_write == 4 * br * d); CHECK(st.hbm_read == 0); break;
      case Line::A1_L13: CHECK(st.hbm_write == 4 * 2 * br); CHECK(st.hbm_read == 0); break;
      default: CHECK(st.hbm_read == 0); CHECK(st.hbm_write == 0); break;
    }
  }
}

TEST_CASE("the paper block sizes fit in SRAM and oversized overrides are refused", "[sram]") {
  for (int64_t d : std::initializer_list<int64_t>{4, 16, 32, 40, 64, 128}) {
    for (int64_t M : std::initializer_list<int64_t>{4 * d, 4 * d + 1, 1000, 4096, 16384, 100000}) {
      if (M < 4 * d) continue;
      CAPTURE(d, M);
      const Tiling t = make_tiling(300, 200, d, M);
      CHECK(t.Br <= d);
      CHECK(2 * (t.Br + t.Bc) * d <= t.tile_capacity);
      CHECK(t.tile_capacity < M + 4 * d);
      if (M % (4 * d) == 0) CHECK(t.tile_capacity == M);
      ProblemSpec s;
      s.nq = 300; s.nk = 200; s.d = d; s.M = M;
      if (300 * 200 * d > 3000000) continue;
      const Trace tr = fstest::run_spec(s, false);
      CHECK(tr.totals.peak_tile_bytes <= 4 * t.tile_capacity);
      // S_ij and the row statistics are scratch on top of the tiles (memory.h)
      const int64_t br = std::min<int64_t>(t.Br, 300), bc = std::min<int64_t>(t.Bc, 200);
      CHECK(tr.totals.peak_sram_bytes == tr.totals.peak_tile_bytes + 4 * (br * bc + 6 * br));
    }
  }
  CHECK_THROWS_WITH(make_tiling(64, 64, 16, 1024, 64, 64),
                    Catch::Contains("Br = 64, Bc = 64 do not fit") && Catch::Contains("M = 1024"));
}

TEST_CASE("online softmax update turns the minus-inf minus minus-inf case into 0 not NaN", "[softmax]") {
  CHECK(rescale_factor(-INFINITY, -INFINITY) == 0.0f);
  CHECK(rescale_factor(-INFINITY, 3.0f) == 0.0f);
  CHECK(rescale_factor(2.0f, 3.0f) == Approx(std::exp(-1.0f)));
  CHECK(merged_output(0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f) == 0.0f);
  CHECK(row_logsumexp(-INFINITY, 0.0f) == -INFINITY);
  CHECK(row_logsumexp(1.0f, 1.0f) == 1.0f);
}

TEST_CASE("stepping backward then forward gives the identical state", "[cursor]") {
  ProblemSpec s;
  s.nq = 13; s.nk = 11; s.d = 8; s.M = 128; s.seed = 7;
  const Trace t = fstest::run_spec(s);
  REQUIRE(t.steps.size() > 20);
  Cursor a(t), b(t);
  const size_t K = 17, J = 9;
  a.seek(K);
  for (size_t n = 0; n < J; ++n) a.backward();
  CHECK(a.index() == K - J);
  for (size_t n = 0; n < J; ++n) a.forward();
  for (size_t n = 0; n < K; ++n) b.forward();
  REQUIRE(a.index() == b.index());
  for (Tensor tn : {Tensor::O, Tensor::l, Tensor::m}) {
    REQUIRE(a.written(tn) == b.written(tn));
    const Mat& x = a.hbm(tn);
    const Mat& y = b.hbm(tn);
    REQUIRE(x.size() == y.size());
    CHECK(std::memcmp(x.data(), y.data(), sizeof(float) * size_t(x.size())) == 0);
  }
  // At the end the replayed HBM holds the run's outputs.
  a.run_to_end();
  CHECK(a.hbm(Tensor::O) == t.O);
  for (int64_t r = 0; r < t.problem.nq; ++r)
    CHECK(row_logsumexp(a.hbm(Tensor::m)(r, 0), a.hbm(Tensor::l)(r, 0)) == t.lse(r));
  // Before L2 nothing has been written.
  a.seek(0);
  CHECK_FALSE(a.written(Tensor::O));
}

TEST_CASE("the same seed gives a bit-identical trace and another seed another", "[determinism]") {
  ProblemSpec s;
  s.nq = 20; s.nk = 24; s.d = 8; s.M = 96; s.seed = 99;
  const std::string a = trace_to_json(fstest::run_spec(s)).dump();
  const std::string b = trace_to_json(fstest::run_spec(s)).dump();
  CHECK(a == b);
  const Trace t1 = fstest::run_spec(s), t2 = fstest::run_spec(s);
  CHECK(std::memcmp(t1.O.data(), t2.O.data(), sizeof(float) * size_t(t1.O.size())) == 0);
  s.seed = 100;
  CHECK(trace_to_json(fstest::run_spec(s)).dump() != a);
}

TEST_CASE("recorded steps carry the values of their line", "[trace]") {
  ProblemSpec s;
  s.nq = 8; s.nk = 8; s.d = 4; s.M = 64; s.pattern = "ramp"; s.scale = 1.0;
  const Trace t = fstest::run_spec(s);
  const Reference ref = reference_attention(t.problem.Q, t.problem.K, t.problem.V, 1.0);
  const Step* last_l10 = nullptr;
  for (const Step& st : t.steps) {
    if (st.line == Line::A1_L10) {
      last_l10 = &st;
      REQUIRE(st.m_tilde.size() == 4);
      // m~ is the row max of S_ij (the L9 tile of the same (i, j)); P~ = exp(S - m~) has max 1
      for (int64_t r = 0; r < 4; ++r) CHECK(st.tile.row(r).maxCoeff() == Approx(1.0f));
      CHECK(st.l_tilde.minCoeff() >= 1.0f);
    }
    if (st.line == Line::A1_L11) {
      REQUIRE(last_l10 != nullptr);
      for (int64_t r = 0; r < 4; ++r) {
        CHECK(st.m_new(r) == std::max(st.m_old(r), last_l10->m_tilde(r)));
        CHECK(st.l_new(r) == Approx(st.alpha(r) * st.l_old(r) + st.beta(r) * last_l10->l_tilde(r)));
        CHECK(st.alpha(r) <= 1.0f);
        CHECK(st.beta(r) <= 1.0f);
      }
    }
  }
  // After the last j, the lse equals the reference's (the statistics were merged correctly).
  CHECK(compare(t.lse, ref.lse).max_rel < 1e-6);
}

TEST_CASE("JSON and CSV and Chrome exports follow the documented schema", "[export]") {
  ProblemSpec s;
  s.nq = 9; s.nk = 5; s.d = 4; s.M = 32;
  const Trace t = fstest::run_spec(s);
  const nlohmann::json j = trace_to_json(t);
  for (const char* key : {"nq", "nk", "d", "M", "Br", "Bc", "Tr", "Tc", "scale", "schedule", "dtype"})
    CHECK(j["problem"].contains(key));
  CHECK(j["problem"]["schedule"] == "fa1");
  REQUIRE(j["steps"].size() == t.steps.size());
  for (const auto& st : j["steps"])
    for (const char* key : {"line", "i", "j", "hbm_read_bytes", "hbm_write_bytes"}) CHECK(st.contains(key));
  for (const char* key : {"hbm_read_bytes", "hbm_write_bytes", "flops", "peak_sram_bytes", "steps"})
    CHECK(j["totals"].contains(key));
  CHECK(j["totals"]["hbm_read_bytes"] == t.totals.hbm_read_bytes);
  CHECK(j["steps"][0]["line"] == 2);
  const std::string csv = trace_to_csv(t);
  CHECK(size_t(std::count(csv.begin(), csv.end(), '\n')) == t.steps.size() + 1);
  const nlohmann::json c = trace_to_chrome(t);
  size_t complete = 0;
  for (const auto& e : c["traceEvents"]) complete += e["ph"] == "X";
  CHECK(complete == t.steps.size());
}

TEST_CASE("a trace that would not fit in memory is refused with the estimate", "[limits]") {
  ProblemSpec s;
  s.nq = s.nk = 4096; s.d = 64; s.M = 16384;
  const Problem p = make_problem(s);
  const Tiling ti = make_tiling(4096, 4096, 64, 16384);
  const size_t est = estimate_trace_bytes(p, ti);
  CHECK(est > (size_t(100) << 20));
  CHECK(est < (size_t(512) << 20));
  RunOptions opt;
  opt.max_trace_bytes = size_t(64) << 20;
  CHECK_THROWS_WITH(run_problem(p, ti, opt), Catch::Contains("MiB") && Catch::Contains("refusing to record"));
  // The estimate is not far from what a recorded trace really takes.
  s.nq = s.nk = 512;
  const Trace t = fstest::run_spec(s);
  const double ratio = double(estimate_trace_bytes(t.problem, t.tiling)) / double(t.approx_bytes());
  CHECK(ratio > 0.8);
  CHECK(ratio < 1.5);
}

TEST_CASE("stepping back through checkpoints gives the same state as replaying from the start", "[cursor]") {
  ProblemSpec s;
  s.nq = 200; s.nk = 300; s.d = 8; s.M = 64; s.seed = 3;  // Br = Bc = 2: 15000 pairs, ~90k steps
  const Trace t = fstest::run_spec(s);
  Cursor a(t, size_t(1) << 20), fresh(t);  // a small budget: many checkpoints, spaced apart
  REQUIRE(a.checkpoint_spacing() > 64);
  a.run_to_end();
  for (size_t k : {t.steps.size() - 1, size_t(70000), size_t(12345), size_t(64), size_t(1)}) {
    CAPTURE(k);
    a.seek(k);
    fresh.seek(0);
    fresh.seek(k);
    REQUIRE(a.index() == k);
    for (Tensor tn : {Tensor::O, Tensor::l, Tensor::m}) {
      REQUIRE(a.written(tn) == fresh.written(tn));
      if (a.written(tn))
        CHECK(std::memcmp(a.hbm(tn).data(), fresh.hbm(tn).data(), sizeof(float) * size_t(a.hbm(tn).size())) == 0);
    }
  }
}

TEST_CASE("every recorded step has the loop indices in scope at its line, and places", "[trace][lines]") {
  // line_scope (the loops around the line's row in its listing) is what a puzzle's step without
  // i=, j= takes from the blocks before it; step_placement_error is what the trace reader and a
  // puzzle's save refuse. Core's own steps, forward and backward, masked and ragged, are the oracle.
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard, Schedule::decode);
  const bool causal = GENERATE(false, true);
  ProblemSpec s = sizes_spec(11, 19, 4, 64);
  s.schedule = sched;
  s.seed = fstest::fresh_seed();
  s.options.mask.causal = causal;
  if (sched != Schedule::decode) s.options.dropout = 0.25;  // the backward's dropout line too
  const Problem p = make_problem(s);
  const Tiling t = make_tiling(p);
  const Mat dO = make_grad_output(p, s.pattern);
  RunOptions opt;
  opt.record = true;
  if (schedule_info(sched).backward_lines) opt.dO = &dO;
  const Trace tr = run_problem(p, t, opt);
  REQUIRE(tr.steps.size() > 10);
  for (const Step& st : tr.steps) {
    INFO(line_label(st.line) << " at i = " << st.i << ", j = " << st.j);
    const LineBlocks scope = line_scope(st.line), need = line_blocks(st.line);
    CHECK(scope.i == (st.i >= 0));
    CHECK(scope.j == (st.j >= 0));
    CHECK((scope.i || !need.i));
    CHECK((scope.j || !need.j));
    CHECK(step_placement_error(st, tr.tiling).empty());
  }
}

TEST_CASE("a step its line cannot place is named, and why", "[trace][lines]") {
  const Tiling t = make_tiling(8, 8, 4, 64);  // Tr = Tc = 2
  Step st;
  st.line = Line::A1_L9;
  st.i = 0;
  st.j = -1;
  CHECK(step_placement_error(st, t) == "has i = 0, j = -1, but Alg1 L9 (scores) works on a block pair (i, j)");
  st.line = Line::FA2F_L14;  // write O: the Q block only
  CHECK(step_placement_error(st, t).empty());
  st.i = -1;
  CHECK(step_placement_error(st, t) == "has i = -1, j = -1, but FA2fwd L14 (write O) works on a Q block i");
  st.line = Line::A1_L6;  // load K/V: the K/V block only, and no value to draw without a Q block
  st.j = 1;
  CHECK(step_placement_error(st, t).empty());
  st.tile = Mat::Ones(3, 5);
  CHECK(step_placement_error(st, t) == "has i = -1, j = 1: on-chip values (a tile) without a Q block to draw them at");
  st.j = 2;
  CHECK(step_placement_error(st, t) ==
        "has i = -1, j = 2, outside the tiling (Q blocks 0..1, K/V blocks 0..1; -1 for none)");
}
