// The backward pass: gradients against PyTorch's float64 autograd (golden files) and our float64
// reference, exact HBM traffic against the closed forms, dropout's mask in both passes, low
// precision, stepping and determinism.
#include "core/backward.h"
#include "core/closed_form.h"
#include "core/export.h"
#include "core/reference.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <cstring>

using namespace flashstep;

namespace {

struct GoldenBwd {
  std::string name;
  double scale;
  bool causal;
};

// manifest_bwd.json (copied from shared/golden_bwd); causal is bottom-right aligned.
const GoldenBwd kGoldenBwd[] = {{"b_n64_d16", 0.25, false},
                                {"b_n100_d32_causal", 0.17677669529663687, true},
                                {"b_cross_nq77_nk130_d40", 0.15811388300841897, false},
                                {"b_nq130_nk77_d40_causal", 0.15811388300841897, true}};

Mat golden(const std::string& name, const char* what) {
  return read_npy_matrix(fstest::golden(name + "." + what + ".npy"));
}

// Runs forward + backward; dO from the seed unless given.
Trace run_bwd(const ProblemSpec& s, bool record = false, const Mat* dO = nullptr) {
  const Problem p = make_problem(s);
  const Tiling t = make_tiling(p.nq, p.nk, p.d, p.M, s.br, s.bc);
  const Mat g = dO ? *dO : make_grad_output(p, s.pattern);
  RunOptions opt;
  opt.record = record;
  opt.dO = &g;
  return run_problem(p, t, opt);
}

ReferenceGrad reference_of(const Trace& t) {
  const Problem& p = t.problem;
  return reference_backward(p.Q, p.K, p.V, t.dO, p.scale, p.mask, p.dropout, p.seed);
}

struct GradErrors {
  double dq, dk, dv;
  double max() const { return std::max({dq, dk, dv}); }
};
// Normwise relative errors. dQ and dK come out of dS = P o (dP - D), a difference of terms of
// size |dP| <= d max|dO| max|V|: where softmax saturates (large logits, one key dominating)
// that difference cancels to far below the terms, and float32 cannot resolve it better than
// eps times the terms. So dQ's and dK's errors are taken relative to max|ref|, but never to
// less than a thousandth of tau |dP| max|K| (resp. max|Q|), the size of one term.
GradErrors grad_errors(const Trace& t, const ReferenceGrad& g) {
  const Problem& p = t.problem;
  const double dP = double(p.d) * t.dO.cwiseAbs().maxCoeff() * p.V.cwiseAbs().maxCoeff();
  auto rel = [](const Mat& x, const MatD& ref, double floor) {
    const ErrorStats e = compare(x, ref);
    return e.max_abs / std::max(ref.cwiseAbs().maxCoeff(), 1e-3 * floor);
  };
  return {rel(t.dQ, g.dQ, p.scale * dP * p.K.cwiseAbs().maxCoeff()),
          rel(t.dK, g.dK, p.scale * dP * p.Q.cwiseAbs().maxCoeff()), compare(t.dV, g.dV).max_rel};
}

const Schedule kSchedules[] = {Schedule::fa1, Schedule::fa2, Schedule::standard};

}  // namespace

TEST_CASE("the float64 backward reference matches PyTorch autograd", "[backward][reference][golden]") {
  for (const auto& g : kGoldenBwd) {
    CAPTURE(g.name);
    const Mat q = golden(g.name, "q"), k = golden(g.name, "k"), v = golden(g.name, "v"), dO = golden(g.name, "do");
    Mask mask;
    mask.causal = g.causal;
    mask.offset = k.rows() - q.rows();
    const ReferenceGrad r = reference_backward(q, k, v, dO, g.scale, mask);
    // The golden gradients are float64 on disk, read as float32: compare at float32 resolution.
    CHECK(compare(golden(g.name, "dq"), r.dQ).max_rel < 3e-7);
    CHECK(compare(golden(g.name, "dk"), r.dK).max_rel < 3e-7);
    CHECK(compare(golden(g.name, "dv"), r.dV).max_rel < 3e-7);
  }
}

TEST_CASE("all three backward schedules match the golden gradients to 1e-5", "[backward][golden]") {
  const auto blocks = GENERATE(std::pair<int64_t, int64_t>{0, 0}, std::pair<int64_t, int64_t>{16, 16},
                               std::pair<int64_t, int64_t>{7, 13}, std::pair<int64_t, int64_t>{32, 5},
                               std::pair<int64_t, int64_t>{1, 3});
  const Schedule schedule = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  for (const auto& g : kGoldenBwd) {
    CAPTURE(g.name, blocks.first, blocks.second, schedule_name(schedule));
    ProblemSpec s;
    s.q_path = fstest::golden(g.name + ".q.npy");
    s.k_path = fstest::golden(g.name + ".k.npy");
    s.v_path = fstest::golden(g.name + ".v.npy");
    s.scale = g.scale;
    s.options.mask.causal = g.causal;
    s.M = 4096;
    s.br = blocks.first;
    s.bc = blocks.second;
    s.schedule = schedule;
    s.d = golden(g.name, "q").cols();
    const Mat dO = golden(g.name, "do");
    const Trace t = run_bwd(s, false, &dO);
    REQUIRE(t.has_backward);
    const auto gold = [&](const char* what) { return golden(g.name, what).cast<double>().eval(); };
    CHECK(compare(t.O, gold("o")).max_rel < 1e-5);
    CHECK(compare(t.dQ, gold("dq")).max_rel < 1e-5);
    CHECK(compare(t.dK, gold("dk")).max_rel < 1e-5);
    CHECK(compare(t.dV, gold("dv")).max_rel < 1e-5);
    CHECK(t.dQ.allFinite());
    CHECK(t.dK.allFinite());
    CHECK(t.dV.allFinite());
  }
}

TEST_CASE("query rows that see no key get exactly zero gradient", "[backward][mask]") {
  // Nq = 130 > Nk = 77, causal bottom-right: rows 0..52 see no key.
  const std::string name = "b_nq130_nk77_d40_causal";
  const Mat dO = golden(name, "do");
  for (Schedule schedule : kSchedules) {
    CAPTURE(schedule_name(schedule));
    ProblemSpec s;
    s.q_path = fstest::golden(name + ".q.npy");
    s.k_path = fstest::golden(name + ".k.npy");
    s.v_path = fstest::golden(name + ".v.npy");
    s.d = 40;
    s.options.mask.causal = true;
    s.M = 1000;
    s.schedule = schedule;
    const Trace t = run_bwd(s, false, &dO);
    CHECK(t.dQ.topRows(53).cwiseAbs().maxCoeff() == 0.0f);
    // Row 53 sees one key: P = 1 there, so dS = P (dP - D) is zero in exact arithmetic (D = dP)
    // and its dQ is rounding noise or 0. Row 54 sees two keys and must get a real gradient.
    CHECK(t.dQ.row(54).cwiseAbs().maxCoeff() > 1e-4f);
    CHECK(t.dQ.allFinite());
  }
}

TEST_CASE("every backward schedule matches the float64 reference on fresh ragged inputs", "[backward]") {
  struct Case { int64_t nq, nk, d, M, br, bc; bool causal; int64_t wl, wr, kv; };
  const Case cases[] = {
      {97, 131, 16, 300, 0, 0, false, -1, -1, -1},  {131, 97, 24, 1000, 0, 0, true, -1, -1, -1},
      {1, 50, 8, 100, 0, 0, false, -1, -1, -1},     {70, 1, 8, 100, 0, 0, false, -1, -1, -1},
      {64, 100, 12, 4096, 7, 9, false, 10, 3, -1},  {100, 64, 12, 4096, 9, 7, true, 20, -1, 50},
      {45, 45, 32, 777, 0, 0, false, -1, -1, 30},   {60, 90, 16, 2000, 5, 0, true, 3, 0, -1},
  };
  const Schedule schedule = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  const std::string pattern = GENERATE(std::string("random"), std::string("large"));
  static uint64_t seed = 900;
  for (const Case& c : cases) {
    ProblemSpec s;
    s.nq = c.nq; s.nk = c.nk; s.d = c.d; s.M = c.M; s.br = c.br; s.bc = c.bc;
    s.options.mask.causal = c.causal; s.options.mask.window_left = c.wl; s.options.mask.window_right = c.wr; s.options.mask.kv_len = c.kv;
    s.schedule = schedule;
    s.pattern = pattern;
    s.seed = ++seed;
    CAPTURE(c.nq, c.nk, c.d, c.M, c.br, c.bc, c.causal, c.wl, c.wr, c.kv, schedule_name(schedule), pattern, s.seed);
    const Trace t = run_bwd(s);
    const GradErrors e = grad_errors(t, reference_of(t));
    CAPTURE(e.dq, e.dk, e.dv);
    CHECK(e.max() < (pattern == "large" ? 1e-4 : 1e-5));
  }
}

TEST_CASE("dropout: the backward draws exactly the forward's mask", "[backward][dropout]") {
  const Schedule schedule = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  const float prob = GENERATE(0.1f, 0.5f);
  ProblemSpec s;
  s.nq = 37; s.nk = 53; s.d = 8; s.M = 160; s.seed = 77; s.options.dropout = prob; s.options.mask.causal = true;
  s.schedule = schedule;
  CAPTURE(schedule_name(schedule), prob);
  const Trace t = run_bwd(s, true);
  // The gradients of the dropped attention, as the float64 reference (same Philox draw) has them.
  const GradErrors e = grad_errors(t, reference_of(t));
  CAPTURE(e.dq, e.dk, e.dv);
  CHECK(e.max() < 1e-5);
  // A different mask would give different gradients: the reference with another seed's mask.
  const Problem& p = t.problem;
  const ReferenceGrad other = reference_backward(p.Q, p.K, p.V, t.dO, p.scale, p.mask, p.dropout, p.seed + 1);
  CHECK(compare(t.dV, other.dV).max_rel > 1e-2);
  // Step by step: every backward tile's keep pattern equals the forward's at the same elements.
  Mat fwd = Mat::Constant(p.nq, p.nk, -1), bwd = Mat::Constant(p.nq, p.nk, -1);
  for (size_t k = 0; k < t.steps.size(); ++k) {
    const Step& st = t.steps[k];
    if (!st.dropout_keep.size()) continue;
    const int64_t r0 = st.i * t.tiling.Br, c0 = st.j < 0 ? 0 : st.j * t.tiling.Bc;
    Mat& into = k < t.backward_first_step ? fwd : bwd;
    const auto block = into.block(r0, c0, st.dropout_keep.rows(), st.dropout_keep.cols());
    CHECK(((block.array() < 0) || (block.array() == st.dropout_keep.array())).all());
    into.block(r0, c0, st.dropout_keep.rows(), st.dropout_keep.cols()) = st.dropout_keep;
  }
  CHECK((fwd.array() >= 0).count() > 0);
  for (int64_t r = 0; r < p.nq; ++r)
    for (int64_t c = 0; c < p.nk; ++c)
      if (fwd(r, c) >= 0 && bwd(r, c) >= 0) CHECK(fwd(r, c) == bwd(r, c));
  // The dropped fraction of the n kept-by-the-mask weights is Binomial(n, p) / n: mean p,
  // sigma = sqrt(p (1 - p) / n) (n = 1295 here: sigma 0.0083 at p = 0.1, 0.0139 at 0.5).
  // Four sigma: a fair draw lands outside once in about 16000 runs, while a keep rule off by
  // a few percent of p (0.575 instead of 0.5) is caught.
  const int64_t dropped = (bwd.array() == 0).count(), seen = (bwd.array() >= 0).count();
  const double sigma = std::sqrt(double(prob) * (1 - double(prob)) / double(seen));
  CAPTURE(dropped, seen, sigma);
  CHECK(std::abs(double(dropped) / double(seen) - double(prob)) <= 4 * sigma);
}

TEST_CASE("backward traffic equals the closed forms exactly", "[backward][traffic]") {
  struct Size { int64_t nq, nk, d, M, br, bc; };
  const Size sizes[] = {{64, 64, 16, 1024, 0, 0},  {100, 100, 32, 1000, 0, 0}, {77, 130, 40, 2048, 0, 0},
                        {130, 77, 8, 100, 0, 0},   {1, 1, 4, 16, 0, 0},        {50, 70, 12, 4096, 7, 9},
                        {33, 200, 24, 10000, 24, 80}, {97, 1025, 16, 4096, 0, 0}, {300, 45, 8, 333, 3, 0}};
  const Dtype dtype = GENERATE(Dtype::fp32, Dtype::bf16);
  for (const Size& z : sizes)
    for (Schedule schedule : kSchedules) {
      CAPTURE(z.nq, z.nk, z.d, z.M, z.br, z.bc, schedule_name(schedule), dtype_name(dtype));
      ProblemSpec s;
      s.nq = z.nq; s.nk = z.nk; s.d = z.d; s.M = z.M; s.br = z.br; s.bc = z.bc;
      s.schedule = schedule;
      s.options.dtype = dtype;
      const bool small = z.nq * z.nk <= 200 * 200;
      const Trace t = run_bwd(s, small);
      const Tiling& ti = t.tiling;
      const int bpe = dtype_bytes(dtype);
      const TrafficForm fw = schedule_traffic(schedule, z.nq, z.nk, z.d, ti.Tr, ti.Tc);
      const TrafficForm bw = schedule_backward_traffic(schedule, z.nq, z.nk, z.d, ti.Tr, ti.Tc);
      CHECK(t.backward_totals.hbm_read_bytes == bw.read_bytes(bpe));
      CHECK(t.backward_totals.hbm_write_bytes == bw.write_bytes(bpe));
      CHECK(t.forward_totals.hbm_read_bytes == fw.read_bytes(bpe));
      CHECK(t.forward_totals.hbm_write_bytes == fw.write_bytes(bpe));
      CHECK(t.totals.hbm_read_bytes == fw.read_bytes(bpe) + bw.read_bytes(bpe));
      CHECK(t.totals.hbm_write_bytes == fw.write_bytes(bpe) + bw.write_bytes(bpe));
      CHECK(t.totals.flops == t.forward_totals.flops + t.backward_totals.flops);
      CHECK(t.totals.steps == t.forward_totals.steps + t.backward_totals.steps);
      // No L2 model: each pass's DRAM bytes are its HBM bytes (the backward's were once left 0).
      CHECK(t.backward_totals.dram_read_bytes == bw.read_bytes(bpe));
      CHECK(t.backward_totals.dram_write_bytes == bw.write_bytes(bpe));
      CHECK(t.forward_totals.dram_read_bytes == fw.read_bytes(bpe));
      if (small) {  // the recorded steps add up to the same counts
        REQUIRE(int64_t(t.steps.size()) == t.totals.steps);
        int64_t r = 0, w = 0;
        for (size_t k = t.backward_first_step; k < t.steps.size(); ++k) {
          r += t.steps[k].hbm_read;
          w += t.steps[k].hbm_write;
          CHECK(is_backward_line(t.steps[k].line));
        }
        CHECK(r == t.backward_totals.hbm_read_bytes);
        CHECK(w == t.backward_totals.hbm_write_bytes);
        CHECK(t.steps.back().hbm_read_total == t.totals.hbm_read_bytes);
      }
    }
}

TEST_CASE("with masks the backward closed forms are upper bounds", "[backward][traffic][mask]") {
  for (Schedule schedule : {Schedule::fa1, Schedule::fa2}) {
    ProblemSpec s;
    s.nq = 120; s.nk = 90; s.d = 16; s.M = 500; s.options.mask.causal = true; s.options.mask.window_left = 20;
    s.schedule = schedule;
    const Trace t = run_bwd(s);
    const TrafficForm bw = schedule_backward_traffic(schedule, 120, 90, 16, t.tiling.Tr, t.tiling.Tc);
    CHECK(t.backward_totals.hbm_read_bytes < 4 * bw.read_elems);
    CHECK(t.backward_totals.hbm_write_bytes <= 4 * bw.write_elems);
  }
}

TEST_CASE("backward SRAM: the tiles fit twice the forward's budget and the peak is reported", "[backward][sram]") {
  for (int64_t d : std::initializer_list<int64_t>{8, 16, 40, 64})
    for (int64_t M : std::initializer_list<int64_t>{4 * d, 1000, 4096}) {
      if (M < 4 * d) continue;
      for (Schedule schedule : {Schedule::fa1, Schedule::fa2}) {
        CAPTURE(d, M, schedule_name(schedule));
        ProblemSpec s;
        s.nq = 150; s.nk = 130; s.d = d; s.M = M; s.schedule = schedule;
        const Trace t = run_bwd(s);
        const Tiling& ti = t.tiling;
        const int64_t br = std::min<int64_t>(ti.Br, 150), bc = std::min<int64_t>(ti.Bc, 130);
        // fa1: K_j, V_j, dK~_j, dV~_j and Q_i, O_i, dO_i, dQ_i; fa2 leaves out O_i (D_i has it)
        const int64_t tiles = schedule == Schedule::fa1 ? 4 * (4 * bc + 4 * br) * d : 4 * (4 * bc + 3 * br) * d;
        CHECK(t.backward_totals.peak_tile_bytes == tiles);
        CHECK(t.backward_totals.peak_tile_bytes <= 4 * backward_tile_capacity(ti));
        CHECK(t.backward_totals.peak_sram_bytes > t.backward_totals.peak_tile_bytes);  // P, dP, dS, ...
        CHECK(t.totals.peak_sram_bytes == std::max(t.forward_totals.peak_sram_bytes, t.backward_totals.peak_sram_bytes));
      }
    }
}

TEST_CASE("fp16 and bf16 storage: backward errors of the expected size", "[backward][dtype]") {
  const Dtype dtype = GENERATE(Dtype::fp16, Dtype::bf16);
  ProblemSpec s;
  s.nq = 120; s.nk = 100; s.d = 32; s.M = 2048; s.seed = 31; s.options.mask.causal = true;
  s.options.dtype = dtype;
  GradErrors err[3];
  for (int k = 0; k < 3; ++k) {
    s.schedule = kSchedules[k];
    const Trace t = run_bwd(s);
    err[k] = grad_errors(t, reference_of(t));
  }
  // u, half an ulp at 1. The errors are normwise: max|x - ref| / max|ref| (ref from the same
  // rounded inputs). Each gradient is stored rounded to nearest; its largest entries lie in the
  // binade [2^e, max] with max < 2^(e+1), where half an ulp is u 2^(e+1) > u max. Hundreds of
  // entries fill that binade with errors spread over [0, u 2^(e+1)], so the largest is close to
  // u 2^(e+1): between u and 2u of max. Half of u is the floor: below it a gradient was not
  // rounded at all. Above: the final rounding (at most 2u) plus the earlier ones it inherits
  // (O in D = rowsum(dO o O); standard attention's stored P), each at most u relative and not
  // amplified beyond a few ulp in these well-conditioned random problems: 4u. (Measured: 1.1u
  // to 1.8u.) An fp16 gradient rounded like bf16, 8x coarser, lands far outside.
  const double unit = dtype == Dtype::fp16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  CAPTURE(dtype_name(dtype), err[0].max() / unit, err[1].max() / unit, err[2].max() / unit);
  for (int k = 0; k < 3; ++k) {
    CHECK(err[k].max() > 0.5 * unit);  // the rounding does show
    CHECK(err[k].max() < 4 * unit);
  }
  // FlashAttention's rule: flash's error at most about twice standard's in the same precision.
  CHECK(err[0].max() <= 2 * err[2].max());
  CHECK(err[1].max() <= 2 * err[2].max());
}

TEST_CASE("stepping back and forth through the backward steps gives the identical state", "[backward][cursor]") {
  const Schedule schedule = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  ProblemSpec s;
  s.nq = 21; s.nk = 17; s.d = 8; s.M = 96; s.seed = 3; s.options.dropout = 0.2; s.options.mask.causal = true;
  s.schedule = schedule;
  const Trace t = run_bwd(s, true);
  REQUIRE(t.steps.size() > t.backward_first_step + 10);
  Cursor a(t), b(t);
  const size_t K = t.backward_first_step + (t.steps.size() - t.backward_first_step) / 2, J = 23;
  a.seek(K);
  for (size_t n = 0; n < J; ++n) a.backward();
  for (size_t n = 0; n < J; ++n) a.forward();
  for (size_t n = 0; n < K; ++n) b.forward();
  REQUIRE(a.index() == b.index());
  for (int tn = 0; tn < kTensors; ++tn) {
    REQUIRE(a.written(Tensor(tn)) == b.written(Tensor(tn)));
    if (!a.written(Tensor(tn))) continue;
    const Mat& x = a.hbm(Tensor(tn));
    const Mat& y = b.hbm(Tensor(tn));
    REQUIRE(x.size() == y.size());
    CHECK(std::memcmp(x.data(), y.data(), sizeof(float) * size_t(x.size())) == 0);
  }
  a.run_to_end();
  for (Tensor tn : {Tensor::dQ, Tensor::dK, Tensor::dV}) REQUIRE(a.written(tn));
  CHECK(a.hbm(Tensor::dQ) == t.dQ);
  CHECK(a.hbm(Tensor::dV) == t.dV);
  CHECK(a.hbm(Tensor::dK) == t.dK);
}

TEST_CASE("same seed, bit-identical forward and backward trace", "[backward][determinism]") {
  for (Schedule schedule : kSchedules) {
    ProblemSpec s;
    s.nq = 19; s.nk = 23; s.d = 8; s.M = 100; s.seed = 11; s.options.dropout = 0.3; s.options.mask.window_left = 6;
    s.schedule = schedule;
    const Trace a = run_bwd(s, true), b = run_bwd(s, true);
    CHECK(trace_to_json(a).dump() == trace_to_json(b).dump());
    for (const auto& [x, y] : {std::pair<const Mat*, const Mat*>{&a.dQ, &b.dQ}, {&a.dK, &b.dK}, {&a.dV, &b.dV}})
      CHECK(std::memcmp(x->data(), y->data(), sizeof(float) * size_t(x->size())) == 0);
    for (size_t k = 0; k < a.steps.size(); ++k)
      if (a.steps[k].tile.size())
        CHECK(std::memcmp(a.steps[k].tile.data(), b.steps[k].tile.data(), sizeof(float) * size_t(a.steps[k].tile.size())) == 0);
  }
}

TEST_CASE("the backward steps carry the paper's labels and the JSON trace its phases", "[backward][export]") {
  ProblemSpec s;
  s.nq = 10; s.nk = 7; s.d = 4; s.M = 64; s.options.dropout = 0.25; s.options.mask.causal = true;
  const char* want[3][4] = {{"Alg4 L10", "Alg4 L14-15", "Alg4 L19", "Alg4 L24"},
                            {"FA2b L4", "FA2b L9", "FA2b L15", "FA2b L18"},
                            {"Alg3 L1", "Alg3 L3", "Alg3 L5", "Alg3 L4"}};
  for (int k = 0; k < 3; ++k) {
    s.schedule = kSchedules[k];
    const Trace t = run_bwd(s, true);
    const nlohmann::json j = trace_to_json(t);
    std::string labels;
    for (size_t n = t.backward_first_step; n < t.steps.size(); ++n) {
      labels += std::string(line_label(t.steps[n].line)) + "|";
      CHECK_FALSE(t.explain(n).empty());
      CHECK(std::string(line_pseudocode(t.steps[n].line)) != "?");
    }
    for (const char* w : want[k]) CHECK(labels.find(w) != std::string::npos);
    const auto& ph = j.at("phases");
    CHECK(ph.at("forward").at("steps") == int64_t(t.backward_first_step));
    CHECK(ph.at("backward").at("hbm_read_bytes") == t.backward_totals.hbm_read_bytes);
    CHECK(ph.at("forward").at("hbm_write_bytes").get<int64_t>() + ph.at("backward").at("hbm_write_bytes").get<int64_t>() ==
          j.at("totals").at("hbm_write_bytes").get<int64_t>());
    CHECK(ph.at("backward").at("flops").get<int64_t>() > ph.at("forward").at("flops").get<int64_t>());
  }
}

TEST_CASE("the recorded trace stays within the size estimated before the run", "[backward][memory]") {
  struct Size { int64_t nq, nk, d, M; double dropout; bool causal; };
  const Size sizes[] = {{64, 64, 16, 1024, 0, false}, {130, 77, 8, 100, 0.2, true}, {33, 200, 24, 1000, 0.1, false}};
  for (const Size& z : sizes)
    for (Schedule schedule : kSchedules) {
      CAPTURE(z.nq, z.nk, z.d, z.M, z.dropout, schedule_name(schedule));
      ProblemSpec s;
      s.nq = z.nq; s.nk = z.nk; s.d = z.d; s.M = z.M; s.options.dropout = z.dropout; s.options.mask.causal = z.causal;
      s.schedule = schedule;
      const Trace t = run_bwd(s, true);
      const size_t est = estimate_trace_bytes(t.problem, t.tiling) + estimate_backward_trace_bytes(t.problem, t.tiling);
      CHECK(t.approx_bytes() <= est);
      CHECK(t.approx_bytes() * 4 >= est);  // and not wildly above it
    }
}
