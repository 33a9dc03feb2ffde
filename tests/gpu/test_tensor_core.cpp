// The tensor-core path [gpu][tc]: every variant of the FlashAttention-2 ladder, bf16
// and fp16, d = 64 and 128, against core's float64 reference with gpu/tc_check.h's rule (at
// most twice the error of standard attention in the same precision, and under the derived
// bound 2 u max|V|; lse to 2e-5). Shapes: ragged (not multiples of Br or Bc), Nq != Nk both
// ways, tiny N (1, 3, 17), causal with fully masked rows (Nq > Nk), key padding per batch entry
// including 0 keys. Fresh random inputs each run (the seed is printed on failure); outputs are
// poisoned with NaN before every run. Without a GPU the [gpu] cases print "SKIPPED: <reason>";
// the bad-request case needs no GPU.
#include "gpu/tc_check.h"
#include "gpu/tensor_core.h"
#include "gpu_test_helpers.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

using namespace flashstep;
using namespace flashstep::gpu;

namespace {

// The ladder's variants and the Bc sweep's kernels; FLASHSTEP_TC_VARIANTS="13" (a comma list)
// checks only those, so that a device call can test one new rung in seconds.
std::vector<int> every_variant() {
  std::vector<int> v = gputest::variants_from_env("FLASHSTEP_TC_VARIANTS");
  if (!v.empty()) return v;
  for (int k = 1; k <= tc_variant_count(); ++k) v.push_back(k);
  for (int k : tc_bc_sweep_variants()) v.push_back(k);
  return v;
}

// Every variant this build holds (the defaults; with the ladder, every rung), both types, both
// d, one shape and mask: each within the rule.
void check_all(int64_t B, int64_t H, int64_t nq, int64_t nk, bool causal,
               const std::vector<int64_t>& kv_lens = {}, int64_t kv_len = -1) {
  for (Dtype t : {Dtype::bf16, Dtype::fp16})
    for (int64_t d : {64, 128})
      for (int v : every_variant()) {
        if (!tc_variant_built(v, d)) continue;
        TcOptions o;
        o.dtype = t;
        o.variant = v;
        o.causal = causal;
        o.kv_lens = kv_lens;
        o.kv_len = kv_len;
        const uint64_t seed = gputest::fresh_seed();
        const TcAccuracy a = tc_accuracy(make_shape(B, H, nq, nk, d), o, seed);
        INFO("v" << v << " " << dtype_name(t) << " d=" << d << " " << nq << "x" << nk
                 << (causal ? " causal" : "") << " seed " << seed << ": " << a.describe());
        CHECK(a.variant == v);
        CHECK(a.ok());
      }
}

}  // namespace

TEST_CASE("tensor cores: bad requests give one clear InputError", "[tc]") {
  TcOptions o;
  const float tau = 0.125f;
  REQUIRE_THROWS_WITH(check_tc_request(make_shape(1, 1, 64, 64, 96), tau, o),
                      Catch::Contains("d = 64 and d = 128 (got d = 96)"));
  o.dtype = Dtype::fp32;
  REQUIRE_THROWS_WITH(check_tc_request(make_shape(1, 1, 64, 64, 64), tau, o), Catch::Contains("not fp32"));
  o.dtype = Dtype::fp16;
  o.kv_len = 65;
  REQUIRE_THROWS_WITH(check_tc_request(make_shape(1, 1, 64, 64, 64), tau, o), Catch::Contains("kv_len"));
  o.kv_len = -1;
  o.kv_lens = {3};
  REQUIRE_THROWS_WITH(check_tc_request(make_shape(2, 1, 64, 64, 64), tau, o),
                      Catch::Contains("one length per batch entry"));
  o.kv_lens.clear();
  o.variant = 99;
  REQUIRE_THROWS_AS(check_tc_request(make_shape(1, 1, 64, 64, 64), tau, o), InputError);
  o.variant = 0;
  REQUIRE_THROWS_AS(check_tc_request(make_shape(1, 1, 0, 64, 64), tau, o), InputError);
  REQUIRE_THROWS_AS(check_tc_request(make_shape(1, 1, 64, 64, 64), -1.0f, o), InputError);
  REQUIRE_THROWS_AS(tc_variant(1, 32), InputError);
  if (tc_variant_built(13, 128)) {  // a ladder build with sm_90a: the wgmma rungs, d = 64 and 128 only
    CHECK(tc_variant(13, 128).Br == 128);
    CHECK(tc_variant(14, 64).Bc == 128);
    REQUIRE_THROWS_AS(tc_variant(13, 96), InputError);
  } else {  // a default build: a rung of the ladder is named as one
    REQUIRE_THROWS_WITH(tc_variant(13, 128), Catch::Contains("rung of the kernel ladder"));
  }
  CHECK(tc_variant_built(11, 64));  // the mma.sync default is in every build
  CHECK(tc_variant_built(11, 128));
  if (!gpu::available()) CHECK(tc_default_variant(64) == 11);  // the wgmma rungs need an sm_90 GPU
}

namespace {

// Whether the process has a library mapped, as the kernel lists the mappings (not the loader's
// own bookkeeping).
bool library_mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(name) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("tensor cores: cuBLAS opens on first use, with the functions standard attention calls", "[tc]") {
  // Not linked (a start of the program would load libcublasLt and run its initialisers, about
  // 0.35 s): opened with its three functions bound, no GPU needed. tests/check_startup_libs.sh
  // checks that a start of flashstep loads none of it.
  REQUIRE_NOTHROW(open_cublas());
  CHECK(library_mapped("libcublas.so"));
  CHECK(library_mapped("libcublasLt.so"));
}

TEST_CASE("tensor cores: ragged shapes, Nq != Nk, tiny N, within the rule", "[gpu][tc][ragged]") {
  REQUIRE_GPU_OR_SKIP();
  check_all(2, 3, 300, 517, false);
  check_all(1, 2, 517, 300, false);
  check_all(1, 1, 1, 1, false);
  check_all(1, 1, 3, 3, false);
  check_all(1, 2, 17, 17, false);
  check_all(1, 1, 17, 200, false);
  check_all(1, 2, 256, 256, false);  // exact multiples of every Br and Bc up to 128
  check_all(1, 1, 100, 352, false);  // two whole blocks of Bc 176 (v20, v21 at d = 128)
  check_all(1, 1, 100, 384, true);   // two whole blocks of Bc 192 (d = 64), causal
}

TEST_CASE("tensor cores: causal (bottom-right) with block skipping, within the rule", "[gpu][tc][causal]") {
  REQUIRE_GPU_OR_SKIP();
  check_all(1, 2, 1000, 1000, true);
  check_all(2, 1, 517, 300, true);  // Nq > Nk: the first 217 rows keep no key (O = 0, lse = -inf)
  check_all(1, 2, 300, 517, true);
  check_all(1, 1, 1, 1, true);
  check_all(1, 1, 3, 3, true);
  check_all(1, 1, 17, 17, true);
}

TEST_CASE("tensor cores: key padding, one length and per batch entry, within the rule", "[gpu][tc][padding]") {
  REQUIRE_GPU_OR_SKIP();
  check_all(1, 2, 200, 333, false, {}, 250);
  check_all(3, 2, 150, 400, false, {400, 1, 0});  // all keys, one key, none
  check_all(2, 2, 300, 300, true, {131, 300});
}

TEST_CASE("tensor cores: 16-bit inputs give the same bits as float32 inputs rounded on upload",
          "[gpu][tc]") {
  REQUIRE_GPU_OR_SKIP();
  const Shape s = make_shape(1, 2, 190, 250, 64);
  const uint64_t seed = gputest::fresh_seed();
  INFO("seed " << seed);
  gputest::RandomQKV x(s, seed);
  for (Dtype t : {Dtype::bf16, Dtype::fp16}) {
    TcOptions o;
    o.dtype = t;
    o.causal = true;
    for (auto* v : {&x.Q, &x.K, &x.V}) round_in_place(t, v->data(), int64_t(v->size()));
    // The bits of a value that is exactly representable in the type.
    auto bits = [t](const std::vector<float>& v) {
      std::vector<uint16_t> b(v.size());
      for (size_t k = 0; k < v.size(); ++k) {
        uint32_t u;
        std::memcpy(&u, &v[k], 4);
        if (t == Dtype::bf16) {
          b[k] = uint16_t(u >> 16);
        } else {
          const _Float16 hv = static_cast<_Float16>(v[k]);
          std::memcpy(&b[k], &hv, 2);
        }
      }
      return b;
    };
    const float tau = 0.125f;
    const TcResult a = fa2_tc_forward(x.Q.data(), x.K.data(), x.V.data(), s, tau, o);
    const TcResult b = fa2_tc_forward_bits(bits(x.Q).data(), bits(x.K).data(), bits(x.V).data(), s, tau, o);
    REQUIRE(a.O.size() == b.O.size());
    CHECK(std::memcmp(a.O.data(), b.O.data(), a.O.size() * 4) == 0);
    CHECK(std::memcmp(a.lse.data(), b.lse.data(), a.lse.size() * 4) == 0);
    CHECK(gputest::no_nan(a.O));
    // O is rounded once, at the end: every value is exactly one of the type.
    bool representable = true;
    for (float v : a.O) representable = representable && round_to(t, v) == v;
    CHECK(representable);
  }
}

// The producer's ring of K/V stages (v15, v16) wraps around many times; the TMA boxes of a
// head's last, ragged block must read zeros, not the next head's rows; rows of whole warpgroups
// past Nq; causal with Nq < Nk and Nq > Nk.
TEST_CASE("tensor cores: many K/V blocks and heads, ragged at the head boundary", "[gpu][tc][ring]") {
  REQUIRE_GPU_OR_SKIP();
  check_all(2, 3, 1100, 1300, false);
  check_all(1, 3, 70, 1300, false, {}, 1201);
  check_all(2, 2, 700, 1300, true);
  check_all(1, 2, 1300, 700, true);
}

// More (Q block, head) tiles than the H200 has SMs (132): a persistent block (both Hopper
// defaults are persistent; Br 192 at d = 64, Br 128 with Bc 192 at d = 128) runs several tiles,
// its K/V ring and its Q buffer carried from one tile to the next; tiles that keep no key (causal
// Nq > Nk, a batch entry of 0 keys) sit between tiles that do. Nk = 400 and 300 (4 and 3 K/V
// blocks of Bc = 128, 3 and 2 of Bc = 192: more than the ring's 2 stages in the first shape, and
// ragged last blocks) keep the float64 reference of every check cheaper than the [ring] case's.
struct PersistentCase {
  int64_t B, H, nq, nk;
  bool causal;
  std::vector<int64_t> kv_lens;
};
const PersistentCase kPersistentCases[] = {
    {3, 8, 1000, 400, false, {}},          // 192 tiles of Br = 128, 144 of Br = 192; 4 K/V blocks (3 at Bc 192)
    {3, 8, 1000, 300, true, {}},           // rows 0-699 keep no key: tiles of 0, 1, 2, 3 blocks
    // 345 tiles of Br 128, 276 of Br 192: heads of 3, 0, 2 blocks (Bc 128) in that order, so
    // some persistent block runs a tile that keeps no key between two that keep some.
    {3, 23, 600, 300, false, {300, 0, 133}},
};

TEST_CASE("tensor cores: more tiles than SMs, with tiles that keep no key", "[gpu][tc][persistent]") {
  REQUIRE_GPU_OR_SKIP();
  for (const PersistentCase& c : kPersistentCases) check_all(c.B, c.H, c.nq, c.nk, c.causal, c.kv_lens);
}

// What the case above claims of its shapes, for the tiles of the persistent defaults (no GPU needed): more
// tiles than 132 SMs at d = 64 and 128; in some shape, a tile that keeps more K/V blocks than the
// ring's 2 stages; in the causal and key-length shapes, tiles that keep no key; in the
// key-length shape, a persistent block of a 132-block grid that runs a tile keeping no key
// between two that keep some (the non-causal order: block b runs tiles b, b + 132, ..., tile t is
// Q block t mod Tr of head t / Tr). A tile keeps the blocks up to the last key its last row keeps.
TEST_CASE("tensor cores: the persistent case's shapes have the tiles it needs", "[tc]") {
  for (int64_t d : {64, 128}) {
    const int variant = tc_hopper_default_variant(d, false);
    if (variant == 0 || !tc_variant_built(variant, d)) {
      if (gputest::gpu_required()) FAIL("FLASHSTEP_REQUIRE_GPU=1 but this build has no sm_90a code");
      SKIP_TEST("this build has no sm_90a code");
      return;
    }
    {
      const TcVariant v = tc_variant(variant, d);
      int64_t deepest = 0;  // the most K/V blocks one tile keeps, over the shapes
      for (const PersistentCase& c : kPersistentCases) {
        INFO("v" << variant << ", d = " << d << ", " << c.nq << " x " << c.nk << (c.causal ? " causal" : ""));
        const int64_t Tr = (c.nq + v.Br - 1) / v.Br, tiles = Tr * c.B * c.H, G = 132;
        std::vector<int64_t> blocks;  // kept K/V blocks of tile h Tr + i
        for (int64_t h = 0; h < c.B * c.H; ++h)
          for (int64_t i = 0; i < Tr; ++i) {
            const int64_t kv = c.kv_lens.empty() ? c.nk : c.kv_lens[size_t(h / c.H)];
            const int64_t last_row = std::min((i + 1) * v.Br, c.nq) - 1;
            const int64_t hi = c.causal ? std::min(kv - 1, last_row + c.nk - c.nq) : kv - 1;
            blocks.push_back(hi < 0 ? 0 : hi / v.Bc + 1);
          }
        bool sandwiched = false;
        for (int64_t t = G; t + G < tiles; ++t)
          sandwiched = sandwiched || (blocks[size_t(t)] == 0 && blocks[size_t(t - G)] > 0 && blocks[size_t(t + G)] > 0);
        CHECK(tiles > G);
        deepest = std::max(deepest, *std::max_element(blocks.begin(), blocks.end()));
        CHECK((std::count(blocks.begin(), blocks.end(), 0) > 0) == (c.causal || !c.kv_lens.empty()));
        if (!c.causal && !c.kv_lens.empty()) CHECK(sandwiched);
      }
      INFO("v" << variant << ", d = " << d << ": at most " << deepest << " K/V blocks in a tile");
      CHECK(deepest > v.stages);
    }
  }
}

TEST_CASE("tensor cores: small shapes for the sanitizers", "[gpu][tc][small]") {
  REQUIRE_GPU_OR_SKIP();
  for (int v : every_variant())
    for (int64_t d : {64, 128})
      for (bool causal : {false, true}) {
        if (!tc_variant_built(v, d)) continue;
        TcOptions o;
        o.variant = v;
        o.causal = causal;
        o.kv_lens = {70, 0};
        const uint64_t seed = gputest::fresh_seed();
        const TcAccuracy a = tc_accuracy(make_shape(2, 1, 130, 77, d), o, seed);
        INFO("v" << v << " d=" << d << " seed " << seed << ": " << a.describe());
        CHECK(a.ok());
      }
}

// The Hopper defaults (v45) take the causal tiles longest first within groups of heads and deal
// each group's rounds alternately over the persistent blocks (gpu/tile_order.h). The order changes
// which block computes a tile, never the tile's arithmetic, so O and lse must be bit for bit what
// each head gives alone (one head: one group, the plain longest-first order) and, in a ladder
// build, what v34 / v42 (no groups) and v44 (groups without the alternation) give. 10 heads of
// 8192 keys make the groups apply (K and V of a head: 4 MiB at d = 128, groups of 4, 4 and 2 heads;
// 2 MiB at d = 64, groups of 8 and 2), so that a tile dealt twice or never shows here.
TEST_CASE("tensor cores: the causal tiles grouped by heads give each head's bits", "[gpu][tc][order]") {
  REQUIRE_GPU_OR_SKIP();
  const int64_t B = 2, H = 5, N = 8192;
  for (int64_t d : {64, 128}) {
    const Shape sd = make_shape(B, H, N, N, d);
    const size_t per_head = size_t(N * d), n = size_t(B * H) * per_head;
    std::vector<float> q(n), k(n), x(n);
    const uint64_t seed = gputest::fresh_seed();
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal;
    for (auto* t : {&q, &k, &x})
      for (float& e : *t) e = normal(rng);
    TcOptions o;
    o.dtype = Dtype::bf16;
    o.causal = true;
    const TcResult all = fa2_tc_forward(q.data(), k.data(), x.data(), sd, 0.125f, o);
    INFO("d = " << d << ", default v" << all.variant << ", seed " << seed);
    REQUIRE(all.O.size() == n);
    REQUIRE(all.lse.size() == size_t(B * H * N));
    CHECK(gputest::no_nan(all.O));
    for (int64_t h = 0; h < B * H; ++h) {
      INFO("head " << h << " alone");
      const size_t at = size_t(h) * per_head;
      const TcResult one = fa2_tc_forward(q.data() + at, k.data() + at, x.data() + at, make_shape(1, 1, N, N, d), 0.125f, o);
      REQUIRE(one.variant == all.variant);
      CHECK(gputest::same_bits(std::vector<float>(all.O.begin() + long(at), all.O.begin() + long(at + per_head)), one.O));
      CHECK(gputest::same_bits(std::vector<float>(all.lse.begin() + long(h * N), all.lse.begin() + long((h + 1) * N)),
                               one.lse));
    }
    for (int v : {d == 64 ? 34 : 42, 44}) {
      if (!tc_variant_built(v, d)) continue;  // ladder rungs: not in a default build
      o.variant = v;
      const TcResult b = fa2_tc_forward(q.data(), k.data(), x.data(), sd, 0.125f, o);
      o.variant = 0;
      INFO("v" << v << " against the default");
      REQUIRE(b.variant == v);
      CHECK(gputest::same_bits(all.O, b.O));
      CHECK(gputest::same_bits(all.lse, b.lse));
    }
  }
}
