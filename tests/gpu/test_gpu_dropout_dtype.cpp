// GPU backend [gpu]: dropout from the shared Philox generator (keep masks bit for
// bit, O to 1e-6) and fp16 / bf16 storage against the CPU engine in the same storage type.
//
// Fresh random inputs per test (the seed is printed on failure); the backend poisons every
// device output with NaN before a run. Without a GPU each test prints "SKIPPED: <reason>" and
// ctest reports it as skipped.
#include "core/philox.h"
#include "gpu_test_helpers.h"

#include <catch2/catch.hpp>

using namespace flashstep;
using namespace gputest;

namespace {

constexpr double kDropoutTol = 1e-6;  // O with dropout, CPU vs GPU

// One unit in the last place of x in a 16-bit storage type (fp16 subnormals below 2^-14).
double ulp_of(Dtype t, double x) {
  int e = 0;
  std::frexp(std::abs(x), &e);  // |x| in [2^(e-1), 2^e)
  if (t == Dtype::fp16) return std::ldexp(1.0, std::max(e - 1, -14) - 10);
  return std::ldexp(1.0, e - 1 - 7);
}

}  // namespace

TEST_CASE("GPU dropout keep mask equals the CPU mask bit for bit", "[gpu][dropout]") {
  REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  const float p = GENERATE(0.1f, 0.5f, 0.9f);
  INFO("seed " << seed << " p " << p);
  // A tile of the Philox counter space, several (batch, head), against core/philox.h on the CPU.
  for (const auto& [batch, head, row0, col0] : {std::tuple<int, int, int, int>{0, 0, 0, 0}, {0, 0, 100, 4000},
                                                {2, 5, 17, 3}, {7, 1, 1 << 20, 12345}}) {
    const int rows = 67, cols = 131;
    const std::vector<uint8_t> g = gpu::gpu_dropout_mask(rows, cols, row0, col0, batch, head, seed, p);
    int64_t mismatches = 0, kept = 0;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const bool cpu = dropout_keep(seed, uint32_t(batch), uint32_t(head), uint32_t(row0 + r), uint32_t(col0 + c), p);
        mismatches += (g[size_t(r * cols + c)] != 0) != cpu;
        kept += cpu;
      }
    CHECK(mismatches == 0);
    CHECK(std::abs(double(kept) / (rows * cols) - (1.0 - p)) < 0.05);
  }
  // The keep masks the CPU fa2 trace recorded at every FA2fwd L10 step, against the GPU kernel's.
  ProblemSpec s;
  s.nq = 100;
  s.nk = 90;
  s.d = 16;
  s.M = 4096;
  s.seed = seed;
  s.options.dropout = p;
  s.schedule = Schedule::fa2;
  const Problem pr = make_problem(s);
  const Tiling t = make_tiling(pr.nq, pr.nk, pr.d, pr.M);
  const Trace tr = cpu_run(pr, t, true);
  int64_t tiles = 0, mismatches = 0;
  for (const Step& st : tr.steps) {
    if (st.line != Line::FA2F_L10 || st.dropout_keep.size() == 0) continue;
    const int rows = int(st.dropout_keep.rows()), cols = int(st.dropout_keep.cols());
    const std::vector<uint8_t> g =
        gpu::gpu_dropout_mask(rows, cols, int(st.i * t.Br), int(st.j * t.Bc), 0, 0, pr.seed, p);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) mismatches += (g[size_t(r * cols + c)] != 0) != (st.dropout_keep(r, c) != 0.0f);
    ++tiles;
  }
  CHECK(tiles == t.Tr * t.Tc);
  CHECK(mismatches == 0);
}

TEST_CASE("GPU dropout output equals the CPU to 1e-6 and follows the seed", "[gpu][dropout]") {
  REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  struct C { Schedule sched; int64_t br, bc; int variant; };
  for (const C& c : {C{Schedule::fa1, 64, 128, 2}, C{Schedule::fa1, 9, 11, 1}, C{Schedule::fa2, 64, 128, 2},
                     C{Schedule::fa2, 9, 11, 1}, C{Schedule::standard, 64, 64, 0}}) {
    INFO(schedule_name(c.sched) << " variant " << c.variant);
    ProblemSpec s;
    s.nq = 150;
    s.nk = 230;
    s.d = 64;
    s.seed = seed;
    s.options.dropout = 0.2;
    s.options.mask.causal = true;
    s.schedule = c.sched;
    check_schedule(s, c.br, c.bc, c.variant, kDropoutTol);
    // Same seed: the same result, bit for bit. Another seed: another result.
    s.M = fit_M(c.br, c.bc, s.d);
    const Problem p = make_problem(s);
    const Tiling t = make_tiling(p.nq, p.nk, p.d, p.M, c.br, c.bc);
    const gpu::Result a = gpu_run(p, t, c.variant), b = gpu_run(p, t, c.variant);
    CHECK(a.O == b.O);
    Problem p2 = p;
    p2.seed = seed + 1;
    const gpu::Result other = gpu_run(p2, t, c.variant);
    CHECK(rel(to_mat(other.O, p.nq, p.d), to_mat(a.O, p.nq, p.d)) > 1e-3);
    CHECK(other.lse == a.lse);  // lse does not see dropout
  }
}

TEST_CASE("GPU fa1 and fa2 with fp16 and bf16 storage equal the CPU engine to an ulp", "[gpu][dtype]") {
  REQUIRE_GPU_OR_SKIP();
  const Schedule sched = GENERATE(Schedule::fa2, Schedule::fa1);
  const Dtype dt = GENERATE(Dtype::fp16, Dtype::bf16);
  const int variant = GENERATE(1, 2);
  const uint64_t seed = fresh_seed();
  INFO(schedule_name(sched) << " " << dtype_name(dt) << " variant " << variant << " seed " << seed);
  // fa2 rounds O once: one ulp of the element. fa1 rounds O at every j it touches, at the
  // magnitude O has then (a convex combination of V rows, so at most max|V|); the update
  // scales an earlier disagreement by l_i alpha / l_i^new <= 1 and each rounding may add an
  // ulp, so an element can differ by up to Tc ulps of max|V|, however small it ends up (seen
  // on the H200: a few elements of 12800 past 3 ulps of their own final value).
  // Normwise (rel: relative to max(1, max|O|)) both stay within a couple of ulps.
  const int ulps = sched == Schedule::fa2 ? 1 : 2;
  const double ulp = dt == Dtype::fp16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
  for (const MaskCase& m : {MaskCase{200, 333, {false, -1, -1, -1}}, MaskCase{257, 300, {true, -1, -1, -1}}}) {
    ProblemSpec s = spec_of(m, 64, seed);
    s.schedule = sched;
    s.options.dtype = dt;
    s.M = fit_M(64, 128, 64);
    const Problem p = make_problem(s);
    const Tiling t = variant == 2 ? make_tiling(p.nq, p.nk, p.d, p.M, 64, 128)
                                  : make_tiling(p.nq, p.nk, p.d, fit_M(16, 32, 64), 16, 32);
    const Trace tr = cpu_run(p, t);
    const gpu::Result g = gpu_run(p, t, variant);
    REQUIRE(no_nan(g.O));
    const double vmax = p.V.unaryExpr([dt](float v) { return round_to(dt, v); }).cwiseAbs().maxCoeff();
    // Per element: the float32 values before rounding differ by at most the tiled tolerance
    // (normwise, so relative to max |O|: an element with cancellation can differ by more than
    // its own ulp); rounding adds at most one ulp of the element.
    const double omax = tr.O.cwiseAbs().maxCoeff();
    int64_t beyond_ulp = 0, identical = 0, not_stored = 0;
    for (int64_t k = 0; k < p.nq * p.d; ++k) {
      const float a = g.O[size_t(k)], b = tr.O.data()[k];
      not_stored += round_to(dt, a) != a;  // O must have been stored in the storage type
      identical += a == b;
      const double big = std::max(std::abs(double(a)), std::abs(double(b)));
      const double bound = sched == Schedule::fa2 ? ulp_of(dt, big) : double(t.Tc) * ulp_of(dt, vmax);
      beyond_ulp += std::abs(double(a) - double(b)) > bound + kTiledTol * omax;
    }
    CHECK(not_stored == 0);
    CHECK(beyond_ulp == 0);
    CHECK(rel(to_mat(g.O, p.nq, p.d), tr.O) <= ulps * ulp);
    CHECK(lse_rel(g.lse, tr.lse) <= kTiledTol);
    const Reference ref = reference_attention(p.Q, p.K, p.V, p.scale, p.mask);
    const double err = floored_rel(to_mat(g.O, p.nq, p.d), ref.O);
    WARN(schedule_name(sched) << " " << dtype_name(dt) << " variant " << variant << " causal " << m.mask.causal << ": O bit-identical to the CPU "
                        << identical << " of " << p.nq * p.d << "; GPU vs float64 floored_rel " << err);
    CHECK(err <= 8 * ulp);  // rounding Q, K, V and O: a few ulp of the storage type
  }
}
