// verify's checks (core/verify.h) without a GPU: another engine's outputs stand in for the
// GPU's. An engine equal to the CPU engine passes with zero difference; one element moved past
// the tolerance fails the check that sees it and names nothing else; a 16-bit problem's float64
// lines are reported, not judged.
#include "core/verify.h"
#include "core/run.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>

using namespace flashstep;

namespace {

ProblemSpec small_spec(Schedule s, int64_t nq, int64_t nk, int64_t splits) {
  ProblemSpec p;
  p.nq = nq;
  p.nk = nk;
  p.d = 16;
  p.M = 1024;
  p.br = 8;
  p.bc = 16;
  p.seed = 11;
  p.schedule = s;
  p.splits = splits;
  return p;
}

std::vector<float> copy_of(const Mat& m) { return {m.data(), m.data() + m.size()}; }
std::vector<float> copy_of(const Vec& v) { return {v.data(), v.data() + v.size()}; }

}  // namespace

TEST_CASE("verify's final and float64 checks pass an equal engine and fail a moved element", "[verify]") {
  const Trace cpu = fstest::run_spec(small_spec(Schedule::fa2, 37, 53, 0), false);
  std::vector<float> O = copy_of(cpu.O), lse = copy_of(cpu.lse);
  const EngineOutput same{"GPU", O.data(), lse.data()};
  const ForwardCheck f = final_check("GPU vs CPU:", cpu, same, kTiledTol, kTiledTol);
  CHECK(f.err.O.max_abs == 0);
  CHECK(f.err.lse.max_abs == 0);
  CHECK(f.pass());
  CHECK(identical_elements(cpu, O.data()) == cpu.O.size());
  const Float64Checks ok = float64_checks(cpu, "CPU", 1, {same});
  REQUIRE(ok.measured);
  REQUIRE(ok.checks.size() == 2);
  CHECK(ok.checks[0].name == "GPU vs float64:");
  CHECK(ok.checks[1].name == "CPU vs float64:");
  CHECK(ok.checks[0].err.O.max_rel == ok.checks[1].err.O.max_rel);  // the same outputs
  CHECK(ok.pass());

  // One element of O moved by 1e-4 of max|O|: over both tolerances (5e-6, 1e-5).
  const float max_o = cpu.O.cwiseAbs().maxCoeff();
  O[size_t(5 * 16 + 3)] += 1e-4f * max_o;
  const EngineOutput moved{"GPU", O.data(), lse.data()};
  const ForwardCheck g = final_check("GPU vs CPU:", cpu, moved, kTiledTol, kTiledTol);
  CHECK_THAT(g.err.O.max_rel, Catch::Matchers::WithinRel(1e-4, 1e-3));
  CHECK(g.err.lse.max_abs == 0);
  CHECK_FALSE(g.pass());
  CHECK(identical_elements(cpu, O.data()) == cpu.O.size() - 1);
  const Float64Checks bad = float64_checks(cpu, "CPU", 1, {moved});
  CHECK_FALSE(bad.checks[0].pass());
  CHECK(bad.checks[1].pass());  // the CPU engine's own line is untouched
  CHECK_FALSE(bad.pass());
}

TEST_CASE("verify's float64 lines are reported, not judged, for 16-bit storage", "[verify]") {
  ProblemSpec s = small_spec(Schedule::fa2, 20, 40, 0);
  s.options.dtype = Dtype::bf16;
  const Trace cpu = fstest::run_spec(s, false);
  std::vector<float> O = copy_of(cpu.O), lse = copy_of(cpu.lse);
  O[0] += 0.5f;  // far over 1e-5: still not judged for bf16
  const Float64Checks c = float64_checks(cpu, "CPU", 1, {{"GPU", O.data(), lse.data()},
                                                          {"GPU standard (float32)", O.data(), lse.data(), true}});
  REQUIRE(c.checks.size() == 3);
  CHECK_FALSE(c.checks[0].judged);
  CHECK(c.checks[0].pass());
  CHECK(c.checks[2].judged);  // a float32 engine is judged whatever the problem's type
  CHECK_FALSE(c.checks[2].pass());
}

TEST_CASE("verify's decode partials: every split checked, a moved partial fails its split alone", "[verify][decode]") {
  const Trace cpu = fstest::run_spec(small_spec(Schedule::decode, 3, 150, 4), true);
  REQUIRE(cpu.tiling.S == 4);
  Cursor c(cpu);
  c.run_to_end();
  std::vector<float> O_part = copy_of(c.hbm(Tensor::Op));
  std::vector<float> lse_part = copy_of(c.hbm(Tensor::Lp));
  REQUIRE(O_part.size() == size_t(4 * 3 * 16));
  std::vector<SplitCheck> k = decode_split_checks(cpu, O_part.data(), lse_part.data(), kTiledTol);
  REQUIRE(k.size() == 4);
  CHECK(k.front().first_key == 0);
  CHECK(k.back().last_key == 149);
  for (size_t s = 1; s < k.size(); ++s) CHECK(k[s].first_key == k[s - 1].last_key + 1);
  for (const SplitCheck& x : k) CHECK(x.pass);
  O_part[size_t(2 * 3 * 16 + 7)] += 1.0f;  // split 2 (0-based)
  k = decode_split_checks(cpu, O_part.data(), lse_part.data(), kTiledTol);
  CHECK(k[0].pass);
  CHECK(k[1].pass);
  CHECK_FALSE(k[2].pass);
  CHECK(k[3].pass);
}
