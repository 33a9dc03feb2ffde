// The FP8 forward on tensor cores [gpu][tc][fp8] (gpu/fp8_tc.h, gpu/fp8_kernel.cuh) against the
// CPU engine's FP8 emulation on the kernel's blocks (the same e4m3 values and scales) and float64:
// each O within the format's bound with the FP8 accumulation (core/fp8_bound.h), and within twice
// the CPU emulation's error plus the accumulation's share (app/cmd_fp8_tc.cpp's rule); lse close.
// Sweep: d = 64, 128; ragged Nq, Nk (not multiples of 128); Nq != Nk both ways; causal (with rows
// that keep no key when Nq > Nk) or not; a key length; per tensor and per block; the rotation on
// outliers. Several heads: each head equal bit for bit to the same head run alone (with one key
// length per batch entry). An oracle that shares no code with the kernel or the CPU engine: with
// one key, O is V's e4m3 value times its scale, rounded to bf16 (both roundings written here from
// the formats' bit fields).
#include "core/fp8.h"
#include "core/fp8_bound.h"
#include "core/input_error.h"
#include "core/run.h"
#include "gpu/fp8_tc.h"
#include "gpu/tc_launch.h"
#include "gpu_test_helpers.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <set>

using namespace flashstep;

namespace {

struct Fp8Case {
  int64_t nq, nk, d;
  bool causal = false;
  Fp8Scale scale = Fp8Scale::per_tensor;
  bool rotate = false;
  int64_t kv_len = -1;
  const char* pattern = "random";
};

Problem fp8_problem(const Fp8Case& c, uint64_t seed, int64_t Br, int64_t Bc) {
  ProblemSpec s;
  s.nq = c.nq;
  s.nk = c.nk;
  s.d = c.d;
  s.br = Br;
  s.bc = Bc;
  s.M = 4 * c.d * std::max(Br, Bc);
  s.seed = seed;
  s.pattern = c.pattern;
  s.schedule = Schedule::fa2;
  s.options.mask.causal = c.causal;
  s.options.mask.kv_len = c.kv_len;
  s.options.dtype = Dtype::fp8;
  s.options.fp8_scale = c.scale;
  s.options.rotate = c.rotate;
  return make_problem(s);
}

// The kernels this build holds: the default (0) and, with -DFLASHSTEP_LADDER=ON, the ladder's rungs;
// FLASHSTEP_FP8_VARIANTS="2" (a comma list) checks only those. A rung without a kernel at a d
// (2-5, 7, 10-16, 18, 20 at d = 64; 6, 8, 9, 17, 19, 21 at d = 128) is left out there.
std::vector<int> fp8_variants(int64_t d) {
  std::vector<int> v = gputest::variants_from_env("FLASHSTEP_FP8_VARIANTS"), out;
  if (v.empty())
    for (int k = 0; k <= gpu::tc::kFp8LadderLast; ++k) v.push_back(k);
  for (int k : v)
    if (gpu::fp8_tc_variant_built(d, k)) out.push_back(k);
  return out;
}

void check_against_cpu(const Fp8Case& c, int variant) {
  const uint64_t seed = gputest::fresh_seed();
  INFO("variant " << variant << " Nq " << c.nq << " Nk " << c.nk << " d " << c.d << " causal " << c.causal << " scale "
                  << fp8_scale_name(c.scale) << " rotate " << c.rotate << " kv_len " << c.kv_len << " " << c.pattern
                  << " seed " << seed);
  const gpu::Fp8TcTiles kt = gpu::fp8_tc_tiles(c.d, variant);
  const Problem p = fp8_problem(c, seed, kt.Br, kt.Bc);
  REQUIRE(p.p_dtype == Dtype::fp8);  // fa2 rounds P~ to e4m3 (core/problem.cpp)
  const Tiling t = make_tiling(p);
  REQUIRE(t.Br == kt.Br);
  REQUIRE(t.Bc == kt.Bc);
  RunOptions ro;
  ro.record = false;
  const Trace cpu = run_problem(p, t, ro);
  const gpu::Shape s = gpu::make_shape(1, 1, p.nq, p.nk, p.d);
  gpu::Fp8TcOptions o = gpu::fp8_tc_options(p);
  o.variant = variant;
  const gpu::Fp8TcInputs in = gpu::fp8_tc_quantise(p.Q.data(), p.K.data(), p.V.data(), s, o);
  const gpu::TcResult g = gpu::fp8_tc_forward(in, s, p.scale, o);
  REQUIRE(gputest::no_nan(g.O));
  REQUIRE(gputest::no_nan(g.lse));
  const Mat Og = gputest::to_mat(g.O, p.nq, p.d);

  const gpu::Fp8TcAccumulationShare a = gpu::fp8_tc_accumulation_share(in, p.nq, p.nk, p.d, p.scale, variant);
  const double g_ratio = fp8_bound_ratio(p, t, Og, a.acc), c_ratio = fp8_bound_ratio(p, t, cpu.O);
  const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale, p.mask);
  const ErrorStats eg = compare(Og, ref.O), ec = compare(cpu.O, ref.O), egc = compare(Og, cpu.O.cast<double>().eval());
  const double dS = a.dS, share = a.share;
  int64_t same = 0;
  for (int64_t k = 0; k < p.nq * p.d; ++k) same += g.O[size_t(k)] == cpu.O.data()[k];
  INFO("GPU vs CPU O max abs " << egc.max_abs << ", bit-identical " << same << " of " << p.nq * p.d
                               << "; vs float64 GPU " << eg.max_abs << " CPU " << ec.max_abs << " share " << share
                               << "; bound ratio GPU " << g_ratio << " CPU " << c_ratio);
  CHECK(g_ratio <= 1.0);
  CHECK(c_ratio <= 1.0);
  CHECK(eg.max_abs <= 2 * ec.max_abs + share);
  // lse: float32 on both sides, the scores moved by about dS each (the accumulation model's bound,
  // an estimate: core/verify.cpp's fp8_forward_check allows 4 dS, and so does this check).
  double lse_max_abs = 0;
  for (int64_t r = 0; r < p.nq; ++r) {
    const float a = g.lse[size_t(r)], b = cpu.lse(r);
    if (std::isinf(b)) {
      CHECK(a == b);  // a row that keeps no key: -inf on both sides
      continue;
    }
    lse_max_abs = std::max(lse_max_abs, double(std::fabs(a - b)));
  }
  CHECK(lse_max_abs <= 4 * dS + 1e-5 * std::max(1.0, double(cpu.lse.cwiseAbs().maxCoeff())));
}

// The e4m3 values from their bit fields (the formats' definitions; not core/fp8.h): every finite
// code's value.
std::vector<double> e4m3_values() {
  std::vector<double> v;
  for (int code = 0; code < 256; ++code) {
    const int e = (code >> 3) & 15, m = code & 7;
    if (e == 15 && m == 7) continue;  // NaN
    const double mag = e == 0 ? m * std::ldexp(1.0, -9) : (1 + m / 8.0) * std::ldexp(1.0, e - 7);
    v.push_back(code & 128 ? -mag : mag);
  }
  return v;
}
// Nearest e4m3 value by search (the test's inputs avoid exact ties).
double nearest_e4m3(double x) {
  static const std::vector<double> values = e4m3_values();
  double best = values[0];
  for (double v : values)
    if (std::fabs(v - x) < std::fabs(best - x)) best = v;
  return best;
}
// x rounded to bf16 (8 significant bits), nearest even, by the bits of the float.
float to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  u &= 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

}  // namespace

TEST_CASE("fp8_vt_key is a permutation of each group of 32 keys", "[tc][fp8]") {
  std::set<int> seen;
  for (int q = 0; q < 32; ++q) seen.insert(gpu::tc::fp8_vt_key(q));
  CHECK(seen.size() == 32);
  CHECK(*seen.begin() == 0);
  CHECK(*seen.rbegin() == 31);
  // Storage position 4 t + e of a half holds key 2 t + (e & 1) + 8 (e >> 1): lane t's accumulator columns.
  CHECK(gpu::tc::fp8_vt_key(5) == 3);    // t = 1, e = 1
  CHECK(gpu::tc::fp8_vt_key(6) == 10);   // t = 1, e = 2
  CHECK(gpu::tc::fp8_vt_key(31) == 31);  // t = 3, e = 3, + 16
}

// The layouts as the PTX ISA draws them: lane (g, t4) of a warp holds accumulator entry 4 n + e of
// a k32 step at row g + 8 (e >> 1), column (key) 8 n + 2 t4 + (e & 1) (figure "WGMMA .m64nNk32
// register fragment layout for accumulator matrix D"); the 8-bit A fragment's register r, byte b
// is row g + 8 (r & 1), k = 4 t4 + b + 16 (r >> 1) (figure "... for matrix A"). The kernel's
// byte (fp8_pack_entry) must be P~ of the key that V^T's row k holds (fp8_vt_key).
TEST_CASE("P~'s bytes in the A fragment meet V^T's key order", "[tc][fp8]") {
  for (int t4 = 0; t4 < 4; ++t4)
    for (int r = 0; r < 4; ++r)
      for (int b = 0; b < 4; ++b) {
        const int entry = gpu::tc::fp8_pack_entry(r, b), n = entry / 4, e = entry % 4;
        const int acc_row = 8 * (e >> 1), acc_key = 8 * n + 2 * t4 + (e & 1);
        const int frag_row = 8 * (r & 1), frag_k = 4 * t4 + b + 16 * (r >> 1);
        INFO("t4 " << t4 << " register " << r << " byte " << b);
        CHECK(acc_row == frag_row);
        CHECK(gpu::tc::fp8_vt_key(frag_k) == acc_key);
      }
}

TEST_CASE("FP8 forward on tensor cores: the CPU emulation and float64", "[gpu][tc][fp8]") {
  REQUIRE_GPU_OR_SKIP();
  const Fp8Case cases[] = {
      {128, 128, 64},
      {1, 1, 128},
      {200, 333, 64},
      {200, 333, 128},
      {333, 200, 128, true},
      {77, 1000, 64, true, Fp8Scale::per_block},
      {300, 515, 128, false, Fp8Scale::per_block},
      {515, 300, 64, true, Fp8Scale::per_tensor},
      {256, 700, 128, false, Fp8Scale::per_tensor, false, 450},
      {190, 401, 128, true, Fp8Scale::per_block, true, -1, "outliers"},
      {190, 401, 64, false, Fp8Scale::per_block, true, -1, "outliers"},
      {97, 257, 128, false, Fp8Scale::per_tensor, false, -1, "outliers"},
  };
  for (const Fp8Case& c : cases)
    for (int v : fp8_variants(c.d)) check_against_cpu(c, v);
}

TEST_CASE("FP8 forward on tensor cores: each head of a batch equals its own run", "[gpu][tc][fp8]") {
  REQUIRE_GPU_OR_SKIP();
  for (int64_t d : {64, 128})
    for (int variant : fp8_variants(d))
      for (bool causal : {false, true}) {
        const int64_t B = 2, H = 3, nq = 150, nk = 270;
        const uint64_t seed = gputest::fresh_seed();
        INFO("variant " << variant << " d " << d << " causal " << causal << " seed " << seed);
        std::mt19937_64 rng(seed);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        std::vector<float> Q(size_t(B * H * nq * d)), K(size_t(B * H * nk * d)), V(K.size());
        for (auto* x : {&Q, &K, &V})
          for (float& v : *x) v = nd(rng);
        gpu::Fp8TcOptions o;
        o.causal = causal;
        o.scale_mode = Fp8Scale::per_block;
        o.kv_lens = {200, 31};
        o.variant = variant;
        const gpu::Shape s = gpu::make_shape(B, H, nq, nk, d);
        const float tau = 1.0f / std::sqrt(float(d));
        const gpu::TcResult all = gpu::fp8_tc_forward(gpu::fp8_tc_quantise(Q.data(), K.data(), V.data(), s, o), s, tau, o);
        REQUIRE(gputest::no_nan(all.O));
        for (int64_t h = 0; h < B * H; ++h) {
          gpu::Fp8TcOptions oh = o;
          oh.kv_lens.clear();
          oh.kv_len = o.kv_lens[size_t(h / H)];
          const gpu::Shape s1 = gpu::make_shape(1, 1, nq, nk, d);
          const gpu::TcResult one = gpu::fp8_tc_forward(
              gpu::fp8_tc_quantise(Q.data() + h * nq * d, K.data() + h * nk * d, V.data() + h * nk * d, s1, oh), s1, tau, oh);
          INFO("head " << h);
          CHECK(std::memcmp(one.O.data(), all.O.data() + h * nq * d, size_t(nq * d) * sizeof(float)) == 0);
          CHECK(std::memcmp(one.lse.data(), all.lse.data() + h * nq, size_t(nq) * sizeof(float)) == 0);
        }
      }
}

TEST_CASE("FP8 forward on tensor cores: one key gives V's e4m3 value times its scale, in bf16", "[gpu][tc][fp8]") {
  REQUIRE_GPU_OR_SKIP();
  for (int64_t d : {64, 128})
    for (int variant : fp8_variants(d)) {
      const int64_t nq = 130;
      const uint64_t seed = gputest::fresh_seed();
      INFO("variant " << variant << " d " << d << " seed " << seed);
      std::mt19937_64 rng(seed);
      std::uniform_real_distribution<float> ud(-3.0f, 3.0f);
      std::vector<float> Q(static_cast<size_t>(nq * d)), K(static_cast<size_t>(d)), V(static_cast<size_t>(d));
      for (auto* x : {&Q, &K, &V})
        for (float& v : *x) v = ud(rng);
      gpu::Fp8TcOptions o;
      o.variant = variant;
      const gpu::Shape s = gpu::make_shape(1, 1, nq, 1, d);
      const gpu::TcResult g = gpu::fp8_tc_forward(gpu::fp8_tc_quantise(Q.data(), K.data(), V.data(), s, o), s, 0.125f, o);
      double amax = 0;
      for (float v : V) amax = std::max(amax, double(std::fabs(v)));
      const float sv = float(amax / 448.0);
      // The kernel's P~ = exp2 of the score minus its own rounded maximum, and l, may be 1 - 2^-24
      // rather than 1: a value within that of a bf16 rounding boundary may round to its neighbour.
      for (int64_t c = 0; c < d; ++c) {
        const float x = float(nearest_e4m3(double(V[size_t(c)] / sv))) * sv;
        const float expect = to_bf16(x), lo = to_bf16(x * (1 - 1e-6f)), hi = to_bf16(x * (1 + 1e-6f));
        INFO("column " << c << " v " << V[size_t(c)] << " expect " << expect);
        for (int64_t r = 0; r < nq; ++r) {
          const float o = g.O[size_t(r * d + c)];
          CHECK((o == expect || o == lo || o == hi));
        }
      }
    }
}

// The variants without a GPU: the default's tiles, each rung's where the build holds the ladder,
// and one error line for a rung left out of this build or a variant with no kernel at d.
TEST_CASE("FP8 forward variants: the ladder's rungs named, others refused", "[tc][fp8]") {
  if (!gpu::fp8_tc_variant_built(128, 0)) {  // no sm_90a kernels in this build
    REQUIRE_THROWS_AS(gpu::fp8_tc_tiles(128), InputError);
    return;
  }
  CHECK(gpu::fp8_tc_tiles(128).Bc == 192);
  CHECK(gpu::fp8_tc_tiles(64).Bc == 128);
  CHECK(gpu::fp8_tc_tiles(64).Br == 192);
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(64, 2), Catch::Contains("no FP8 forward variant 2 for d = 64"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(64, 2), Catch::Contains("the ladder's rung 1 at d = 64 and 128, 6, 8, 9, 17, 19 "
                                                                "and 21 at d = 64, 2-5, 7, 10-16, 18 and 20 at d = 128)"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(128, 6), Catch::Contains("no FP8 forward variant 6 for d = 128"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(64, 7), Catch::Contains("no FP8 forward variant 7 for d = 64"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(128, 8), Catch::Contains("no FP8 forward variant 8 for d = 128"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(64, 10), Catch::Contains("no FP8 forward variant 10 for d = 64"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(64, 12), Catch::Contains("no FP8 forward variant 12 for d = 64"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(64, 14), Catch::Contains("no FP8 forward variant 14 for d = 64"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(64, 15), Catch::Contains("no FP8 forward variant 15 for d = 64"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(64, 16), Catch::Contains("no FP8 forward variant 16 for d = 64"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(128, 17), Catch::Contains("no FP8 forward variant 17 for d = 128"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(64, 18), Catch::Contains("no FP8 forward variant 18 for d = 64"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(128, 19), Catch::Contains("no FP8 forward variant 19 for d = 128"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(64, 20), Catch::Contains("no FP8 forward variant 20 for d = 64"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(128, 21), Catch::Contains("no FP8 forward variant 21 for d = 128"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(128, 22), Catch::Contains("no FP8 forward variant 22"));
  REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(128, -1), Catch::Contains("no FP8 forward variant -1"));
  if (gpu::fp8_tc_variant_built(128, 2)) {  // a ladder build
    CHECK(gpu::fp8_tc_tiles(128, 2).Bc == 192);
    CHECK(gpu::fp8_tc_tiles(128, 3).Bc == 192);
    CHECK(gpu::fp8_tc_tiles(64, 1).Bc == 128);
    CHECK(gpu::fp8_tc_tiles(128, 4).Bc == 128);
    CHECK(gpu::fp8_tc_tiles(128, 5).Bc == 192);
    CHECK(gpu::fp8_tc_tiles(64, 6).Br == 192);
    CHECK(gpu::fp8_tc_tiles(128, 7).Bc == 192);
    CHECK(gpu::fp8_tc_tiles(64, 8).Br == 128);
    CHECK(gpu::fp8_tc_tiles(64, 9).Br == 128);
    CHECK(gpu::fp8_tc_tiles(128, 10).Bc == 128);
    CHECK(gpu::fp8_tc_tiles(128, 11).Bc == 192);
    CHECK(gpu::fp8_tc_tiles(128, 12).Bc == 64);
    CHECK(gpu::fp8_tc_tiles(128, 13).Br == 192);
    CHECK(gpu::fp8_tc_tiles(128, 14).Bc == 128);
    CHECK(gpu::fp8_tc_tiles(128, 15).Bc == 64);
    CHECK((gpu::fp8_tc_tiles(128, 16).Bc == 192 && gpu::fp8_tc_tiles(128, 16).stages == 3));
    CHECK((gpu::fp8_tc_tiles(64, 17).Br == 192 && gpu::fp8_tc_tiles(64, 17).stages == 3));
    CHECK((gpu::fp8_tc_tiles(128, 18).Bc == 224 && gpu::fp8_tc_tiles(128, 18).Br == 128));
    CHECK((gpu::fp8_tc_tiles(64, 19).Bc == 160 && gpu::fp8_tc_tiles(64, 19).Br == 192));
    CHECK((gpu::fp8_tc_tiles(128, 20).Bc == 192 && gpu::fp8_tc_tiles(128, 20).Br == 128));
    CHECK((gpu::fp8_tc_tiles(64, 21).Bc == 128 && gpu::fp8_tc_tiles(64, 21).Br == 192));
  } else {
    for (int v : {1, 2, 3, 4, 5, 7, 10, 11, 12, 13, 14, 15, 16, 18, 20}) REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(128, v), Catch::Contains("rung of the kernel ladder"));
    for (int v : {1, 17, 19, 21}) REQUIRE_THROWS_WITH(gpu::fp8_tc_tiles(64, v), Catch::Contains("rung of the kernel ladder"));
  }
}
