// FlashAttention-2's backward on tensor cores [gpu][tc][tc_backward]: every backward variant,
// bf16 and fp16, d = 64 and 128, against the float64 gradients and against the CPU engine's
// emulation of its rounding (--p-dtype: P and dS rounded to the type before their matmuls),
// each element within the componentwise bound of core/backward_bound.h (one engine: B from
// float64, plus u |dQ| for the kernel's final rounding of dQ; two engines: 2 B apart). Shapes:
// ragged, Nq != Nk both ways, tiny, causal with rows that keep no key (their dQ must be exactly
// 0, the bound there is 0), key padding (one length, per batch entry with 0 keys), several heads.
// Fresh random inputs each run (the seed is printed on failure); outputs poisoned before each run.
#include "core/backward.h"
#include "core/backward_bound.h"
#include "gpu/backward_tc.h"
#include "gpu/variant_list.h"
#include "gpu_test_helpers.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <random>
#include <vector>

using namespace flashstep;
using namespace flashstep::gpu;

namespace {

// Every backward variant; FLASHSTEP_TC_BWD_VARIANTS="2,4" (a comma list) checks only those, so
// that a device call (compute-sanitizer above all) can take the ones it needs.
std::vector<int> every_backward_variant() {
  std::vector<int> v = gputest::variants_from_env("FLASHSTEP_TC_BWD_VARIANTS");
  if (!v.empty()) return v;
  for (int k = 1; k <= tc_backward_variant_count(); ++k) v.push_back(k);
  return v;
}

std::vector<float> normal_rounded(int64_t n, Dtype t, std::mt19937_64& rng, float sd = 1.0f) {
  std::normal_distribution<float> dist(0.0f, sd);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& e : x) e = round_to(t, dist(rng));
  return x;
}

struct Shape4 {
  int64_t B, H, nq, nk;
  bool causal;
  std::vector<int64_t> kv_lens;
  int64_t kv_len = -1;
};

// One case on the GPU and, head by head, on the CPU engine; every element within its bound.
void check_case(const Shape4& c, Dtype t, int64_t d, int variant) {
  const uint64_t seed = gputest::fresh_seed();
  INFO("B " << c.B << " H " << c.H << " Nq " << c.nq << " Nk " << c.nk << " d " << d << " " << dtype_name(t) << " variant "
                 << variant << " seed " << seed);
  std::mt19937_64 rng(seed);
  const Shape s = make_shape(c.B, c.H, c.nq, c.nk, d);
  const int64_t nq = c.nq, nk = c.nk, hq = nq * d, hk = nk * d;
  const std::vector<float> Q = normal_rounded(s.heads() * hq, t, rng), K = normal_rounded(s.heads() * hk, t, rng),
                           V = normal_rounded(s.heads() * hk, t, rng), dO = normal_rounded(s.heads() * hq, t, rng);
  const float tau = float(1.0 / std::sqrt(double(d)));
  TcBackwardOptions o;
  o.forward.dtype = t;
  o.forward.causal = c.causal;
  o.forward.kv_lens = c.kv_lens;
  o.forward.kv_len = c.kv_len;
  o.variant = variant;
  const TcBackwardResult g = fa2_tc_backward(Q.data(), K.data(), V.data(), dO.data(), s, tau, o);
  REQUIRE(g.variant == variant);
  const TcBackwardVariant kv = tc_backward_variant(variant, d);
  for (int64_t h = 0; h < s.heads(); ++h) {
    ProblemSpec ps;
    ps.nq = nq;
    ps.nk = nk;
    ps.d = d;
    ps.br = kv.Br;
    ps.bc = kv.Bc;
    ps.M = 4 * d * std::max(kv.Br, kv.Bc);
    ps.scale = tau;
    ps.schedule = Schedule::fa2;
    ps.options.dtype = t;
    ps.options.p_dtype = t;
    ps.options.mask.causal = c.causal;
    ps.options.mask.kv_len = c.kv_lens.empty() ? c.kv_len : c.kv_lens[size_t(h / c.H)];
    Problem p = make_problem(ps);
    p.Q = gputest::to_mat(Q, nq, d, h * hq);
    p.K = gputest::to_mat(K, nk, d, h * hk);
    p.V = gputest::to_mat(V, nk, d, h * hk);
    const Mat dOh = gputest::to_mat(dO, nq, d, h * hq);
    p.ds_from_rounded_p = kv.ds_from_rounded_p;  // the CPU engine emulates the variant's dS
    RunOptions opt;
    opt.record = false;
    opt.dO = &dOh;
    const Trace cpu = run_problem(p, make_tiling(p), opt);
    const GradBound b = rounded_backward_bound(p.Q, p.K, p.V, dOh, tau, p.mask, t, kv.ds_from_rounded_p);
    const Mat gq = gputest::to_mat(g.dQ, nq, d, h * hq), gk = gputest::to_mat(g.dK, nk, d, h * hk),
              gv = gputest::to_mat(g.dV, nk, d, h * hk);
    const BoundCheck e_q = check_within(gq, b.dQ_exact, b.dQ, 1, &b.dQ_store),
                     e_k = check_within(gk, b.dK_exact, b.dK, 1), e_v = check_within(gv, b.dV_exact, b.dV, 1);
    const BoundCheck c_q = check_within(gq, cpu.dQ.cast<double>(), b.dQ, 2, &b.dQ_store),
                     c_k = check_within(gk, cpu.dK.cast<double>(), b.dK, 2),
                     c_v = check_within(gv, cpu.dV.cast<double>(), b.dV, 2);
    INFO("bwd v" << variant << " " << dtype_name(t) << " d=" << d << " " << nq << "x" << nk
                 << (c.causal ? " causal" : "") << " kv " << ps.options.mask.kv_len << " head " << h << " seed "
                 << seed << ": vs float64 worst/bound dQ " << e_q.worst_ratio << " dK " << e_k.worst_ratio << " dV "
                 << e_v.worst_ratio << "; vs CPU dQ " << c_q.worst_ratio << " dK " << c_k.worst_ratio << " dV "
                 << c_v.worst_ratio << " (max abs " << c_q.max_abs << ", " << c_k.max_abs << ", " << c_v.max_abs
                 << ")");
    CHECK(e_q.over == 0);
    CHECK(e_k.over == 0);
    CHECK(e_v.over == 0);
    CHECK(c_q.over == 0);
    CHECK(c_k.over == 0);
    CHECK(c_v.over == 0);
  }
}

// A wgmma variant on a GPU other than compute capability 9.0 is refused (InputError): not run.
bool runs_here(int variant, int64_t d) {
  if (!tc_backward_variant_compiled(variant, d)) return false;
  if (!tc_backward_variant(variant, d).sm90_only) return true;
  const DeviceInfo info = device_info();
  if (info.cc_major == 9 && info.cc_minor == 0) return true;
  WARN("backward variant " << variant << " (wgmma) not run: " << info.name << " is not compute capability 9.0");
  return false;
}

void check_variants(const Shape4& c, const std::vector<int>& variants) {
  for (Dtype t : {Dtype::bf16, Dtype::fp16})
    for (int64_t d : {64, 128})
      for (int v : variants)
        if (runs_here(v, d)) check_case(c, t, d, v);
}

void check_every_variant(const Shape4& c) { check_variants(c, every_backward_variant()); }

// Whether this build holds sm_90a code: a wgmma configuration at d = 128 (the default's, or a
// ladder rung's).
bool wgmma_built() {
  for (int v = 5; v <= tc_backward_variant_count(); ++v)
    if (tc_backward_variant_compiled(v, 128)) return true;
  return false;
}

// The wgmma rungs alone (variants 5-46, or those `all` names; sm_90a; FLASHSTEP_TC_BWD_VARIANTS="7"
// takes a subset): a failing case names the rung.
void check_wgmma(const Shape4& c, std::vector<int> all = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                                          22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36,
                                                          37, 38, 39, 40, 41, 42, 43, 44, 45, 46}) {
  if (!wgmma_built()) {
    if (gputest::gpu_required()) FAIL("FLASHSTEP_REQUIRE_GPU=1 but this build has no sm_90a code (wgmma backward)");
    SKIP_TEST("this build has no sm_90a code (wgmma backward)");
    return;
  }
  std::vector<int> v = gputest::variants_from_env("FLASHSTEP_TC_BWD_VARIANTS");
  // Those this build holds (runs_here): without the ladder, the defaults (bwd_config_sm90).
  check_variants(c, v.empty() ? all : v);
}

}  // namespace

TEST_CASE("tensor-core backward: bad requests give one clear InputError", "[tc][tc_backward]") {
  TcBackwardOptions o;
  const float tau = 0.125f;
  REQUIRE_THROWS_WITH(check_tc_backward_request(make_shape(1, 1, 64, 64, 96), tau, o),
                      Catch::Contains("d = 64 and d = 128 (got d = 96)"));
  o.forward.dtype = Dtype::fp32;
  REQUIRE_THROWS_WITH(check_tc_backward_request(make_shape(1, 1, 64, 64, 64), tau, o), Catch::Contains("not fp32"));
  o.forward.dtype = Dtype::bf16;
  o.variant = 3;
  REQUIRE_THROWS_WITH(check_tc_backward_request(make_shape(1, 1, 64, 64, 128), tau, o),
                      Catch::Contains("no tensor-core backward variant 3 for d = 128"));
  o.variant = 18;  // d = 64 only, in every build: not "a rung not built here"
  REQUIRE_THROWS_WITH(check_tc_backward_request(make_shape(1, 1, 64, 64, 128), tau, o),
                      Catch::Contains("no tensor-core backward variant 18 for d = 128"));
  o.variant = 19;  // Br = 128 at d = 64 only
  REQUIRE_THROWS_WITH(check_tc_backward_request(make_shape(1, 1, 64, 64, 128), tau, o),
                      Catch::Contains("no tensor-core backward variant 19 for d = 128"));
  o.variant = 21;  // 15's overlapped form at d = 128 only
  REQUIRE_THROWS_WITH(check_tc_backward_request(make_shape(1, 1, 64, 64, 64), tau, o),
                      Catch::Contains("no tensor-core backward variant 21 for d = 64"));
  o.variant = 99;
  REQUIRE_THROWS_WITH(check_tc_backward_request(make_shape(1, 1, 64, 64, 64), tau, o),
                      Catch::Contains("no tensor-core backward variant 99"));
  // The lists of the variants of one d alone, written out by hand.
  o.variant = 3;
  REQUIRE_THROWS_WITH(check_tc_backward_request(make_shape(1, 1, 64, 64, 128), tau, o),
                      Catch::Contains("3, 8, 18-20, 22, 26, 27, 31, 33, 35 and 39 are d = 64 only, 21, 23-25, 28-30, 32, "
                                      "34, 36-38 and 40-46 d = 128 only"));
}

TEST_CASE("variant lists: runs of three or more as ranges, the last after 'and'", "[tc][tc_backward]") {
  auto in = [](std::initializer_list<int> vs) {
    return [vs](int v) { return std::find(vs.begin(), vs.end(), v) != vs.end(); };
  };
  CHECK(variant_list(10, in({})) == "");
  CHECK(variant_list(10, in({7})) == "7");
  CHECK(variant_list(10, in({3, 4})) == "3 and 4");
  CHECK(variant_list(10, in({2, 3, 4, 5})) == "2-5");
  CHECK(variant_list(10, in({1, 2, 3, 5, 6, 8, 9, 10})) == "1-3, 5, 6 and 8-10");
  CHECK(variant_list(5, in({5, 6, 7})) == "5");  // nothing past `last`
}

TEST_CASE("tensor-core backward: the wgmma rung's tiles fit a Hopper SM", "[tc][tc_backward]") {
  if (!wgmma_built()) {
    if (gputest::gpu_required()) FAIL("FLASHSTEP_REQUIRE_GPU=1 but this build has no sm_90a code (wgmma backward)");
    SKIP_TEST("this build has no sm_90a code (wgmma backward)");
    return;
  }
  REQUIRE(tc_backward_variant_count() == 46);
  for (int variant : {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46})
    for (int64_t d : {64, 128}) {
      if ((variant == 8 || variant == 18 || variant == 19 || variant == 20 || variant == 22 || variant == 26 ||
           variant == 27 || variant == 31 || variant == 33 || variant == 35 || variant == 39) &&
          d == 128) {
        CHECK_FALSE(tc_backward_variant_compiled(variant, 128));  // v8, v18-v20, v22, v26, v27, v31, v33, v35, v39: d = 64
        continue;
      }
      if ((variant == 21 || variant == 23 || variant == 24 || variant == 25 || variant == 28 || variant == 29 ||
           variant == 30 || variant == 32 || variant == 34 || variant == 36 || variant == 37 || variant == 38 ||
           variant == 40 || variant == 41 || variant == 42 || variant == 43 ||
           variant == 44 || variant == 45 || variant == 46) &&
          d == 64) {
        CHECK_FALSE(tc_backward_variant_compiled(variant, 64));  // v21, v23-v25, v28-v30, v32, v34, v36-v38, v40-v46: d = 128
        continue;
      }
      if (!tc_backward_variant_compiled(variant, d)) {  // a ladder rung, not in this build
        REQUIRE_THROWS_WITH(tc_backward_variant(variant, d), Catch::Contains("rung of the kernel ladder"));
        continue;
      }
      const TcBackwardVariant v = tc_backward_variant(variant, d);
      INFO("v" << variant << ", d = " << d << ": " << v.smem_bytes << " bytes of shared memory");
      CHECK(v.sm90_only);
      CHECK(v.Br == (variant == 19 || variant == 20 || variant == 22 || variant == 26 || variant == 27 || variant == 31 || variant == 33 || variant == 35 || variant == 39 ? 128 : 64));  // FlashAttention-3's Br at d = 64
      CHECK(v.Bc == 128);
      CHECK(v.warps == (variant >= 13 ? 12 : 8));  // 13-46: a producer warpgroup beside v12's two
      CHECK(v.smem_bytes <= 227 * 1024);  // the H100 / H200 opt-in limit per block
      CHECK(v.ds_from_rounded_p == (variant == 46));  // 46 alone takes dS from P's rounded fragments
    }
  CHECK_FALSE(tc_backward_variant(2, 64).sm90_only);
  REQUIRE_THROWS_AS(tc_backward_variant(5, 96), InputError);
}

TEST_CASE("tensor-core backward: small shapes, every variant [small]", "[gpu][tc][tc_backward][small]") {
  REQUIRE_GPU_OR_SKIP();
  check_every_variant({1, 1, 17, 200, false, {}});
  check_every_variant({1, 1, 130, 70, true, {}});      // rows 0-59 keep no key
  check_every_variant({2, 1, 90, 140, true, {100, 0}});  // a batch entry with no keys at all
}

TEST_CASE("tensor-core backward: ragged, Nq != Nk, tiny", "[gpu][tc][tc_backward]") {
  REQUIRE_GPU_OR_SKIP();
  check_every_variant({1, 1, 300, 517, false, {}});
  check_every_variant({1, 1, 517, 300, false, {}});
  check_every_variant({1, 1, 1, 1, false, {}});
  check_every_variant({1, 1, 3, 3, false, {}});
  check_every_variant({1, 2, 256, 256, false, {}});
}

TEST_CASE("tensor-core backward: causal and key padding", "[gpu][tc][tc_backward]") {
  REQUIRE_GPU_OR_SKIP();
  check_every_variant({1, 1, 517, 300, true, {}});  // 217 rows keep no key
  check_every_variant({1, 1, 300, 517, true, {}});
  check_every_variant({1, 1, 333, 333, false, {}, 250});
  check_every_variant({3, 2, 200, 400, false, {400, 1, 0}});
  check_every_variant({2, 1, 300, 300, true, {131, 300}});
  check_every_variant({1, 1, 1000, 1000, true, {}});
}

// Variants 5-7 (gpu/fa2_bwd_wgmma.cu): Bc 128 as two warpgroups of 64 keys, Br 64; v5's dQ
// split over d columns (d = 128) or over the warpgroups' keys (d = 64), v6's on mma.sync, v7's
// added to HBM by the bulk copy engine from alternating swizzled slabs (its ragged last Q block
// clipped; its accumulator's layout undone by the conversion), v8's (d = 64) one bulk add per
// warpgroup with the warpgroups apart within a Q block. The shapes aim at the edges: a
// warpgroup whose 64 keys no row of Q_i keeps (its dS^T rows zeroed, its dQ steps cut), Q blocks
// and K/V blocks cut short by Nq, Nk, the key length and the causal diagonal, several K/V blocks
// adding into one dQ row, rows that keep no key.
TEST_CASE("tensor-core backward, wgmma rungs: small shapes [small]", "[gpu][tc][tc_backward][bwd_wgmma][small]") {
  REQUIRE_GPU_OR_SKIP();
  check_wgmma({1, 1, 17, 200, false, {}});
  check_wgmma({1, 1, 130, 70, true, {}});        // rows 0-59 keep no key
  check_wgmma({2, 1, 90, 140, true, {100, 0}});  // a batch entry with no keys at all
  check_wgmma({1, 1, 150, 256, false, {}, 60});  // block 0's second warpgroup: no key kept
}

TEST_CASE("tensor-core backward, wgmma rungs: ragged, Nq != Nk, tiny", "[gpu][tc][tc_backward][bwd_wgmma]") {
  REQUIRE_GPU_OR_SKIP();
  check_wgmma({1, 1, 300, 517, false, {}});
  check_wgmma({1, 1, 517, 300, false, {}});
  check_wgmma({1, 1, 1, 1, false, {}});
  check_wgmma({1, 1, 3, 3, false, {}});
  check_wgmma({1, 2, 256, 256, false, {}});
  check_wgmma({1, 1, 65, 1000, false, {}});  // eight K/V blocks add into each dQ row
}

// More (head, K/V block) tiles than the H200's 132 SMs, for the persistent rungs (38-40), where a
// thread block takes two or more tiles in turn: one Q block a tile (fewer than the 3-stage ring)
// with whole batch entries and K/V blocks past a key length keeping no key between tiles that
// keep some, and tiles of 1-5 Q blocks. The defaults on the same shapes are the controls.
TEST_CASE("tensor-core backward, wgmma rungs: causal and key padding, more tiles than SMs",
          "[gpu][tc][tc_backward][bwd_wgmma]") {
  REQUIRE_GPU_OR_SKIP();
  const std::vector<int> persistent = {26, 46, 37, 38, 39, 40};  // the defaults and 37-40 (without FLASHSTEP_TC_BWD_VARIANTS)
  check_wgmma({3, 16, 64, 1000, true, {1000, 0, 300}}, persistent);  // 384 tiles of 8 per head
  check_wgmma({2, 16, 300, 517, true, {}}, persistent);              // 160 tiles of 5 per head
}

TEST_CASE("tensor-core backward, wgmma rungs: causal and key padding", "[gpu][tc][tc_backward][bwd_wgmma]") {
  REQUIRE_GPU_OR_SKIP();
  check_wgmma({1, 1, 517, 300, true, {}});  // 217 rows keep no key
  check_wgmma({1, 1, 300, 517, true, {}});
  check_wgmma({1, 1, 333, 333, false, {}, 250});
  check_wgmma({3, 2, 200, 400, false, {400, 1, 0}});
  check_wgmma({2, 1, 300, 300, true, {131, 300}});
  check_wgmma({1, 1, 1000, 1000, true, {}});
}
