// GPU backend [gpu]: Algorithm 1 on the GPU against the CPU trace after every j and
// at the end, with and without masks and dropout, and against float64 (our reference and
// PyTorch's golden files, standard attention too).
//
// Fresh random inputs per test (the seed is printed on failure); the backend poisons every
// device output with NaN before a run. Without a GPU each test prints "SKIPPED: <reason>" and
// ctest reports it as skipped.
#include "core/npy.h"
#include "gpu/trace_align.h"
#include "gpu_test_helpers.h"

#include <catch2/catch.hpp>

using namespace flashstep;
using namespace gputest;

namespace {

struct Case {
  int64_t nq, nk, d, M, br, bc;
  int variant;
  // Algorithm 2's additions: a mask and dropout, none by default.
  Mask mask = {};
  double dropout = 0;
};

void check_against_trace(const Case& c) {
  const uint64_t seed = fresh_seed();
  INFO("Nq " << c.nq << " Nk " << c.nk << " d " << c.d << " M " << c.M << " Br " << c.br << " Bc "
             << c.bc << " variant " << c.variant << " seed " << seed);
  ProblemSpec s;
  s.nq = c.nq;
  s.nk = c.nk;
  s.d = c.d;
  s.M = c.M;
  s.br = c.br;
  s.bc = c.bc;
  s.seed = seed;
  s.options.mask = c.mask;
  s.options.dropout = c.dropout;
  const Problem p = make_problem(s);
  const Tiling t = make_tiling(p);
  const Trace tr = cpu_run(p, t, true);

  const gpu::Shape sh = shape_of(p);
  gpu::Fa1Options go;
  go.variant = c.variant;
  go.snapshots = true;
  go.features = gpu::features_of(p.options(), p.seed);
  const gpu::Result g = gpu::fa1_forward(p.Q.data(), p.K.data(), p.V.data(), sh, p.scale, t, go);
  REQUIRE(g.variant == c.variant);
  REQUIRE(int64_t(g.snapshots.size()) == t.Tc);

  // Per j: the GPU state after launch j equals the CPU's HBM state after Alg1 L13 of (Tr-1, j).
  const std::vector<size_t> at = gpu::fa1_steps_after_each_j(tr);
  Cursor cur(tr);
  for (int64_t j = 0; j < t.Tc; ++j) {
    INFO("after j = " << j);
    const gpu::ForwardSnapshot& sn = g.snapshots[size_t(j)];
    REQUIRE(sn.j == j);
    REQUIRE(all_finite(sn.O));
    REQUIRE(all_finite(sn.l));
    REQUIRE(no_nan(sn.m));  // -inf for a row that has kept no key yet
    cur.seek(at[size_t(j)]);
    CHECK(rel(to_mat(sn.O, p.nq, p.d), cur.hbm(Tensor::O)) <= kTiledTol);
    CHECK(rel(to_mat(sn.l, p.nq, 1), cur.hbm(Tensor::l)) <= kTiledTol);
    CHECK(rel(to_mat(sn.m, p.nq, 1), cur.hbm(Tensor::m)) <= kTiledTol);
  }

  // Final outputs: against the CPU and against float64.
  REQUIRE(all_finite(g.O));
  check_final(g, p, tr);
}

}  // namespace

TEST_CASE("GPU Algorithm 1 variant 1 (plain) equals the CPU trace after every j", "[gpu][fa1]") {
  REQUIRE_GPU_OR_SKIP();
  const Case c = GENERATE(Case{64, 64, 16, 1024, 0, 0, 1},      // paper blocks: Br = Bc = 16
                          Case{100, 100, 32, 1024, 0, 0, 1},    // Br = Bc = 8, ragged
                          Case{77, 130, 40, 2048, 0, 0, 1},     // Bc = Br = 13, Nq != Nk
                          Case{200, 333, 64, 16384, 64, 64, 1}, // ragged both ways
                          Case{97, 1025, 128, 0, 64, 64, 1},    // d = 128, ragged Nk
                          Case{50, 40, 24, 1024, 7, 5, 1});     // odd blocks, Br != Bc
  Case cc = c;
  if (cc.M == 0) cc.M = fit_M(cc.br, cc.bc, cc.d);
  check_against_trace(cc);
}

TEST_CASE("GPU Algorithm 1 variant 2 (register-tiled) equals the CPU trace after every j", "[gpu][fa1]") {
  REQUIRE_GPU_OR_SKIP();
  const Case c = GENERATE(Case{200, 333, 64, 0, 64, 64, 2},     // same case as variant 1
                          Case{1000, 700, 64, 32768, 0, 0, 2},  // paper blocks at 128 KiB: 64 x 128
                          Case{300, 513, 128, 32768, 0, 0, 2},  // paper blocks at 128 KiB: 64 x 64
                          Case{129, 77, 64, 0, 64, 16, 2},      // Bc = 16 (one column per thread)
                          Case{150, 260, 64, 0, 64, 256, 2},    // Bc = 256
                          Case{100, 90, 128, 0, 64, 32, 2},     // Bc = 32, d = 128
                          Case{1, 1, 64, 0, 64, 64, 2});        // one row, one key
  Case cc = c;
  if (cc.M == 0) cc.M = fit_M(cc.br, cc.bc, cc.d);
  check_against_trace(cc);
}

TEST_CASE("GPU Algorithm 1 with masks and dropout equals the CPU trace after every j", "[gpu][fa1][mask]") {
  REQUIRE_GPU_OR_SKIP();
  // Block skipping shows up per j: a j every Q block masks leaves HBM unchanged (Alg1 SKIP).
  Case c = GENERATE(Case{300, 300, 64, 0, 64, 128, 2, {true}},                   // causal
                    Case{333, 200, 64, 0, 64, 64, 2, {true}},                    // causal, empty rows
                    Case{1000, 1000, 64, 0, 64, 128, 2, {false, 64, 64, 800}},    // window + padding: j = 7 skipped
                    Case{200, 333, 64, 0, 64, 128, 2, {true, -1, -1, -1}, 0.2},  // causal + dropout
                    Case{77, 130, 40, 0, 9, 11, 1, {true, 20, -1, 100}, 0.1});   // plain variant, all of it
  c.M = fit_M(c.br, c.bc, c.d);
  check_against_trace(c);
}

TEST_CASE("GPU Algorithm 1 and standard attention match the PyTorch golden outputs", "[gpu][golden]") {
  REQUIRE_GPU_OR_SKIP();
  struct G {
    const char* name;
    double scale;
  };
  // The non-causal cases of tests/golden/manifest.json.
  const G cases[] = {{"n64_d16", 0.25},
                     {"n100_d32_ragged", 0.17677669529663687},
                     {"cross_nq77_nk130_d40", 0.15811388300841897},
                     {"n96_d32_large_logits", 0.17677669529663687}};
  for (const G& gc : cases) {
    INFO(gc.name);
    ProblemSpec s;
    s.q_path = golden(std::string(gc.name) + ".q.npy");
    s.k_path = golden(std::string(gc.name) + ".k.npy");
    s.v_path = golden(std::string(gc.name) + ".v.npy");
    s.scale = gc.scale;
    s.M = 1024;
    const Problem p = make_problem(s);
    const Mat o = read_npy_matrix(golden(std::string(gc.name) + ".o.npy"));
    const NpyArray lse_a = read_npy(golden(std::string(gc.name) + ".lse.npy"));
    const Mat lse = Eigen::Map<const Mat>(lse_a.data.data(), int64_t(lse_a.data.size()), 1);
    const gpu::Shape sh = shape_of(p);
    for (int64_t bc : {int64_t(0), int64_t(32)}) {  // paper blocks at M = 1024, and Br = Bc = 32
      INFO("Bc override " << bc);
      const Tiling t = bc ? make_tiling(p.nq, p.nk, p.d, fit_M(bc, bc, p.d), bc, bc)
                          : make_tiling(p.nq, p.nk, p.d, p.M);
      const gpu::Result g = gpu::fa1_forward(p.Q.data(), p.K.data(), p.V.data(), sh, p.scale, t);
      REQUIRE(all_finite(g.O));
      REQUIRE(all_finite(g.lse));
      CHECK(rel(to_mat(g.O, p.nq, p.d), o) <= kFloat64Tol);
      CHECK(rel(to_mat(g.lse, p.nq, 1), lse) <= kFloat64Tol);
    }
    const gpu::Result st = gpu::standard_forward(p.Q.data(), p.K.data(), p.V.data(), sh, p.scale);
    REQUIRE(all_finite(st.O));
    REQUIRE(all_finite(st.lse));
    CHECK(rel(to_mat(st.O, p.nq, p.d), o) <= kFloat64Tol);
    CHECK(rel(to_mat(st.lse, p.nq, 1), lse) <= kFloat64Tol);
  }
}
