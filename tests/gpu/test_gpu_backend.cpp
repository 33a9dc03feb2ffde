// GPU backend [gpu]: standard attention against float64, batched heads (B, H, N, d),
// and every user-caused error is one clear InputError, raised before any allocation.
//
// Fresh random inputs per test (the seed is printed on failure); the backend poisons every
// device output with NaN before a run. Without a GPU each test prints "SKIPPED: <reason>" and
// ctest reports it as skipped.
#include "gpu_test_helpers.h"

#include <catch2/catch.hpp>

using namespace flashstep;
using namespace gputest;

TEST_CASE("GPU standard attention matches float64 on ragged shapes", "[gpu][standard]") {
  REQUIRE_GPU_OR_SKIP();
  const auto dims = GENERATE(std::vector<int64_t>{200, 333, 40}, std::vector<int64_t>{129, 1000, 64},
                             std::vector<int64_t>{70, 65, 128});
  const uint64_t seed = fresh_seed();
  INFO("Nq " << dims[0] << " Nk " << dims[1] << " d " << dims[2] << " seed " << seed);
  ProblemSpec s;
  s.nq = dims[0];
  s.nk = dims[1];
  s.d = dims[2];
  s.M = 4 * s.d;
  s.seed = seed;
  const Problem p = make_problem(s);
  const gpu::Shape sh = shape_of(p);
  const gpu::Result st = gpu::standard_forward(p.Q.data(), p.K.data(), p.V.data(), sh, p.scale);
  REQUIRE(all_finite(st.O));
  REQUIRE(all_finite(st.lse));
  const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale);
  CHECK(floored_rel(to_mat(st.O, p.nq, p.d), ref.O) <= kFloat64Tol);
  CHECK(floored_rel(Vec(Eigen::Map<const Vec>(st.lse.data(), p.nq)), ref.lse) <= kFloat64Tol);
}

TEST_CASE("GPU batched heads (B H N d): each head equals the CPU on that head", "[gpu][batch]") {
  REQUIRE_GPU_OR_SKIP();
  const int variant = GENERATE(1, 2);
  const uint64_t seed = fresh_seed();
  INFO("variant " << variant << " seed " << seed);
  const gpu::Shape sh{2, 3, 70, 90, 64};  // B, H, Nq, Nk, d
  const int64_t h = sh.heads();
  const RandomQKV in(sh, seed);
  const std::vector<float>&Q = in.Q, &K = in.K, &V = in.V;
  const Tiling t = make_tiling(sh.nq, sh.nk, sh.d, fit_M(64, 64, 64), 64, 64);
  const float scale = 0.125f;
  gpu::Fa1Options go;
  go.variant = variant;
  const gpu::Result g = gpu::fa1_forward(Q.data(), K.data(), V.data(), sh, scale, t, go);
  const gpu::Result st = gpu::standard_forward(Q.data(), K.data(), V.data(), sh, scale);
  REQUIRE(all_finite(g.O));
  REQUIRE(all_finite(g.lse));
  REQUIRE(all_finite(st.O));
  for (int64_t head = 0; head < h; ++head) {
    INFO("head " << head);
    Problem p;
    p.nq = sh.nq;
    p.nk = sh.nk;
    p.d = sh.d;
    p.M = t.M;
    p.scale = scale;
    p.schedule = Schedule::fa1;
    p.Q = to_mat(Q, sh.nq, sh.d, head * sh.nq * sh.d);
    p.K = to_mat(K, sh.nk, sh.d, head * sh.nk * sh.d);
    p.V = to_mat(V, sh.nk, sh.d, head * sh.nk * sh.d);
    RunOptions opt;
    opt.record = false;
    const Trace tr = run_problem(p, t, opt);
    CHECK(rel(to_mat(g.O, sh.nq, sh.d, head * sh.nq * sh.d), tr.O) <= kTiledTol);
    CHECK(rel(to_mat(g.lse, sh.nq, 1, head * sh.nq), Mat(tr.lse)) <= kTiledTol);
    const Reference ref = reference_attention(p.Q, p.K, p.V, scale);
    CHECK(floored_rel(to_mat(st.O, sh.nq, sh.d, head * sh.nq * sh.d), ref.O) <= kFloat64Tol);
  }
}

TEST_CASE("GPU bad input: one clear InputError each before any allocation", "[gpu][errors]") {
  REQUIRE_GPU_OR_SKIP();
  std::vector<float> x(64 * 64, 1.0f);
  gpu::Shape sh;
  sh.nq = sh.nk = sh.d = 64;
  SECTION("block sizes over the shared-memory limit") {
    const Tiling t = make_tiling(64, 64, 64, fit_M(64, 1024, 64), 64, 1024);
    CHECK_THROWS_WITH(gpu::fa1_forward(x.data(), x.data(), x.data(), sh, 0.125f, t),
                      Catch::Contains("shared memory"));
  }
  SECTION("variant 2 asked for sizes it is not compiled for") {
    gpu::Fa1Options go;
    go.variant = 2;
    const Tiling t = make_tiling(64, 64, 64, 4096, 8, 8);
    CHECK_THROWS_WITH(gpu::fa1_forward(x.data(), x.data(), x.data(), sh, 0.125f, t, go),
                      Catch::Contains("compiled only"));
  }
  SECTION("not enough device memory") {
    gpu::Shape big;
    big.H = 60000;
    big.nq = big.nk = 16384;
    big.d = 64;  // S and P alone: 60000 x 16384^2 x 4 B x 2 = 128 TB
    CHECK_THROWS_WITH(gpu::standard_forward(x.data(), x.data(), x.data(), big, 0.125f),
                      Catch::Contains("not enough device memory"));
  }
  SECTION("too many heads for the grid") {
    gpu::Shape many = sh;
    many.B = 1000;
    many.H = 1000;
    const Tiling t = make_tiling(64, 64, 64, fit_M(64, 64, 64), 64, 64);
    CHECK_THROWS_AS(gpu::fa1_forward(x.data(), x.data(), x.data(), many, 0.125f, t), InputError);
  }
}

TEST_CASE("GPU bad input for masks dropout and dtype: one clear InputError each", "[gpu][errors]") {
  REQUIRE_GPU_OR_SKIP();
  std::vector<float> x(64 * 64, 1.0f);
  gpu::Shape sh;
  sh.nq = sh.nk = sh.d = 64;
  const Tiling t = make_tiling(64, 64, 64, fit_M(64, 64, 64), 64, 64);
  auto fa2 = [&](const gpu::Features& f, int variant = 0, const Tiling& tt = Tiling{}) {
    gpu::Fa2Options o;
    o.features = f;
    o.variant = variant;
    return gpu::fa2_forward(x.data(), x.data(), x.data(), sh, 0.125f, tt.Br ? tt : t, o);
  };
  gpu::Features f;
  SECTION("window sizes below -1") {
    f.mask.window_left = -2;
    CHECK_THROWS_WITH(fa2(f), Catch::Contains("window sizes"));
  }
  SECTION("key length past Nk") {
    f.mask.kv_len = 65;
    CHECK_THROWS_WITH(fa2(f), Catch::Contains("out of range"));
  }
  SECTION("kv_lens of the wrong size or out of range") {
    f.kv_lens = {3, 4};
    CHECK_THROWS_WITH(fa2(f), Catch::Contains("one valid key length per batch entry"));
    f.kv_lens = {-1};
    CHECK_THROWS_WITH(fa2(f), Catch::Contains("out of range"));
  }
  SECTION("dropout outside 0 to 1") {
    for (float p : {1.0f, -0.1f, NAN}) {
      f.dropout = p;
      CHECK_THROWS_WITH(fa2(f), Catch::Contains("dropout probability"));
      gpu::Fa1Options o;
      o.features = f;
      CHECK_THROWS_AS(gpu::fa1_forward(x.data(), x.data(), x.data(), sh, 0.125f, t, o), InputError);
      CHECK_THROWS_AS(gpu::standard_forward(x.data(), x.data(), x.data(), sh, 0.125f, f), InputError);
    }
    CHECK_THROWS_AS(gpu::gpu_dropout_mask(4, 4, 0, 0, 0, 0, 1, 1.5f), InputError);
  }
  SECTION("fp16 storage asked of the float32 standard baseline") {
    f.dtype = Dtype::fp16;
    CHECK_THROWS_WITH(gpu::standard_forward(x.data(), x.data(), x.data(), sh, 0.125f, f),
                      Catch::Contains("runs in float32"));
  }
  SECTION("unknown dtype name") {
    CHECK_THROWS_WITH(parse_dtype("fp4"), Catch::Contains("unknown dtype"));
    CHECK(parse_dtype("fp8") == Dtype::fp8);  // e4m3: the decode path's KV cache (docs/fp8.md)
  }
  SECTION("fa2 variant 2 for sizes it is not compiled for, and blocks over shared memory") {
    CHECK_THROWS_WITH(fa2(f, 2, make_tiling(64, 64, 64, 4096, 8, 8)), Catch::Contains("compiled only"));
    CHECK_THROWS_WITH(fa2(f, 1, make_tiling(64, 64, 64, fit_M(64, 1024, 64), 64, 1024)),
                      Catch::Contains("shared memory"));
    CHECK_THROWS_WITH(fa2(f, 3), Catch::Contains("--variant"));
  }
}

TEST_CASE("Without a GPU the backend says so in one InputError", "[gpu][errors]") {
  std::string why;
  if (gpu::available(&why)) {
    SKIP_TEST("a GPU is present, so the no-GPU path cannot be exercised here");
    return;
  }
  std::vector<float> x(16 * 16, 1.0f);
  gpu::Shape sh;
  sh.nq = sh.nk = sh.d = 16;
  const Tiling t = make_tiling(16, 16, 16, 1024);
  CHECK_THROWS_AS(gpu::fa1_forward(x.data(), x.data(), x.data(), sh, 0.25f, t), InputError);
  CHECK_THROWS_AS(gpu::device_info(), InputError);
}
