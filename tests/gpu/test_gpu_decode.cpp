// GPU backend [gpu][decode]: flash-decoding's split-KV and combine kernels against the CPU
// engine's partials O^(s), lse^(s) and final O, lse, and against float64: Nq = 1 and a few rows,
// ragged Nk, S from 1 to Tc, masks (causal, window, key length per batch entry, a split that
// keeps nothing), dropout, fp16 / bf16 storage, several heads.
#include "core/schedules/decode/decode.h"
#include "gpu/decode.h"
#include "decode_test_helpers.h"

#include <catch2/catch.hpp>

using namespace flashstep;
using namespace gputest;

namespace {

struct DecodeCase {
  int64_t nq, nk, d, bc, S;
  bool causal = false;
  int64_t window_left = -1, kv_len = -1;
  double dropout = 0;
  Dtype dtype = Dtype::fp32;
};

// Runs the case on the CPU (recorded, for the partials) and the GPU; checks partials, O, lse.
void check_decode(const DecodeCase& c) {
  const uint64_t seed = fresh_seed();
  INFO("Nq " << c.nq << " Nk " << c.nk << " d " << c.d << " Bc " << c.bc << " S " << c.S << " causal " << c.causal
             << " window " << c.window_left << " kv_len " << c.kv_len << " dropout " << c.dropout << " dtype "
             << dtype_name(c.dtype) << " seed " << seed);
  ProblemSpec s;
  s.nq = c.nq; s.nk = c.nk; s.d = c.d; s.bc = c.bc; s.M = 4 * c.d * std::max<int64_t>(c.bc, 16);
  s.seed = seed;
  s.schedule = Schedule::decode;
  s.splits = c.S;
  s.options.mask.causal = c.causal;
  s.options.mask.window_left = c.window_left;
  if (c.window_left >= 0) s.options.mask.window_right = 0;
  s.options.mask.kv_len = c.kv_len;
  s.options.dropout = c.dropout;
  s.options.dtype = c.dtype;
  const Problem p = make_problem(s);
  const Tiling t = make_tiling(p);
  RunOptions opt;
  const Trace tr = run_problem(p, t, opt);
  gpu::Shape sh;
  sh.nq = p.nq; sh.nk = p.nk; sh.d = p.d;
  gpu::DecodeOptions go;
  go.splits = c.S;
  go.features = gpu::features_of(p.options(), p.seed);
  const gpu::DecodeResult g = gpu::decode_forward(p.Q.data(), p.K.data(), p.V.data(), sh, p.scale, t, go);
  REQUIRE(no_nan(g.O));
  REQUIRE(no_nan(g.lse));
  if (c.S > 1) {
    REQUIRE(no_nan(g.O_part));
    REQUIRE(no_nan(g.lse_part));
    Cursor cur(tr);
    cur.run_to_end();
    CHECK(rel(to_mat(g.O_part, c.S * p.nq, p.d), cur.hbm(Tensor::Op)) <= kTiledTol);
    const Mat gl = to_mat(g.lse_part, c.S * p.nq, 1);
    const Mat& cl = cur.hbm(Tensor::Lp);
    for (int64_t r = 0; r < gl.rows(); ++r) {
      if (std::isinf(cl(r, 0))) REQUIRE(gl(r, 0) == -INFINITY);  // an empty split on both sides
      else REQUIRE(std::abs(gl(r, 0) - cl(r, 0)) <= kTiledTol * std::max(1.0f, std::abs(cl(r, 0))));
    }
  }
  CHECK(rel(to_mat(g.O, p.nq, p.d), tr.O) <= tiled_o_tol(Schedule::decode, c.dtype));
  for (int64_t r = 0; r < p.nq; ++r) {
    if (std::isinf(tr.lse(r))) REQUIRE(g.lse[size_t(r)] == -INFINITY);
    else REQUIRE(std::abs(g.lse[size_t(r)] - tr.lse(r)) <= kTiledTol * std::max(1.0f, std::abs(tr.lse(r))));
  }
  if (c.dtype == Dtype::fp32) {
    const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale, p.mask, p.dropout, p.seed);
    CHECK(compare(to_mat(g.O, p.nq, p.d), ref.O).max_abs <= kFloat64Tol * std::max(1.0, ref.O.cwiseAbs().maxCoeff()));
  }
}

}  // namespace

TEST_CASE("GPU decode equals the CPU engine's partials and result, and float64", "[gpu][decode]") {
  REQUIRE_GPU_OR_SKIP();
  const DecodeCase c = GENERATE(DecodeCase{1, 4096, 128, 64, 8}, DecodeCase{1, 1000, 64, 32, 32},
                                DecodeCase{1, 97, 16, 16, 7}, DecodeCase{1, 97, 32, 16, 1},
                                DecodeCase{3, 700, 64, 64, 5}, DecodeCase{9, 333, 128, 32, 11},
                                DecodeCase{1, 1, 64, 16, 1}, DecodeCase{2, 2048, 256, 16, 128},
                                DecodeCase{5, 130, 64, 13, 10});
  check_decode(c);
}

TEST_CASE("GPU decode with masks, dropout and 16-bit storage", "[gpu][decode][masks]") {
  REQUIRE_GPU_OR_SKIP();
  const DecodeCase c = GENERATE(DecodeCase{4, 500, 64, 32, 6, true},                        // causal, Nq != Nk
                                DecodeCase{1, 1024, 128, 64, 16, false, 100},              // window: most splits empty
                                DecodeCase{3, 600, 64, 64, 4, false, -1, 250},             // key length
                                DecodeCase{2, 256, 64, 32, 8, false, -1, 0},               // every key masked
                                DecodeCase{1, 900, 64, 64, 5, false, -1, -1, 0.25},        // dropout
                                DecodeCase{1, 3000, 128, 64, 12, false, -1, -1, 0, Dtype::bf16},
                                DecodeCase{6, 777, 64, 32, 9, true, -1, -1, 0.1, Dtype::fp16},
                                DecodeCase{1, 2048, 128, 64, 1, false, -1, 1500, 0, Dtype::bf16});
  check_decode(c);
}

TEST_CASE("GPU decode over several heads with a key length per batch entry", "[gpu][decode][masks]") {
  REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const int64_t B = 3, H = 2, nk = 700, d = 64;
  const std::vector<int64_t> lens = {700, 1, 333};
  gpu::Shape sh{B, H, 1, nk, d};
  const auto [Q, K, V] = random_heads(B * H, nk, d, seed);
  const Tiling t = make_tiling(1, nk, d, 4 * d * 64, 0, 64);
  gpu::DecodeOptions go;
  go.splits = 6;
  go.features = gpu::features_of(AttentionOptions{}, seed, lens);
  const gpu::DecodeResult g = gpu::decode_forward(Q.data(), K.data(), V.data(), sh, 0.125f, t, go);
  REQUIRE(no_nan(g.O));
  for (int64_t h = 0; h < B * H; ++h) {
    Mask m;
    m.kv_len = lens[size_t(h / H)];
    m.offset = nk - 1;
    const Reference ref = reference_attention(to_mat(Q, 1, d, h * d), to_mat(K, nk, d, h * nk * d),
                                              to_mat(V, nk, d, h * nk * d), 0.125, m);
    CHECK(floored_rel(to_mat(g.O, 1, d, h * d), ref.O) <= kFloat64Tol);
  }
}

TEST_CASE("GPU decode refuses what it cannot take, before any work", "[gpu][decode]") {
  REQUIRE_GPU_OR_SKIP();
  const std::vector<float> x(64 * 100, 0.5f);
  gpu::Shape sh{1, 1, 1, 100, 24};
  gpu::DecodeOptions go;
  go.splits = 2;
  CHECK_THROWS_WITH(gpu::decode_forward(x.data(), x.data(), x.data(), sh, 1.0f, make_tiling(1, 100, 24, 4096, 0, 16), go),
                    Catch::Contains("d = 16, 32, 64, 128 or 256"));
  sh.d = 64;
  go.splits = 100;
  CHECK_THROWS_WITH(gpu::decode_forward(x.data(), x.data(), x.data(), sh, 1.0f, make_tiling(1, 100, 64, 4096, 0, 16), go),
                    Catch::Contains("out of range"));
}
