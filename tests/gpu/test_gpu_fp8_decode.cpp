// GPU backend [gpu][decode][fp8]: flash-decoding from an FP8 KV cache (gpu/decode.cu, docs/fp8.md)
// against the CPU engine's emulation of --dtype fp8 (partials O^(s), lse^(s), O, lse: the same
// e4m3 values and scales, float32 arithmetic in another order) and against float64 within the
// format's bound (core/fp8_bound.h); per-tensor and per-block scales (Bc not a power of two),
// the rotation, outliers, paged caches (equal bit for bit to the unpaged run), a key length;
// each for both split kernels the FP8 cache has (variant 9, and variant 10's batched keys).
#include "core/schedules/decode/decode.h"
#include "core/fp8.h"
#include "core/fp8_bound.h"
#include "core/fp8_inputs.h"
#include "gpu/decode.h"
#include "decode_test_helpers.h"

#include <catch2/catch.hpp>
#include <cstring>

using namespace flashstep;
using namespace gputest;

namespace {

struct Fp8Case {
  int64_t nq, nk, d, bc, S;
  Fp8Scale scale = Fp8Scale::per_tensor;
  bool rotate = false;
  int64_t page = 0, kv_len = -1;
  const char* pattern = "random";
  int variant = 9;
};

void check_fp8_decode(const Fp8Case& c) {
  const uint64_t seed = fresh_seed();
  INFO("variant " << c.variant << " Nq " << c.nq << " Nk " << c.nk << " d " << c.d << " Bc " << c.bc << " S " << c.S << " scale "
             << fp8_scale_name(c.scale) << " rotate " << c.rotate << " page " << c.page << " kv_len " << c.kv_len
             << " " << c.pattern << " seed " << seed);
  ProblemSpec s;
  s.nq = c.nq; s.nk = c.nk; s.d = c.d; s.bc = c.bc; s.M = 4 * c.d * std::max<int64_t>(c.bc, 16);
  s.seed = seed;
  s.pattern = c.pattern;
  s.schedule = Schedule::decode;
  s.splits = c.S;
  if (c.page > 0) s.page_size = c.page;
  s.options.mask.kv_len = c.kv_len;
  s.options.dtype = Dtype::fp8;
  s.options.fp8_scale = c.scale;
  s.options.rotate = c.rotate;
  const Problem p = make_problem(s);
  REQUIRE(p.p_dtype == Dtype::fp32);  // decode keeps P~ in float32 (core/problem.cpp)
  const Tiling t = make_tiling(p);
  const Trace tr = run_problem(p, t, RunOptions{});
  gpu::Shape sh;
  sh.nq = p.nq; sh.nk = p.nk; sh.d = p.d;
  gpu::DecodeOptions go;
  go.splits = c.S;
  go.page_size = c.page;
  go.variant = c.variant;
  go.features = gpu::features_of(p.options(), p.seed);
  const gpu::DecodeResult g = gpu::decode_forward(p.Q.data(), p.K.data(), p.V.data(), sh, p.scale, t, go);
  REQUIRE(no_nan(g.O));
  REQUIRE(no_nan(g.lse));
  if (c.S > 1) {
    Cursor cur(tr);
    cur.run_to_end();
    CHECK(rel(to_mat(g.O_part, c.S * p.nq, p.d), cur.hbm(Tensor::Op)) <= kTiledTol);
    CHECK(lse_rel(g.lse_part, cur.hbm(Tensor::Lp).col(0)) <= kTiledTol);
  }
  CHECK(rel(to_mat(g.O, p.nq, p.d), tr.O) <= tiled_o_tol(Schedule::decode, Dtype::fp8));
  CHECK(lse_rel(g.lse, tr.lse) <= kTiledTol);
  if (c.page > 0) {  // the same kernel's values through the block table: every bit the same
    gpu::DecodeOptions flat = go;
    flat.page_size = 0;
    const gpu::DecodeResult u = gpu::decode_forward(p.Q.data(), p.K.data(), p.V.data(), sh, p.scale, t, flat);
    CHECK(same_bits(g.O, u.O));
    CHECK(same_bits(g.lse, u.lse));
    CHECK(same_bits(g.O_part, u.O_part));
  }
  // Against float64: each row within the format's bound, with each tensor's largest scale.
  const MatD Q = rotated_input(p, p.Q).cast<double>(), K = rotated_input(p, p.K).cast<double>(), V = p.V.cast<double>();
  const bool per_block = c.scale == Fp8Scale::per_block;
  const double sq = quantise_e4m3(Q.cast<float>(), per_block ? t.Br : p.nq).scales.maxCoeff();
  const double sk = quantise_e4m3(K.cast<float>(), per_block ? t.Bc : p.nk).scales.maxCoeff();
  const double sv = quantise_e4m3(p.V, per_block ? t.Bc : p.nk).scales.maxCoeff();
  const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale, p.mask);
  const Mat O = to_mat(g.O, p.nq, p.d);
  for (int64_t r = 0; r < p.nq; ++r) {
    const double bound = fp8_row_bound(Q, K, V, p.scale, sq, sk, sv, r, p.mask.lo(r), p.mask.hi(r, p.nk) + 1, 1, false);
    CAPTURE(r, bound);
    REQUIRE((O.row(r).cast<double>() - ref.O.row(r)).cwiseAbs().maxCoeff() <= bound);
  }
}

}  // namespace

TEST_CASE("GPU fp8 decode equals the CPU engine's emulation and stays within the format's bound", "[gpu][decode][fp8]") {
  REQUIRE_GPU_OR_SKIP();
  Fp8Case c = GENERATE(Fp8Case{1, 4096, 128, 64, 8},                                      // per tensor
                       Fp8Case{1, 1000, 64, 32, 7, Fp8Scale::per_block},                  // ragged Nk
                       Fp8Case{3, 777, 64, 48, 5, Fp8Scale::per_block},                   // Bc = 48, 3 rows
                       Fp8Case{1, 3001, 128, 32, 1, Fp8Scale::per_block, true},           // S = 1, rotated
                       Fp8Case{1, 1500, 128, 100, 3, Fp8Scale::per_block, true, 0, -1, "outliers"},
                       Fp8Case{1, 2048, 128, 64, 16, Fp8Scale::per_block, false, 16},     // paged
                       Fp8Case{5, 999, 64, 32, 4, Fp8Scale::per_tensor, false, 7, 500},   // paged, key length
                       Fp8Case{2, 20000, 128, 96, 6, Fp8Scale::per_block, false, 5},      // many stages, P = 5
                       Fp8Case{1, 513, 64, 7, 2, Fp8Scale::per_block});                   // a scale block of 7 keys
  c.variant = GENERATE(9, 10);
  check_fp8_decode(c);
}

TEST_CASE("GPU fp8 decode with one key gives V in e4m3 exactly", "[gpu][decode][fp8]") {
  // One key: P~ = 1, l = 1, so O = V's e4m3 value times its scale. With max |V| = 448 the scale
  // is 1, and an e4m3 value (4 significant bits) is exact in bf16: O must equal round_e4m3(V)
  // bit for bit, which checks the GPU's conversion of the codes (subnormals, the largest values,
  // both signs) against core's rounding.
  REQUIRE_GPU_OR_SKIP();
  const int64_t d = GENERATE(64, 128), heads = 3;
  const int variant = GENERATE(9, 10);
  std::vector<float> Q(size_t(heads * d), 0.25f), V(size_t(heads * d));
  std::mt19937_64 rng(fresh_seed());
  std::uniform_real_distribution<float> expo(-11.0f, 8.8f);
  for (size_t k = 0; k < V.size(); ++k) V[k] = ((rng() & 1) ? -1.0f : 1.0f) * std::exp2(expo(rng));
  for (int64_t h = 0; h < heads; ++h) V[size_t(h * d)] = 448.0f;  // each head's amax: scale 1
  gpu::Shape sh{1, heads, 1, 1, d};
  gpu::DecodeOptions go;
  go.variant = variant;
  go.features.dtype = Dtype::fp8;
  go.features.fp8_scale = Fp8Scale::per_tensor;
  const gpu::DecodeResult g = gpu::decode_forward(Q.data(), V.data(), V.data(), sh, 0.5f, make_tiling(1, 1, d, 4 * d * 16), go);
  for (size_t k = 0; k < V.size(); ++k) {
    CAPTURE(variant, k, V[k]);
    REQUIRE(g.O[k] == round_e4m3(V[k]));
  }
}

TEST_CASE("GPU fp8 decode refuses what it has no kernel for, before any work", "[gpu][decode][fp8]") {
  REQUIRE_GPU_OR_SKIP();
  const std::vector<float> x(128 * 100, 0.5f);
  gpu::Shape sh{1, 1, 1, 100, 32};
  gpu::DecodeOptions go;
  go.features.dtype = Dtype::fp8;
  CHECK_THROWS_WITH(gpu::decode_forward(x.data(), x.data(), x.data(), sh, 1.0f, make_tiling(1, 100, 32, 4096, 0, 16), go),
                    Catch::Contains("d = 64 or 128"));
  sh.d = 64;
  go.variant = 3;
  CHECK_THROWS_WITH(gpu::decode_forward(x.data(), x.data(), x.data(), sh, 1.0f, make_tiling(1, 100, 64, 4096, 0, 16), go),
                    Catch::Contains("no fp8 version"));
  go.variant = 5;
  go.page_size = 16;
  CHECK_THROWS_WITH(gpu::decode_forward(x.data(), x.data(), x.data(), sh, 1.0f, make_tiling(1, 100, 64, 4096, 0, 16), go),
                    Catch::Contains("no fp8 version"));
  go.variant = 13;
  CHECK_THROWS_WITH(gpu::decode_forward(x.data(), x.data(), x.data(), sh, 1.0f, make_tiling(1, 100, 64, 4096, 0, 16), go),
                    Catch::Contains("runs variants 9 and 10"));
}

TEST_CASE("GPU fp8 decode gives one query row the bits of the same row among four", "[gpu][decode][fp8]") {
  // Variant 9 at Nq = 1 runs its four-row kernel in a default build and its one-row kernel in a
  // ladder build (gpu/decode.cu's launch_split_fp8); variant 10 runs a block per row either way.
  // The one row's arithmetic is the same in every case: the row alone and the row as the first
  // of four equal rows (the same e4m3 values and scales) give the same O, lse and partials, paged
  // or not.
  REQUIRE_GPU_OR_SKIP();
  const int64_t d = GENERATE(64, 128), heads = 3, nk = 3000, S = 5;
  const int variant = GENERATE(9, 10);
  const int64_t P = GENERATE(0, 16);
  const uint64_t seed = fresh_seed();
  INFO("variant " << variant << " d " << d << " P " << P << " seed " << seed
                  << (gpu::decode_fp8_one_row_kernel(variant) ? " (one-row kernel)" : " (four-row kernel)"));
  const HeadInputs in = random_heads(heads, nk, d, seed);
  std::vector<float> Q4;
  for (int64_t h = 0; h < heads; ++h)
    for (int r = 0; r < 4; ++r) Q4.insert(Q4.end(), in.Q.begin() + h * d, in.Q.begin() + (h + 1) * d);
  gpu::DecodeOptions go;
  go.splits = S;
  go.variant = variant;
  go.page_size = P;
  go.features.dtype = Dtype::fp8;
  go.features.fp8_scale = Fp8Scale::per_block;
  const gpu::Shape one{1, heads, 1, nk, d}, four{1, heads, 4, nk, d};
  const gpu::DecodeResult a =
      gpu::decode_forward(in.Q.data(), in.K.data(), in.V.data(), one, 0.088f, make_tiling(1, nk, d, 4 * d * 64, 0, 64), go);
  const gpu::DecodeResult b =
      gpu::decode_forward(Q4.data(), in.K.data(), in.V.data(), four, 0.088f, make_tiling(4, nk, d, 4 * d * 64, 0, 64), go);
  REQUIRE(no_nan(a.O));
  auto rows_of_four = [&](const std::vector<float>& x, int64_t width) {  // row 0 of each (split, head)
    std::vector<float> out;
    for (size_t k = 0; k < x.size() / size_t(4 * width); ++k)
      out.insert(out.end(), x.begin() + int64_t(k) * 4 * width, x.begin() + int64_t(k) * 4 * width + width);
    return out;
  };
  CHECK(same_bits(a.O, rows_of_four(b.O, d)));
  CHECK(same_bits(a.lse, rows_of_four(b.lse, 1)));
  CHECK(same_bits(a.O_part, rows_of_four(b.O_part, d)));
  CHECK(same_bits(a.lse_part, rows_of_four(b.lse_part, 1)));
}

TEST_CASE("GPU fp8 decode's default: variant 10 for one row, 9's four-row kernel for more", "[gpu][decode][fp8]") {
  REQUIRE_GPU_OR_SKIP();
  const int sms = gpu::device_info().sm_count;
  CHECK(gpu::decode_fp8_one_row_kernel(10));
  for (int64_t d : {64, 128})
    for (int64_t nq : {1, 3})
      for (int64_t heads : {1, 32, 256})
        for (int64_t nk : {100, 16384, 262144})
          for (int64_t P : {0, 16}) {
            INFO("d " << d << " Nq " << nq << " heads " << heads << " Nk " << nk << " P " << P);
            const gpu::Shape sh{heads, 1, nq, nk, d};
            const Tiling t = make_tiling(nq, nk, d, 4 * d * 64, 0, 64);
            const gpu::DecodeChoice c = gpu::decode_default(sh, t, Dtype::fp8, P > 0 ? std::min(P, nk) : 0);
            CHECK(c.variant == (nq == 1 ? 10 : 9));
            const int64_t S = default_splits(heads * t.Tr, t.Tc, sms);  // core/schedules/decode/decode.h's heuristic
            if (d == 128 && nq == 1 && S == 1)  // the heads fill the GPU: at most 16 splits (4 paged) of >= 512 keys
              CHECK(c.splits == std::max<int64_t>(1, std::min<int64_t>({P > 0 ? 4 : 16, nk / 512, t.Tc})));
            else
              CHECK(c.splits == S);
          }
}
