// GPU backward pass [gpu][backward]: dQ, dK, dV of Algorithm 4 (fa1), FlashAttention-2's
// Algorithm 2 (fa2) and Algorithm 3 (standard) on the GPU against core's CPU engine (the same
// problem through run_problem + run_backward) and against the float64 reference; fa1's dQ, dK,
// dV after every j against the CPU trace's HBM; PyTorch's float64 autograd (golden files);
// batched heads with per-batch key lengths; bad input. The timings are `flashstep bench-gpu
// --backward`'s, not a test's.
//
// Tolerance (docs/backward.md, "On the GPU"): errors are normwise, max|x - ref| / max|ref|, but
// never relative to less than a thousandth of the size of one term of dQ's and dK's sums
// (tau d max|dO| max|V| max|K or Q|), as tests/test_backward.cpp does, because dS = P o (dP - D)
// cancels where softmax saturates. Against float64: 1e-5, the CPU engine's own bound. GPU
// against CPU: 2e-5, since both are within 1e-5 of the same float64 values; dQ's atomic adds
// make its order of summation over j nondeterministic, which is a rounding-level difference of
// the kind this bound already covers (the sum over j in any order of Tc float32 terms).
#define CATCH_CONFIG_EXTERNAL_INTERFACES  // Catch2 v2: the event listener (WorstErrorReport) below
#include "core/backward.h"
#include "core/npy.h"
#include "core/reference.h"
#include "core/run.h"
#include "gpu/backward.h"
#include "gpu/tensor_core.h"  // make_shape
#include "gpu/trace_align.h"
#include "gpu_test_helpers.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

using namespace flashstep;

namespace {

using namespace gputest;

// kGradFloat64Tol (either engine against float64, 1e-5) and kGradTiledTol (GPU against CPU: both
// within 1e-5 of float64, 2e-5) are core/tolerance.h's.

// The size of one term of dQ's (dK's) sum over keys (queries): tau |dP| max|K| (max|Q|), with
// |dP| <= d max|dO| max|V|.
struct TermScale {
  double dq, dk;
  TermScale(const Problem& p, const Mat& dO) {
    const double dP = double(p.d) * dO.cwiseAbs().maxCoeff() * p.V.cwiseAbs().maxCoeff();
    dq = p.scale * dP * p.K.cwiseAbs().maxCoeff();
    dk = p.scale * dP * p.Q.cwiseAbs().maxCoeff();
  }
};

// max|x - ref| / max(max|ref|, at_least, 1e-3 term); +inf on NaN.
double grad_err(const Mat& x, const MatD& ref, double term, double at_least = 0) {
  const ErrorStats e = compare(x, ref);
  return e.max_abs / std::max({ref.cwiseAbs().maxCoeff(), at_least, 1e-3 * term, 1e-30});
}

// The worst error seen per schedule and comparison, printed when the run ends (WorstErrorReport).
std::map<std::string, double>& worst() {
  static std::map<std::string, double> w;
  return w;
}
void note(const std::string& what, double e) {
  double& w = worst()[what];
  w = std::max(w, e);
}

struct Case {
  int64_t nq, nk, d, br, bc;
  int variant;  // backward kernel variant (fa1, fa2); 0 automatic
  bool causal = false;
  int64_t window_left = -1, window_right = -1, kv_len = -1;
  double dropout = 0;
  int64_t M = 0;  // 0: fit the blocks exactly
};

Problem problem_of(const Case& c, Schedule schedule, uint64_t seed) {
  ProblemSpec s;
  s.nq = c.nq;
  s.nk = c.nk;
  s.d = c.d;
  s.M = c.M ? c.M : fit_M(c.br, c.bc, c.d);
  s.br = c.br;
  s.bc = c.bc;
  s.seed = seed;
  s.schedule = schedule;
  s.options.mask.causal = c.causal;
  s.options.mask.window_left = c.window_left;
  s.options.mask.window_right = c.window_right;
  s.options.mask.kv_len = c.kv_len;
  s.options.dropout = c.dropout;
  return make_problem(s);
}

gpu::BackwardResult gpu_backward(const Problem& p, const Tiling& t, const Mat& dO, int variant,
                                 bool snapshots = false) {
  gpu::BackwardOptions o;
  o.variant = variant;
  o.snapshots = snapshots;
  o.features = gpu::features_of(p.options(), p.seed);
  const gpu::Shape sh = gpu::make_shape(1, 1, p.nq, p.nk, p.d);
  if (p.schedule == Schedule::fa1)
    return gpu::fa1_backward(p.Q.data(), p.K.data(), p.V.data(), dO.data(), sh, p.scale, t, o);
  if (p.schedule == Schedule::fa2)
    return gpu::fa2_backward(p.Q.data(), p.K.data(), p.V.data(), dO.data(), sh, p.scale, t, o);
  return gpu::standard_backward(p.Q.data(), p.K.data(), p.V.data(), dO.data(), sh, p.scale, o.features);
}

// Rows of dQ whose query keeps no key, and rows of dK, dV whose key no query keeps: exactly 0.
void check_unseen_rows_zero(const Problem& p, const Mat& dQ, const Mat& dK, const Mat& dV) {
  std::vector<bool> key_seen(size_t(p.nk), false);
  int64_t empty_rows = 0;
  for (int64_t r = 0; r < p.nq; ++r) {
    const int64_t lo = p.mask.lo(r), hi = p.mask.hi(r, p.nk);
    for (int64_t c = lo; c <= hi; ++c) key_seen[size_t(c)] = true;
    if (lo > hi) {
      ++empty_rows;
      CHECK(dQ.row(r).cwiseAbs().maxCoeff() == 0.0f);
    }
  }
  for (int64_t c = 0; c < p.nk; ++c)
    if (!key_seen[size_t(c)]) {
      CHECK(dK.row(c).cwiseAbs().maxCoeff() == 0.0f);
      CHECK(dV.row(c).cwiseAbs().maxCoeff() == 0.0f);
    }
  if (empty_rows) UNSCOPED_INFO(empty_rows << " query rows see no key");
}

// One schedule on one case: GPU against the CPU engine and float64; fa1 also per j.
void check_backward(const Case& c, Schedule schedule, bool per_j) {
  const uint64_t seed = fresh_seed();
  INFO(schedule_name(schedule) << " Nq " << c.nq << " Nk " << c.nk << " d " << c.d << " Br " << c.br << " Bc "
                               << c.bc << " variant " << c.variant << " causal " << c.causal << " window "
                               << c.window_left << "," << c.window_right << " kv_len " << c.kv_len
                               << " dropout " << c.dropout << " seed " << seed);
  const Problem p = problem_of(c, schedule, seed);
  const Tiling t = make_tiling(p.nq, p.nk, p.d, p.M, c.br, c.bc);
  const Mat dO = make_grad_output(p, "random");
  RunOptions opt;
  opt.record = per_j;
  opt.dO = &dO;
  const Trace tr = run_problem(p, t, opt);
  REQUIRE(tr.has_backward);

  const gpu::BackwardResult g = gpu_backward(p, t, dO, c.variant, per_j);
  if (schedule != Schedule::standard && c.variant) REQUIRE(g.variant == c.variant);
  REQUIRE(all_finite(g.O));
  REQUIRE(no_nan(g.lse));
  REQUIRE(all_finite(g.dQ));
  REQUIRE(all_finite(g.dK));
  REQUIRE(all_finite(g.dV));
  const Mat dQ = to_mat(g.dQ, p.nq, p.d), dK = to_mat(g.dK, p.nk, p.d), dV = to_mat(g.dV, p.nk, p.d);
  // The forward that ran first (its own tests hold it to 5e-6 for fa1 and fa2; standard's
  // matmuls sum in another order than the CPU's, so the float64 bound here).
  CHECK(rel(to_mat(g.O, p.nq, p.d), tr.O) <= kFloat64Tol);

  const TermScale ts(p, dO);
  const std::string name = schedule_name(schedule);
  const double cq = grad_err(dQ, tr.dQ.cast<double>(), ts.dq), ck = grad_err(dK, tr.dK.cast<double>(), ts.dk),
               cv = grad_err(dV, tr.dV.cast<double>(), 0);
  const ReferenceGrad ref = reference_backward(p.Q, p.K, p.V, dO, p.scale, p.mask, p.dropout, p.seed);
  const double rq = grad_err(dQ, ref.dQ, ts.dq), rk = grad_err(dK, ref.dK, ts.dk), rv = grad_err(dV, ref.dV, 0);
  CAPTURE(cq, ck, cv, rq, rk, rv);
  CHECK(std::max({cq, ck, cv}) <= kGradTiledTol);
  CHECK(std::max({rq, rk, rv}) <= kGradFloat64Tol);
  note(name + " vs CPU", std::max({cq, ck, cv}));
  note(name + " vs float64", std::max({rq, rk, rv}));
  check_unseen_rows_zero(p, dQ, dK, dV);

  if (!per_j) return;
  // Per j: the GPU's HBM after launch j equals the CPU trace's after Alg4 L24 of j. Partial sums
  // are normalised by the final gradients' size (their rounding errors are those of the final sum).
  REQUIRE(int64_t(g.snapshots.size()) == t.Tc);
  const std::vector<size_t> at = gpu::fa1_backward_steps_after_each_j(tr);
  Cursor cur(tr);
  const double fq = tr.dQ.cwiseAbs().maxCoeff(), fk = tr.dK.cwiseAbs().maxCoeff(), fv = tr.dV.cwiseAbs().maxCoeff();
  double worst_j = 0;
  for (int64_t j = 0; j < t.Tc; ++j) {
    INFO("after j = " << j);
    const gpu::GradSnapshot& sn = g.snapshots[size_t(j)];
    REQUIRE(sn.j == j);
    REQUIRE(all_finite(sn.dQ));
    REQUIRE(all_finite(sn.dK));
    REQUIRE(all_finite(sn.dV));
    cur.seek(at[size_t(j)]);
    const double e = std::max(
        {grad_err(to_mat(sn.dQ, p.nq, p.d), cur.hbm(Tensor::dQ).cast<double>(), ts.dq, fq),
         grad_err(to_mat(sn.dK, p.nk, p.d), cur.hbm(Tensor::dK).cast<double>(), ts.dk, fk),
         grad_err(to_mat(sn.dV, p.nk, p.d), cur.hbm(Tensor::dV).cast<double>(), 0, fv)});
    CHECK(e <= kGradTiledTol);
    worst_j = std::max(worst_j, e);
  }
  note("fa1 per-j snapshots vs CPU trace", worst_j);
}

// Ragged shapes (N not divisible by Br, Bc; Nq < Nk and Nq > Nk), d = 32, 64, 128, masks,
// dropout, rows that see no key, both kernel variants.
const Case kCases[] = {
    {200, 333, 64, 64, 64, 2},                                // ragged, Nq < Nk
    {333, 200, 64, 64, 64, 2, true},                          // causal, Nq > Nk: 133 rows see no key
    {150, 97, 32, 64, 64, 2, false, 20, 5},                   // d = 32, sliding window
    {100, 130, 128, 32, 32, 2, false, -1, -1, 100, 0.2},      // d = 128, key padding, dropout
    {129, 77, 64, 64, 64, 2, true, -1, -1, -1, 0.1},          // causal + dropout, empty rows
    {300, 513, 64, 0, 0, 0, false, -1, -1, -1, 0, 16384},     // paper blocks at M = 64 KiB: 64 x 64
    {1, 1, 64, 64, 64, 2},                                    // one row, one key
    {77, 130, 40, 9, 11, 1, true, 20, -1, 100, 0.1},          // plain variant, odd blocks, all of it
    {200, 333, 64, 64, 64, 1},                                // plain variant on variant 2's case
    {90, 100, 128, 32, 32, 1, true},                          // plain variant, d = 128
    {64, 200, 32, 16, 48, 1, false, 0, 0, 150},               // plain, window of one key + padding
    {200, 333, 64, 64, 64, 3},                                // lean variant, ragged, Nq < Nk
    {333, 200, 64, 64, 64, 3, true, -1, -1, -1, 0.1},         // lean, causal + dropout, empty rows
    {150, 397, 64, 64, 128, 3, false, 30, 7, 350},            // lean Bc 128, window + padding
    {261, 140, 64, 128, 64, 3, true},                         // lean Br 128, causal, Nq > Nk
    {100, 130, 128, 64, 64, 3, false, -1, -1, 100, 0.2},      // lean d = 128, padding, dropout
};

}  // namespace

TEST_CASE("GPU backward of every schedule matches the CPU engine and float64", "[gpu][backward]") {
  REQUIRE_GPU_OR_SKIP();
  const Schedule schedule = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  for (const Case& c : kCases) check_backward(c, schedule, false);
}

TEST_CASE("GPU Algorithm 4 backward: dQ, dK, dV after every j equal the CPU trace", "[gpu][backward][fa1]") {
  REQUIRE_GPU_OR_SKIP();
  const Case c = GENERATE(Case{200, 333, 64, 64, 64, 2},                      // register-tiled
                          Case{333, 200, 64, 64, 64, 2, true},                // causal: j blocks skipped
                          Case{1000, 1000, 64, 64, 64, 2, false, 64, 64, 800},  // window + padding
                          Case{100, 130, 128, 32, 32, 2, true, -1, -1, -1, 0.2},
                          Case{77, 130, 40, 9, 11, 1, true, 20, -1, 100, 0.1},  // plain
                          Case{300, 230, 64, 64, 64, 3, true, -1, -1, 200, 0.1});  // lean
  check_backward(c, Schedule::fa1, true);
}

TEST_CASE("GPU backward matches the PyTorch float64 autograd golden gradients", "[gpu][backward][golden]") {
  REQUIRE_GPU_OR_SKIP();
  struct G {
    const char* name;
    double scale;
    bool causal;
  };
  // tests/golden/manifest_bwd.json; causal is bottom-right aligned.
  const G cases[] = {{"b_n64_d16", 0.25, false},
                     {"b_n100_d32_causal", 0.17677669529663687, true},
                     {"b_cross_nq77_nk130_d40", 0.15811388300841897, false},
                     {"b_nq130_nk77_d40_causal", 0.15811388300841897, true}};
  const Schedule schedule = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  for (const G& gc : cases) {
    const auto gold = [&](const char* what) { return read_npy_matrix(golden(std::string(gc.name) + "." + what + ".npy")); };
    ProblemSpec s;
    s.q_path = golden(std::string(gc.name) + ".q.npy");
    s.k_path = golden(std::string(gc.name) + ".k.npy");
    s.v_path = golden(std::string(gc.name) + ".v.npy");
    s.scale = gc.scale;
    s.options.mask.causal = gc.causal;
    s.M = 4096;
    s.schedule = schedule;
    s.d = gold("q").cols();
    const Problem p = make_problem(s);
    const Mat dO = gold("do");
    for (int64_t b : {int64_t(0), int64_t(16)}) {  // the paper's blocks at M = 4096, and 16 x 16
      INFO(gc.name << " " << schedule_name(schedule) << " block override " << b);
      const Tiling t = b ? make_tiling(p.nq, p.nk, p.d, fit_M(b, b, p.d), b, b) : make_tiling(p.nq, p.nk, p.d, p.M);
      const gpu::BackwardResult g = gpu_backward(p, t, dO, 0);
      REQUIRE(all_finite(g.dQ));
      REQUIRE(all_finite(g.dK));
      REQUIRE(all_finite(g.dV));
      CHECK(rel(to_mat(g.O, p.nq, p.d), gold("o")) <= kFloat64Tol);
      CHECK(rel(to_mat(g.dQ, p.nq, p.d), gold("dq")) <= kFloat64Tol);
      CHECK(rel(to_mat(g.dK, p.nk, p.d), gold("dk")) <= kFloat64Tol);
      CHECK(rel(to_mat(g.dV, p.nk, p.d), gold("dv")) <= kFloat64Tol);
    }
  }
}

TEST_CASE("GPU backward, batched heads with a key length per batch entry", "[gpu][backward][batch]") {
  REQUIRE_GPU_OR_SKIP();
  const Schedule schedule = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  const uint64_t seed = fresh_seed();
  INFO(schedule_name(schedule) << " seed " << seed);
  const gpu::Shape sh = gpu::make_shape(2, 3, 130, 200, 64);
  const RandomQKV in(sh, seed);
  const RandomQKV grad(gpu::make_shape(sh.B, sh.H, sh.nq, sh.nq, sh.d), seed + 1);  // its Q is dO
  const Tiling t = make_tiling(sh.nq, sh.nk, sh.d, fit_M(64, 64, 64), 64, 64);
  gpu::BackwardOptions o;
  o.features.mask.causal = true;
  o.features.kv_lens = {150, 77};
  const float scale = 0.125f;
  const gpu::BackwardResult g =
      schedule == Schedule::fa1   ? gpu::fa1_backward(in.Q.data(), in.K.data(), in.V.data(), grad.Q.data(), sh, scale, t, o)
      : schedule == Schedule::fa2 ? gpu::fa2_backward(in.Q.data(), in.K.data(), in.V.data(), grad.Q.data(), sh, scale, t, o)
                                  : gpu::standard_backward(in.Q.data(), in.K.data(), in.V.data(), grad.Q.data(), sh,
                                                           scale, o.features);
  REQUIRE(all_finite(g.dQ));
  REQUIRE(all_finite(g.dK));
  REQUIRE(all_finite(g.dV));
  for (int64_t head = 0; head < sh.heads(); ++head) {
    INFO("head " << head);
    Problem p;
    p.nq = sh.nq;
    p.nk = sh.nk;
    p.d = sh.d;
    p.scale = scale;
    p.Q = to_mat(in.Q, sh.nq, sh.d, head * sh.nq * sh.d);
    p.K = to_mat(in.K, sh.nk, sh.d, head * sh.nk * sh.d);
    p.V = to_mat(in.V, sh.nk, sh.d, head * sh.nk * sh.d);
    p.mask.causal = true;
    p.mask.offset = sh.nk - sh.nq;
    p.mask.kv_len = o.features.kv_lens[size_t(head / sh.H)];
    const Mat dO = to_mat(grad.Q, sh.nq, sh.d, head * sh.nq * sh.d);
    const ReferenceGrad ref = reference_backward(p.Q, p.K, p.V, dO, scale, p.mask);
    const TermScale ts(p, dO);
    const Mat dQ = to_mat(g.dQ, sh.nq, sh.d, head * sh.nq * sh.d);
    const Mat dK = to_mat(g.dK, sh.nk, sh.d, head * sh.nk * sh.d);
    const Mat dV = to_mat(g.dV, sh.nk, sh.d, head * sh.nk * sh.d);
    CHECK(grad_err(dQ, ref.dQ, ts.dq) <= kGradFloat64Tol);
    CHECK(grad_err(dK, ref.dK, ts.dk) <= kGradFloat64Tol);
    CHECK(grad_err(dV, ref.dV, 0) <= kGradFloat64Tol);
    check_unseen_rows_zero(p, dQ, dK, dV);
  }
}

TEST_CASE("GPU backward, small cases for compute-sanitizer", "[gpu][backward][sanitize]") {
  REQUIRE_GPU_OR_SKIP();
  // Every kernel once: fa1 and fa2 in both variants (masks, dropout, ragged), standard.
  check_backward(Case{70, 90, 64, 64, 64, 2, true, -1, -1, 80, 0.1}, Schedule::fa1, true);
  check_backward(Case{70, 90, 64, 64, 64, 2, true, -1, -1, 80, 0.1}, Schedule::fa2, false);
  check_backward(Case{70, 90, 32, 64, 64, 2, false, 9, 3}, Schedule::fa2, false);
  check_backward(Case{40, 50, 128, 32, 32, 2, true}, Schedule::fa2, false);
  check_backward(Case{37, 53, 24, 8, 13, 1, true, -1, -1, -1, 0.2}, Schedule::fa1, false);
  check_backward(Case{37, 53, 24, 8, 13, 1, true, -1, -1, -1, 0.2}, Schedule::fa2, false);
  check_backward(Case{37, 53, 24, 8, 13, 0, true, -1, -1, -1, 0.2}, Schedule::standard, false);
  // Variant 3 in each compiled shape (the lean shared-memory layout).
  check_backward(Case{70, 90, 64, 64, 64, 3, true, -1, -1, 80, 0.1}, Schedule::fa1, false);
  check_backward(Case{70, 90, 64, 64, 64, 3, true, -1, -1, 80, 0.1}, Schedule::fa2, false);
  check_backward(Case{70, 150, 64, 64, 128, 3, false, 9, 3}, Schedule::fa2, false);
  check_backward(Case{150, 70, 64, 128, 64, 3, true}, Schedule::fa2, false);
  check_backward(Case{40, 90, 128, 64, 64, 3, true, -1, -1, 80}, Schedule::fa2, false);
}

TEST_CASE("GPU backward bad input: one clear InputError each", "[gpu][backward][errors]") {
  REQUIRE_GPU_OR_SKIP();
  std::vector<float> x(64 * 64, 0.5f);
  gpu::Shape sh;
  sh.nq = sh.nk = sh.d = 64;
  const Tiling t = make_tiling(64, 64, 64, fit_M(64, 64, 64), 64, 64);
  gpu::BackwardOptions o;
  SECTION("16-bit storage") {
    o.features.dtype = Dtype::bf16;
    CHECK_THROWS_WITH(gpu::fa2_backward(x.data(), x.data(), x.data(), x.data(), sh, 0.125f, t, o),
                      Catch::Contains("float32 only"));
  }
  SECTION("variant 2 for sizes it is not compiled for") {
    o.variant = 2;
    const Tiling t8 = make_tiling(64, 64, 64, 4096, 8, 8);
    CHECK_THROWS_WITH(gpu::fa1_backward(x.data(), x.data(), x.data(), x.data(), sh, 0.125f, t8, o),
                      Catch::Contains("compiled only"));
  }
  SECTION("blocks over the shared-memory limit") {
    const Tiling big = make_tiling(64, 64, 64, fit_M(64, 512, 64), 64, 512);
    CHECK_THROWS_WITH(gpu::fa2_backward(x.data(), x.data(), x.data(), x.data(), sh, 0.125f, big, o),
                      Catch::Contains("shared memory"));
  }
  SECTION("a tiling of another shape") {
    const Tiling other = make_tiling(128, 64, 64, fit_M(64, 64, 64), 64, 64);
    CHECK_THROWS_AS(gpu::fa1_backward(x.data(), x.data(), x.data(), x.data(), sh, 0.125f, other, o), InputError);
  }
  SECTION("not enough device memory") {
    gpu::Shape big;
    big.H = 60000;
    big.nq = big.nk = 16384;
    big.d = 64;
    CHECK_THROWS_WITH(gpu::standard_backward(x.data(), x.data(), x.data(), x.data(), big, 0.125f),
                      Catch::Contains("not enough device memory"));
  }
}

// A report, not a test: after the last test case, the worst errors the tests above saw (each
// already checked against its tolerance where it was measured).
struct WorstErrorReport : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testRunEnded(const Catch::TestRunStats&) override {
    for (const auto& [what, e] : worst()) std::printf("backward worst error, %s: %.3g\n", what.c_str(), e);
  }
};
CATCH_REGISTER_LISTENER(WorstErrorReport)
