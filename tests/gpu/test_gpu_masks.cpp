// GPU backend [gpu]: Algorithm 2's masks (causal, sliding window, key padding, one
// length per batch entry) with block skipping, in fa1, fa2 and standard attention.
//
// Fresh random inputs per test (the seed is printed on failure); the backend poisons every
// device output with NaN before a run. Without a GPU each test prints "SKIPPED: <reason>" and
// ctest reports it as skipped, except the mask-rule test, which needs
// no GPU.
#include "core/npy.h"
#include "gpu/device_mask.h"
#include "gpu_test_helpers.h"

#include <catch2/catch.hpp>

using namespace flashstep;
using namespace gputest;

TEST_CASE("KeyMask of a batch entry classifies as core Mask with that key length", "[gpu][mask]") {
  // No GPU needed: KeyMask (gpu/device_mask.h) is core/mask.h's Mask plus per-batch key
  // lengths; the mask of entry b must be exactly the core Mask with kv_len = kv_lens[b].
  const MaskCase cases[] = {{64, 64, {true, -1, -1, -1}},  {77, 130, {true, -1, -1, -1}}, {130, 77, {true, -1, -1, -1}},
                            {100, 100, {false, 10, 5, -1}}, {90, 120, {false, 0, 0, -1}},  {50, 70, {false, -1, -1, 33}},
                            {60, 60, {true, 7, -1, 40}},    {40, 90, {false, 3, -1, 0}},   {33, 33, {false, -1, 4, -1}},
                            {1, 1, {true, -1, -1, -1}},     {200, 50, {true, 20, 3, 45}}};
  int64_t blocks = 0;
  for (const MaskCase& c : cases) {
    Mask m = c.mask;
    m.offset = c.nk - c.nq;
    gpu::KeyMask batched;
    static_cast<Mask&>(batched) = m;
    batched.kv_len = -1;
    const int64_t lens[2] = {c.nk, c.mask.kv_len};  // entry 1 carries the case's key length
    batched.kv_lens = lens;
    CHECK(batched.any());
    const gpu::KeyMask k = batched.for_batch(1);
    CHECK(k.kv_lens == nullptr);
    CHECK(k.any() == m.any());
    for (int64_t br : {1, 7, 16, 64})
      for (int64_t bc : {1, 5, 16, 128})
        for (int64_t r0 = 0; r0 < c.nq; r0 += br)
          for (int64_t c0 = 0; c0 < c.nk; c0 += bc) {
            const int64_t r1 = std::min(c.nq, r0 + br), c1 = std::min(c.nk, c0 + bc);
            CAPTURE(c.nq, c.nk, m.describe(), r0, r1, c0, c1);
            REQUIRE(int(k.classify(r0, r1, c0, c1, c.nk)) == int(m.classify(r0, r1, c0, c1, c.nk)));
            ++blocks;
          }
    for (int64_t r = 0; r < c.nq; ++r) {
      REQUIRE(k.lo(r) == m.lo(r));
      REQUIRE(k.hi(r, c.nk) == m.hi(r, c.nk));
    }
  }
  CHECK(blocks > 10000);
}

TEST_CASE("GPU causal golden case matches PyTorch for fa1 fa2 and standard", "[gpu][mask][golden]") {
  REQUIRE_GPU_OR_SKIP();
  ProblemSpec s;
  s.q_path = golden("n128_d64_causal.q.npy");
  s.k_path = golden("n128_d64_causal.k.npy");
  s.v_path = golden("n128_d64_causal.v.npy");
  s.scale = 0.125;
  s.options.mask.causal = true;
  s.M = 32768;
  const Mat o = read_npy_matrix(golden("n128_d64_causal.o.npy"));
  const NpyArray lse_a = read_npy(golden("n128_d64_causal.lse.npy"));
  const Vec lse = Eigen::Map<const Vec>(lse_a.data.data(), int64_t(lse_a.data.size()));
  struct C { Schedule sched; int64_t br, bc; int variant; };
  for (const C& c : {C{Schedule::fa1, 64, 128, 2}, C{Schedule::fa1, 64, 64, 2}, C{Schedule::fa1, 16, 16, 1},
                     C{Schedule::fa2, 64, 128, 2}, C{Schedule::fa2, 128, 64, 2}, C{Schedule::fa2, 64, 64, 2},
                     C{Schedule::fa2, 13, 7, 1}, C{Schedule::standard, 0, 0, 0}}) {
    INFO(schedule_name(c.sched) << " Br " << c.br << " Bc " << c.bc << " variant " << c.variant);
    s.schedule = c.sched;
    const Problem p = make_problem(s);
    const Tiling t = c.br ? make_tiling(p.nq, p.nk, p.d, fit_M(c.br, c.bc, p.d), c.br, c.bc)
                          : make_tiling(p.nq, p.nk, p.d, p.M);
    const gpu::Result g = gpu_run(p, t, c.variant);
    REQUIRE(no_nan(g.O));
    CHECK(rel(to_mat(g.O, p.nq, p.d), o) <= kFloat64Tol);
    CHECK(lse_rel(g.lse, lse) <= kFloat64Tol);
  }
}

TEST_CASE("GPU masks equal the CPU engine for every schedule", "[gpu][mask]") {
  REQUIRE_GPU_OR_SKIP();
  const MaskCase m = GENERATE(MaskCase{200, 333, {true, -1, -1, -1}},   // causal, Nq < Nk
                              MaskCase{333, 200, {true, -1, -1, -1}},   // causal, Nq > Nk: empty rows
                              MaskCase{300, 300, {false, 40, 10, -1}},  // sliding window
                              MaskCase{257, 300, {true, 64, -1, -1}},   // causal + left window
                              MaskCase{150, 260, {false, -1, -1, 77}},  // key padding
                              MaskCase{129, 129, {false, 0, 0, -1}},    // only the diagonal
                              MaskCase{100, 300, {true, 30, -1, 150}}); // all three
  const uint64_t seed = fresh_seed();
  INFO("Nq " << m.nq << " Nk " << m.nk << " causal " << m.mask.causal << " window " << m.mask.window_left << "," << m.mask.window_right
             << " kv_len " << m.mask.kv_len << " seed " << seed);
  struct C { Schedule sched; int64_t br, bc; int variant; int64_t d; };
  for (const C& c : {C{Schedule::fa1, 64, 64, 2, 64}, C{Schedule::fa1, 64, 128, 2, 64}, C{Schedule::fa1, 9, 11, 1, 40},
                     C{Schedule::fa2, 64, 128, 2, 64}, C{Schedule::fa2, 128, 64, 2, 64}, C{Schedule::fa2, 64, 64, 2, 128},
                     C{Schedule::fa2, 9, 11, 1, 40}, C{Schedule::standard, 64, 64, 0, 64}}) {
    INFO(schedule_name(c.sched) << " Br " << c.br << " Bc " << c.bc << " variant " << c.variant << " d " << c.d);
    ProblemSpec s = spec_of(m, c.d, seed);
    s.schedule = c.sched;
    check_schedule(s, c.br, c.bc, c.variant);
  }
}

TEST_CASE("GPU fully masked rows give O = 0 and lse = -inf and never NaN", "[gpu][mask]") {
  REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  // Causal with Nq > Nk: the first Nq - Nk rows keep no key. kv_len = 0: no row keeps any.
  for (const MaskCase& m : {MaskCase{200, 70, {true, -1, -1, -1}}, MaskCase{90, 90, {false, -1, -1, 0}},
                            MaskCase{100, 100, {false, 0, 0, 50}}}) {
    for (Schedule sched : {Schedule::fa1, Schedule::fa2, Schedule::standard}) {
      for (int variant : {1, 2}) {
        INFO(schedule_name(sched) << " variant " << variant << " Nq " << m.nq << " Nk " << m.nk << " kv " << m.mask.kv_len);
        ProblemSpec s = spec_of(m, 64, seed);
        s.schedule = sched;
        const Problem p = make_problem(s);
        const Tiling t = make_tiling(p.nq, p.nk, p.d, fit_M(64, 64, 64), 64, 64);
        const gpu::Result g = gpu_run(p, t, sched == Schedule::standard ? 0 : variant);
        REQUIRE(no_nan(g.O));
        REQUIRE(no_nan(g.lse));
        int64_t empty_rows = 0;
        for (int64_t r = 0; r < p.nq; ++r) {
          if (p.mask.lo(r) <= p.mask.hi(r, p.nk)) continue;
          ++empty_rows;
          CHECK(g.lse[size_t(r)] == -INFINITY);
          for (int64_t c = 0; c < p.d; ++c) CHECK(g.O[size_t(r * p.d + c)] == 0.0f);
        }
        CHECK(empty_rows > 0);
        const Trace tr = cpu_run(p, t);
        CHECK(rel(to_mat(g.O, p.nq, p.d), tr.O) <= kTiledTol);
        CHECK(lse_rel(g.lse, tr.lse) <= kTiledTol);
      }
    }
  }
}

TEST_CASE("GPU key padding with a valid length per batch entry", "[gpu][mask][batch]") {
  REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const gpu::Shape sh{3, 2, 70, 150, 64};  // B, H, Nq, Nk, d
  const std::vector<int64_t> lens = {5, 0, 150};
  const int64_t h = sh.heads();
  const RandomQKV in(sh, seed);
  const std::vector<float>&Q = in.Q, &K = in.K, &V = in.V;
  const float scale = 0.125f;
  gpu::Features f;
  f.mask.causal = true;  // with causal (bottom-right): padding and causal together
  f.kv_lens = lens;
  for (Schedule sched : {Schedule::fa1, Schedule::fa2, Schedule::standard}) {
    INFO(schedule_name(sched));
    const Tiling t = make_tiling(sh.nq, sh.nk, sh.d, fit_M(64, 64, 64), 64, 64);
    gpu::Result g;
    if (sched == Schedule::fa1) {
      gpu::Fa1Options o;
      o.features = f;
      g = gpu::fa1_forward(Q.data(), K.data(), V.data(), sh, scale, t, o);
    } else if (sched == Schedule::fa2) {
      gpu::Fa2Options o;
      o.features = f;
      g = gpu::fa2_forward(Q.data(), K.data(), V.data(), sh, scale, t, o);
    } else {
      g = gpu::standard_forward(Q.data(), K.data(), V.data(), sh, scale, f);
    }
    REQUIRE(no_nan(g.O));
    REQUIRE(no_nan(g.lse));
    for (int64_t head = 0; head < h; ++head) {
      const int64_t b = head / sh.H;
      INFO("head " << head << " batch " << b << " kv_len " << lens[size_t(b)]);
      ProblemSpec s;
      s.nq = sh.nq;
      s.nk = sh.nk;
      s.d = sh.d;
      s.options.mask.causal = true;
      s.options.mask.kv_len = lens[size_t(b)];
      s.schedule = sched;
      Problem p = make_problem(s);
      p.scale = scale;
      p.Q = to_mat(Q, sh.nq, sh.d, head * sh.nq * sh.d);
      p.K = to_mat(K, sh.nk, sh.d, head * sh.nk * sh.d);
      p.V = to_mat(V, sh.nk, sh.d, head * sh.nk * sh.d);
      const Trace tr = cpu_run(p, t);
      CHECK(rel(to_mat(g.O, sh.nq, sh.d, head * sh.nq * sh.d), tr.O) <= kTiledTol);
      CHECK(lse_rel(g.lse, tr.lse, head * sh.nq) <= kTiledTol);
      if (lens[size_t(b)] == 0)
        for (int64_t r = 0; r < sh.nq; ++r) CHECK(g.lse[size_t(head * sh.nq + r)] == -INFINITY);
    }
  }
}
