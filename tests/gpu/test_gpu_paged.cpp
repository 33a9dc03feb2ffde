// GPU backend [gpu][decode][paged]: the split-KV kernel reading K and V through a block table
// (core/paged_kv.h) equals the same kernel on contiguous K, V bit for bit (O, lse, partials) and
// the CPU engine's paged run within the tolerances, for the default variant and the bulk-copy
// variants 6-9 (one copy per page piece; pages of 1 row, pages not dividing a stage, pages
// longer than a stage); the split kernel's variants 4-9 (gpu/decode.cu) against the CPU engine,
// variants 4, 6, 7 and 8 bit for bit against variant 3, variant 9 against variant 5.
#include "core/schedules/decode/decode.h"
#include "core/paged_kv.h"
#include "gpu/decode.h"
#include "decode_test_helpers.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace flashstep;
using namespace gputest;

namespace {

struct PagedCase {
  int64_t nq, nk, d, bc, S, P;
  int variant = 0;
  bool causal = false;
  int64_t kv_len = -1;
  double dropout = 0;
  Dtype dtype = Dtype::fp32;
};

struct Run {
  Problem p;
  Tiling t;
  Trace cpu;
};

Run cpu_run(const PagedCase& c, uint64_t seed) {
  ProblemSpec s;
  s.nq = c.nq; s.nk = c.nk; s.d = c.d; s.bc = c.bc; s.M = 4 * c.d * std::max<int64_t>(c.bc, 16);
  s.seed = seed;
  s.schedule = Schedule::decode;
  s.splits = c.S;
  if (c.P > 0) s.page_size = c.P;
  s.options.mask.causal = c.causal;
  s.options.mask.kv_len = c.kv_len;
  s.options.dropout = c.dropout;
  s.options.dtype = c.dtype;
  Run r;
  r.p = make_problem(s);
  r.t = make_tiling(r.p);
  RunOptions opt;
  r.cpu = run_problem(r.p, r.t, opt);
  return r;
}

gpu::Shape shape_of(const Run& r) {
  gpu::Shape sh;
  sh.nq = r.p.nq; sh.nk = r.p.nk; sh.d = r.p.d;
  return sh;
}

gpu::DecodeResult gpu_run(const Run& r, int64_t page_size, int variant) {
  const gpu::Shape sh = shape_of(r);
  gpu::DecodeOptions go;
  go.splits = r.p.splits;
  go.features = gpu::features_of(r.p.options(), r.p.seed);
  go.page_size = page_size;
  go.variant = variant;
  return gpu::decode_forward(r.p.Q.data(), r.p.K.data(), r.p.V.data(), sh, r.p.scale, r.t, go);
}

void check_against_cpu(const Run& r, const gpu::DecodeResult& g, Dtype dtype) {
  REQUIRE(no_nan(g.O));
  REQUIRE(no_nan(g.lse));
  CHECK(rel(to_mat(g.O, r.p.nq, r.p.d), r.cpu.O) <= tiled_o_tol(Schedule::decode, dtype));
  for (int64_t row = 0; row < r.p.nq; ++row) {
    if (std::isinf(r.cpu.lse(row))) REQUIRE(g.lse[size_t(row)] == -INFINITY);
    else REQUIRE(std::abs(g.lse[size_t(row)] - r.cpu.lse(row)) <= kTiledTol * std::max(1.0f, std::abs(r.cpu.lse(row))));
  }
}

}  // namespace

TEST_CASE("GPU paged decode equals the unpaged kernel bit for bit and the CPU's paged run", "[gpu][decode][paged]") {
  REQUIRE_GPU_OR_SKIP();
  const int variant = GENERATE(0, 6, 7, 8, 9);
  const PagedCase c = GENERATE(PagedCase{1, 4096, 128, 64, 8, 16, 0, false, -1, 0, Dtype::bf16},
                               PagedCase{1, 97, 16, 16, 7, 5},                          // ragged, P not dividing Bc
                               PagedCase{5, 333, 64, 32, 4, 40, 0, true},               // Nq = 5, causal, P > Bc
                               PagedCase{3, 600, 64, 64, 4, 7, 0, false, 250},          // key length
                               PagedCase{1, 1000, 32, 32, 1, 1000},                     // one page, S = 1
                               PagedCase{1, 2048, 128, 64, 1, 16, 0, false, -1, 0, Dtype::bf16},
                               PagedCase{1, 900, 64, 64, 5, 3, 0, false, -1, 0.25},     // dropout
                               PagedCase{1, 3000, 128, 64, 47, 16, 0, false, -1, 0, Dtype::fp16},  // S = Tc
                               // 16-bit, d = 64, 128: the bulk-copy variants' shapes
                               PagedCase{1, 999, 128, 64, 5, 1, 0, false, -1, 0, Dtype::bf16},     // P = 1: rows
                               PagedCase{5, 333, 64, 32, 4, 40, 0, true, -1, 0, Dtype::bf16},      // P not dividing a stage
                               PagedCase{3, 700, 64, 64, 4, 200, 0, true, 650, 0, Dtype::fp16},    // P > a stage
                               PagedCase{1, 2000, 128, 64, 16, 24, 0, false, 300, 0, Dtype::bf16}, // -inf splits
                               PagedCase{1, 1000, 64, 32, 1, 1000, 0, false, -1, 0.2, Dtype::bf16});  // one page, S = 1
  if (!gpu::decode_variant_exists(variant, c.d, c.dtype)) return;  // variants 6-9: d = 64, 128 in 16-bit only
  const uint64_t seed = fresh_seed();
  INFO("variant " << variant << " Nq " << c.nq << " Nk " << c.nk << " d " << c.d << " Bc " << c.bc << " S " << c.S
                  << " P " << c.P << " causal " << c.causal << " kv_len " << c.kv_len << " dtype " << dtype_name(c.dtype)
                  << " seed " << seed);
  const Run r = cpu_run(c, seed);
  // Variant 0 is the paged default, which may be another kernel than the unpaged default: the
  // unpaged run takes the kernel that the paged run took.
  const int kernel = gpu::resolve_decode_variant(variant, shape_of(r), r.t, c.dtype, c.P);
  const gpu::DecodeResult paged = gpu_run(r, c.P, variant), flat = gpu_run(r, 0, kernel);
  CHECK(same_bits(paged.O, flat.O));
  CHECK(same_bits(paged.lse, flat.lse));
  CHECK(same_bits(paged.O_part, flat.O_part));
  CHECK(same_bits(paged.lse_part, flat.lse_part));
  check_against_cpu(r, paged, c.dtype);
  if (c.dtype == Dtype::fp32) {
    const Reference ref = reference_attention(r.p.Q, r.p.K, r.p.V, r.p.scale, r.p.mask, r.p.dropout, r.p.seed);
    CHECK(compare(to_mat(paged.O, r.p.nq, r.p.d), ref.O).max_abs <= kFloat64Tol * std::max(1.0, ref.O.cwiseAbs().maxCoeff()));
  }
}

TEST_CASE("GPU paged decode over several heads, each with its own block table", "[gpu][decode][paged]") {
  REQUIRE_GPU_OR_SKIP();
  const int variant = GENERATE(0, 9);  // the default (5 when paged) and a bulk-copy variant
  const uint64_t seed = fresh_seed();
  INFO("variant " << variant << " seed " << seed);
  const int64_t B = 2, H = 3, nk = 517, d = 64;
  gpu::Shape sh{B, H, 1, nk, d};
  const auto [Q, K, V] = random_heads(B * H, nk, d, seed);
  const Tiling t = make_tiling(1, nk, d, 4 * d * 64, 0, 64);
  gpu::DecodeOptions go;
  go.splits = 4;
  go.features = gpu::features_of(AttentionOptions{}, seed, {517, 200});
  go.features.dtype = Dtype::bf16;
  go.variant = gpu::resolve_decode_variant(variant, sh, t, Dtype::bf16, 16);  // the paged run's kernel
  const gpu::DecodeResult flat = gpu::decode_forward(Q.data(), K.data(), V.data(), sh, 0.125f, t, go);
  go.page_size = 16;
  go.variant = variant;
  const gpu::DecodeResult paged = gpu::decode_forward(Q.data(), K.data(), V.data(), sh, 0.125f, t, go);
  REQUIRE(no_nan(paged.O));
  CHECK(same_bits(paged.O, flat.O));
  CHECK(same_bits(paged.lse, flat.lse));
  CHECK(same_bits(paged.O_part, flat.O_part));
}

TEST_CASE("GPU decode kernel variants 4-9 against the CPU engine", "[gpu][decode][variants]") {
  REQUIRE_GPU_OR_SKIP();
  const int variant = GENERATE(4, 5, 6, 7, 8, 9);  // 4, 6, 7, 8: in a ladder build only
  const PagedCase c = GENERATE(PagedCase{1, 4096, 128, 64, 8, 0, 0, false, -1, 0, Dtype::bf16},
                               PagedCase{1, 3001, 64, 64, 1, 0, 0, false, -1, 0, Dtype::fp16},     // ragged, S = 1
                               PagedCase{3, 1000, 128, 32, 5, 0, 0, true, -1, 0, Dtype::bf16},     // Nq = 3, causal
                               PagedCase{1, 2048, 128, 64, 6, 16, 0, false, 1500, 0, Dtype::bf16},  // paged
                               PagedCase{1, 700, 64, 16, 44, 0, 0, false, -1, 0.2, Dtype::bf16},   // S = Tc, dropout
                               PagedCase{5, 777, 64, 32, 9, 0, 0, true, -1, 0, Dtype::fp16},       // Nq = 5, ragged
                               PagedCase{1, 2000, 128, 64, 16, 0, 0, false, 300, 0, Dtype::bf16},  // -inf splits
                               PagedCase{1, 130, 128, 16, 9, 0, 0, false, -1, 0, Dtype::bf16},     // S = Tc, short splits
                               PagedCase{2, 5000, 64, 64, 3, 0, 0, false, 4321, 0, Dtype::bf16});  // key length
  if (!gpu::decode_variant_exists(variant, c.d, c.dtype)) {  // a ladder rung in a default build: named so
    CHECK(gpu::decode_variant_is_ladder(variant));
    return;
  }
  const uint64_t seed = fresh_seed();
  INFO("variant " << variant << " Nq " << c.nq << " Nk " << c.nk << " d " << c.d << " S " << c.S << " P " << c.P
                  << " seed " << seed);
  const Run r = cpu_run(c, seed);
  const gpu::DecodeResult g = gpu_run(r, c.P, variant);
  check_against_cpu(r, g, c.dtype);
  // 4: a prefetch hint apart from variant 3; 6, 7, 8: the same tiles by the bulk copy engine
  // (8 under an L2 policy), the same arithmetic tile by tile: the same bits. 9: variant 5's 256
  // threads and groups on variant 8's stream: variant 5's bits.
  if (variant == 4 || variant >= 6) {
    const gpu::DecodeResult same = gpu_run(r, c.P, variant == 9 ? 5 : 3);
    CHECK(same_bits(g.O, same.O));
    CHECK(same_bits(g.lse, same.lse));
    CHECK(same_bits(g.O_part, same.O_part));
    CHECK(same_bits(g.lse_part, same.lse_part));
  }
}

TEST_CASE("GPU decode refuses a bad page size or variant before any work", "[gpu][decode][paged]") {
  REQUIRE_GPU_OR_SKIP();
  const std::vector<float> x(64 * 100, 0.5f);
  gpu::Shape sh{1, 1, 1, 100, 64};
  gpu::DecodeOptions go;
  go.splits = 2;
  const Tiling t = make_tiling(1, 100, 64, 4096, 0, 16);
  go.page_size = 101;
  CHECK_THROWS_WITH(gpu::decode_forward(x.data(), x.data(), x.data(), sh, 1.0f, t, go), Catch::Contains("--page-size"));
  go.page_size = -1;
  CHECK_THROWS_WITH(gpu::decode_forward(x.data(), x.data(), x.data(), sh, 1.0f, t, go), Catch::Contains("--page-size"));
  go.page_size = 0;
  go.variant = 5;  // fp32 storage has variant 3 only
  CHECK_THROWS_WITH(gpu::decode_forward(x.data(), x.data(), x.data(), sh, 1.0f, t, go), Catch::Contains("variant"));
}

TEST_CASE("GPU decode's default variant and S exist for every shape, and variant 0 runs the kernel it names",
          "[gpu][decode][variants]") {
  REQUIRE_GPU_OR_SKIP();
  const int sms = gpu::device_info().sm_count;
  for (int64_t d : {16, 32, 64, 128, 256})
    for (Dtype dt : {Dtype::fp32, Dtype::fp16, Dtype::bf16})
      for (int64_t heads : {1, 32, 256})
        for (int64_t nk : {1, 100, 16384, 262144})
          for (int64_t P : {0, 16}) {
            INFO("d " << d << " " << dtype_name(dt) << " heads " << heads << " Nk " << nk << " P " << P);
            const gpu::Shape sh{heads, 1, 1, nk, d};
            const Tiling t = make_tiling(1, nk, d, 4 * d * 64, 0, 64);
            const gpu::DecodeChoice c = gpu::decode_default(sh, t, dt, P > 0 ? std::min(P, nk) : 0);
            CHECK(gpu::decode_variant_exists(c.variant, d, dt));
            CHECK(c.splits >= 1);
            CHECK(c.splits <= t.Tc);
            const int64_t S = default_splits(heads, t.Tc, sms);  // core/schedules/decode/decode.h's heuristic
            if (dt == Dtype::fp32 || (d != 64 && d != 128)) {  // version 3, the kernel for every d and type
              CHECK(c.variant == 3);
              CHECK(c.splits == S);
            } else if (P > 0) {  // paged: version 5
              CHECK(c.variant == 5);
              CHECK(c.splits == S);
            } else if (d == 128 && S == 1) {  // the heads fill the GPU: version 9, splits of >= 512 keys
              CHECK(c.variant == 9);
              CHECK(c.splits == std::max<int64_t>(1, std::min<int64_t>({32, nk / 512, t.Tc})));
            } else {
              CHECK(c.variant == 9);
              CHECK(c.splits == S);
            }
          }
  // 256 heads of d = 128 in bf16 fill the H200 (the default is version 9 with S = 2 at Nk = 1024):
  // variant 0 gives the bits of the variant it names, with partials and the combine.
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const int64_t nk = 1024, d = 128;
  const gpu::Shape sh{32, 8, 1, nk, d};
  const auto [Q, K, V] = random_heads(sh.heads(), nk, d, seed);
  const Tiling t = make_tiling(1, nk, d, 4 * d * 64, 0, 64);
  const gpu::DecodeChoice c = gpu::decode_default(sh, t, Dtype::bf16, 0);
  INFO("default variant " << c.variant << " S " << c.splits);
  gpu::DecodeOptions go;
  go.splits = c.splits;
  go.features.dtype = Dtype::bf16;
  const gpu::DecodeResult dflt = gpu::decode_forward(Q.data(), K.data(), V.data(), sh, 0.088f, t, go);
  go.variant = c.variant;
  const gpu::DecodeResult named = gpu::decode_forward(Q.data(), K.data(), V.data(), sh, 0.088f, t, go);
  REQUIRE(no_nan(dflt.O));
  CHECK(same_bits(dflt.O, named.O));
  CHECK(same_bits(dflt.lse, named.lse));
  CHECK(same_bits(dflt.O_part, named.O_part));
}
