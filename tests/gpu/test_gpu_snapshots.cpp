// GPU snapshots [gpu]: FlashAttention-2's snapshot kernel (variant 1 with the on-chip
// O_i^(j), l_i^(j), m_i^(j) dumped after every inner step j) against the CPU engine's snapshots
// (core/snapshot.h) after every j, on ragged shapes (Nq != Nk), masks, dropout and 16-bit
// storage; the dump does not change the result; fa1's per-j launches give the same state as
// the CPU's snapshots too, and the backward's per-j launches (fa1, fa2) the CPU's dQ after every
// j. Fresh random inputs per run (the seed is printed on failure).
#include "core/backward.h"
#include "core/snapshot.h"
#include "core/tolerance.h"
#include "gpu/backward.h"
#include "gpu_test_helpers.h"

#include <catch2/catch.hpp>

using namespace flashstep;
using namespace gputest;

namespace {

struct SnapCase {
  int64_t nq, nk, d, br, bc;
  Mask mask;
  double dropout;
  Dtype dtype;
};

Problem problem_of(Schedule sched, const SnapCase& c, uint64_t seed) {
  ProblemSpec s;
  s.nq = c.nq;
  s.nk = c.nk;
  s.d = c.d;
  s.br = c.br;
  s.bc = c.bc;
  s.M = fit_M(c.br, c.bc, c.d);
  s.schedule = sched;
  s.seed = seed;
  s.options.mask = c.mask;
  s.options.dropout = c.dropout;
  s.options.dtype = c.dtype;
  return make_problem(s);
}

// Per j and at the end, O, l, m of the GPU against the CPU engine's snapshots.
void check_snapshots(Schedule sched, const SnapCase& c) {
  const uint64_t seed = fresh_seed();
  INFO(schedule_name(sched) << " Nq " << c.nq << " Nk " << c.nk << " d " << c.d << " Br " << c.br << " Bc " << c.bc
                            << " mask " << c.mask.describe() << " dropout " << c.dropout << " dtype "
                            << dtype_name(c.dtype) << " seed " << seed);
  const Problem p = problem_of(sched, c, seed);
  const Tiling t = make_tiling(p);
  const SnapshotSet cpu = cpu_snapshots(cpu_run(p, t, true));
  const gpu::Features f = gpu::features_of(p.options(), p.seed);
  gpu::Result g;
  if (sched == Schedule::fa2) {
    gpu::Fa2Options o;
    o.snapshots = true;
    o.features = f;
    g = gpu::fa2_forward(p.Q.data(), p.K.data(), p.V.data(), shape_of(p), p.scale, t, o);
    CHECK(g.variant == 1);
  } else {
    gpu::Fa1Options o;
    o.snapshots = true;
    o.features = f;
    g = gpu::fa1_forward(p.Q.data(), p.K.data(), p.V.data(), shape_of(p), p.scale, t, o);
  }
  REQUIRE(int64_t(g.snapshots.size()) == t.Tc);
  REQUIRE(cpu.snapshots.size() == size_t(t.Tc));
  // fa2's O_i^(j) is float32 on chip; fa1's O is stored in HBM (core/tolerance.h).
  const double o_tol = sched == Schedule::fa2 ? kTiledTol : tiled_o_tol(sched, p.dtype);
  for (int64_t j = 0; j < t.Tc; ++j) {
    INFO("after j = " << j);
    const gpu::ForwardSnapshot& sn = g.snapshots[size_t(j)];
    const SnapshotEntry& cs = cpu.snapshots[size_t(j)];
    REQUIRE(sn.j == j);
    REQUIRE(no_nan(sn.O));
    REQUIRE(no_nan(sn.l));
    REQUIRE(no_nan(sn.m));
    CHECK(rel(to_mat(sn.O, p.nq, p.d), *cs.find("O")) <= o_tol);
    CHECK(rel(to_mat(sn.l, p.nq, 1), *cs.find("l")) <= kTiledTol);
    CHECK(rel(to_mat(sn.m, p.nq, 1), *cs.find("m")) <= kTiledTol);  // -inf rows must match exactly
  }
  REQUIRE(no_nan(g.O));
  CHECK(rel(to_mat(g.O, p.nq, p.d), *cpu.final_state.find("O")) <= tiled_o_tol(sched, p.dtype));
  CHECK(rel(to_mat(g.lse, p.nq, 1), *cpu.final_state.find("lse")) <= kTiledTol);
  if (sched == Schedule::fa2) {  // the dump leaves the result alone: variant 1 without it, bit for bit
    gpu::Fa2Options o;
    o.variant = 1;
    o.features = f;
    const gpu::Result plain = gpu::fa2_forward(p.Q.data(), p.K.data(), p.V.data(), shape_of(p), p.scale, t, o);
    CHECK(plain.O == g.O);
    CHECK(plain.lse == g.lse);
  }
}

Mask causal() {
  Mask m;
  m.causal = true;
  return m;
}
Mask window(int64_t left, int64_t right, int64_t kv_len = -1) {
  Mask m;
  m.window_left = left;
  m.window_right = right;
  m.kv_len = kv_len;
  return m;
}

}  // namespace

TEST_CASE("fa2 and fa1 snapshots on the GPU match the CPU engine's after every j", "[gpu][snapshot]") {
  REQUIRE_GPU_OR_SKIP();
  const Schedule sched = GENERATE(Schedule::fa2, Schedule::fa1);
  const SnapCase cases[] = {
      {77, 130, 40, 16, 24, {}, 0, Dtype::fp32},                   // ragged, Nq < Nk
      {130, 77, 32, 24, 16, causal(), 0, Dtype::fp32},             // rows that see no key
      {100, 163, 64, 32, 32, window(40, 8, 150), 0.2, Dtype::fp32},  // window, key padding, dropout
      {97, 200, 64, 32, 48, causal(), 0.1, Dtype::fp16},           // fp16 storage
      {200, 97, 128, 16, 16, window(-1, 0, 90), 0, Dtype::bf16},   // bf16 storage, d = 128
  };
  for (const SnapCase& c : cases) check_snapshots(sched, c);
}

TEST_CASE("fa2 snapshots need variant 1's snapshot kernel", "[gpu][snapshot]") {
  REQUIRE_GPU_OR_SKIP();
  ProblemSpec s;
  s.nq = s.nk = 256;
  s.d = 64;
  s.M = 128 * 256;  // 128 KiB: Br = 64, Bc = 128 (a compiled variant 2)
  s.schedule = Schedule::fa2;
  s.seed = fresh_seed();
  INFO("seed " << s.seed);
  const Problem p = make_problem(s);
  const Tiling t = make_tiling(p);
  gpu::Fa2Options o;
  o.variant = 2;
  o.snapshots = true;
  CHECK_THROWS_WITH(gpu::fa2_forward(p.Q.data(), p.K.data(), p.V.data(), shape_of(p), p.scale, t, o),
                    Catch::Contains("variant 1's snapshot kernel"));
}

TEST_CASE("fa1 and fa2 backward on the GPU give the CPU engine's dQ after every j", "[gpu][snapshot][backward]") {
  REQUIRE_GPU_OR_SKIP();
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2);
  const SnapCase cases[] = {
      {77, 130, 40, 16, 24, causal(), 0, Dtype::fp32},
      {130, 77, 32, 24, 16, window(20, 5, 60), 0.1, Dtype::fp32},  // rows that see no key, dropout
      {100, 163, 64, 32, 32, {}, 0, Dtype::fp32},
  };
  for (const SnapCase& c : cases) {
    const uint64_t seed = fresh_seed();
    INFO(schedule_name(sched) << " Nq " << c.nq << " Nk " << c.nk << " d " << c.d << " mask " << c.mask.describe()
                              << " dropout " << c.dropout << " seed " << seed);
    const Problem p = problem_of(sched, c, seed);
    const Tiling t = make_tiling(p);
    const Mat dO = make_grad_output(p, "random");
    RunOptions opt;
    opt.dO = &dO;
    const SnapshotSet cpu = cpu_snapshots(run_problem(p, t, opt), &dO);
    gpu::BackwardOptions o;
    o.snapshots = true;
    o.features = gpu::features_of(p.options(), p.seed);
    const gpu::BackwardResult g =
        sched == Schedule::fa1 ? gpu::fa1_backward(p.Q.data(), p.K.data(), p.V.data(), dO.data(), shape_of(p), p.scale, t, o)
                               : gpu::fa2_backward(p.Q.data(), p.K.data(), p.V.data(), dO.data(), shape_of(p), p.scale, t, o);
    const std::vector<const SnapshotEntry*> cs = cpu.phase(SnapshotPhase::backward);
    REQUIRE(int64_t(g.snapshots.size()) == t.Tc);
    REQUIRE(int64_t(cs.size()) == t.Tc);
    // verify --backward's rule: relative to the final dQ's size, at least a thousandth of a term.
    const Mat& final_dq = *cpu.final_state.find("dQ");
    const double scale = std::max(double(final_dq.cwiseAbs().maxCoeff()), cpu.dq_scale_floor);
    for (int64_t j = 0; j < t.Tc; ++j) {
      INFO("after j = " << j);
      REQUIRE(g.snapshots[size_t(j)].j == j);
      REQUIRE(all_finite(g.snapshots[size_t(j)].dQ));
      const Mat dq = to_mat(g.snapshots[size_t(j)].dQ, p.nq, p.d);
      CHECK(compare(dq, cs[size_t(j)]->find("dQ")->cast<double>().eval()).max_abs / scale <= kGradTiledTol);
    }
    REQUIRE(all_finite(g.dQ));
    CHECK(compare(to_mat(g.dQ, p.nq, p.d), final_dq.cast<double>().eval()).max_abs / scale <= kGradTiledTol);
  }
}
