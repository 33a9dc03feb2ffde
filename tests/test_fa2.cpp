// The FlashAttention-2 schedule (fa2) on the CPU: golden outputs and its HBM traffic.
#include "core/closed_form.h"
#include "core/reference.h"
#include "core/schedules/fa2/fa2.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>

using namespace flashstep;

TEST_CASE("FA2 order matches the golden cases and the reference to 1e-5", "[fa2][golden]") {
  const auto blocks = GENERATE(std::pair<int64_t, int64_t>{0, 0}, std::pair<int64_t, int64_t>{7, 13},
                               std::pair<int64_t, int64_t>{32, 5});
  for (const auto& [name, scale] : {std::pair<std::string, double>{"n100_d32_ragged", 0.17677669529663687},
                                    {"cross_nq77_nk130_d40", 0.15811388300841897},
                                    {"n96_d32_large_logits", 0.17677669529663687}}) {
    CAPTURE(name, blocks.first, blocks.second);
    ProblemSpec s = fstest::golden_spec(name, scale);
    s.schedule = Schedule::fa2;
    s.M = 4096;
    s.br = blocks.first;
    s.bc = blocks.second;
    const Trace t = fstest::run_spec(s, true);
    CHECK(compare(t.O, read_npy_matrix(fstest::golden(name + ".o.npy")).cast<double>()).max_rel < 1e-5);
    const NpyArray lse = read_npy(fstest::golden(name + ".lse.npy"));
    CHECK(compare(t.lse, Eigen::Map<const Vec>(lse.data.data(), int64_t(lse.data.size())).cast<double>()).max_rel < 1e-5);
  }
}

TEST_CASE("FA2 traffic equals its closed form exactly and writes no l or m", "[fa2][traffic]") {
  struct Size { int64_t nq, nk, d, M, br, bc; };
  const Size sizes[] = {{64, 64, 16, 1024, 0, 0}, {100, 100, 32, 1000, 0, 0}, {77, 130, 40, 2048, 0, 0},
                        {130, 77, 8, 100, 0, 0},  {1, 1, 4, 16, 0, 0},        {50, 70, 12, 4096, 7, 9},
                        {1024, 1024, 64, 16384, 0, 0}};
  for (const Size& z : sizes) {
    CAPTURE(z.nq, z.nk, z.d, z.M, z.br, z.bc);
    ProblemSpec s;
    s.nq = z.nq; s.nk = z.nk; s.d = z.d; s.M = z.M; s.br = z.br; s.bc = z.bc;
    s.schedule = Schedule::fa2;
    const Trace t = fstest::run_spec(s, z.nq < 1000);
    const TrafficForm f = fa2_traffic(z.nq, z.nk, z.d, t.tiling.Tr);
    CHECK(t.totals.hbm_read_bytes == 4 * f.read_elems);
    CHECK(t.totals.hbm_write_bytes == 4 * f.write_elems);
    CHECK(t.totals.traffic.written[int(Tensor::l)] == 0);
    CHECK(t.totals.traffic.written[int(Tensor::m)] == 0);
    CHECK(t.totals.traffic.read[int(Tensor::O)] == 0);
    const Reference ref = reference_attention(t.problem.Q, t.problem.K, t.problem.V, t.problem.scale);
    CHECK(compare(t.O, ref.O).max_rel < 1e-5);
  }
}
